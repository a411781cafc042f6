"""The AlphaGo Zero loop (``gotk zero``): self-play, training on a window of generations, evaluation, repeat."""
