"""Where games come from: the KGS listing, downloads, and reading SGF out of files, folders and archives."""
