"""Training and evaluation of networks on gotk shards."""
