"""Encoder registry: names → encoder classes, imported lazily so optional encoders may be absent."""

from __future__ import annotations

import importlib

from gotk.encoders.base import Encoder

# name -> "module:Class"; modules are imported on first use
_BUILTIN: dict[str, str] = {
    "oneplane": "gotk.encoders.oneplane:OnePlaneEncoder",
    "sevenplane": "gotk.encoders.sevenplane:SevenPlaneEncoder",
    "simple": "gotk.encoders.simple:SimpleEncoder",
    "relative": "gotk.encoders.relative:RelativeEncoder",
    "alphago": "gotk.encoders.alphago:AlphaGoEncoder",
    "leelazero": "gotk.encoders.leelazero:LeelaZeroEncoder",
}
_REGISTERED: dict[str, type[Encoder]] = {}


def register_encoder(name: str, cls: type[Encoder]) -> None:
    """Make ``cls`` available as ``get_encoder(name)`` (overrides a built-in of that name)."""
    if not (isinstance(cls, type) and issubclass(cls, Encoder)):
        raise TypeError(f"{cls!r} is not an Encoder subclass")
    _REGISTERED[name] = cls


def _load(name: str) -> type[Encoder] | None:
    """The class registered as ``name``; None when its module is not there (an optional encoder)."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    target = _BUILTIN.get(name)
    if target is None:
        return None
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            return None
        raise
    cls = getattr(module, cls_name, None)
    if cls is None:
        return None
    _REGISTERED[name] = cls
    return cls


def list_encoders() -> list[str]:
    """Names of the encoders available here, in registration order."""
    names = list(dict.fromkeys([*_BUILTIN, *_REGISTERED]))
    return [n for n in names if _load(n) is not None]


def get_encoder(name: str, board_size: int = 19, **options) -> Encoder:
    """An encoder instance by name, e.g. ``get_encoder("sevenplane")`` or
    ``get_encoder("alphago", player_plane=True)``. Raises ValueError for an unknown name."""
    cls = _load(name)
    if cls is None:
        raise ValueError(f"unknown encoder {name!r}; available: {', '.join(list_encoders())}")
    return cls(board_size=board_size, **options)
