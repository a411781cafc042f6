"""Reading gotk shards: decoding features, streaming loaders."""
