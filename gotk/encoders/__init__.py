"""Board encoders: registries of named plane functions over the engine's arrays.

``get_encoder(name, board_size=19, **options)`` gives an :class:`Encoder`; ``list_encoders()`` names
those available (``oneplane``, ``sevenplane``, ``simple``, ``alphago``, ``leelazero``).
"""

from gotk.encoders.base import EncodedGame, Encoder
from gotk.encoders.registry import get_encoder, list_encoders, register_encoder

__all__ = ["EncodedGame", "Encoder", "get_encoder", "list_encoders", "register_encoder"]
