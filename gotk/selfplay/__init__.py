"""Self-play: games of an agent against itself with search, written as SGF and as training shards with the
search's targets (the AlphaGo Zero loop's data; :mod:`gotk.zero` runs the loop)."""

#: the input planes of a new self-play network, in ``gotk selfplay --init random`` and ``gotk zero`` alike: own /
#: opponent stones, so that every target is from the player to move's view
DEFAULT_ENCODER = "relative"

__all__ = ["DEFAULT_ENCODER"]
