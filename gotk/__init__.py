"""gotk: a Go dataset toolkit — SGF records, a compiled rules engine, encoders, shards, training, agents."""

__version__ = "0.1.0"
