"""Self-play: games of an agent against itself with search, written as SGF and as training shards with the
search's targets (the AlphaGo Zero loop's data; :mod:`gotk.zero` runs the loop)."""
