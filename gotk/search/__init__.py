"""The one search (:mod:`gotk.search.core`) that play, analysis, self-play and the zero loop's evaluations share,
with its parts (root rule, interior rule, final choice, pass rule, batching) chosen in :class:`SearchConfig`.

``SearchPlayer(agent, value_agent, SearchConfig(visits=200))`` plays like any player; :class:`Search` is the
tree itself, for analysis, benchmarks and self-play. Reading a setting imports no torch: :class:`NetEvaluator`,
:func:`check_agents` and :class:`SearchPlayer` (which run networks) are imported when first named here.
"""

from gotk.search.config import SearchConfig, SearchSetupError
from gotk.search.core import MoveInfo, Search

_NETWORK_SIDE = {"NetEvaluator": "gotk.search.evaluate", "check_agents": "gotk.search.evaluate",
                 "SearchPlayer": "gotk.search.player"}


def __getattr__(name: str):
    if name in _NETWORK_SIDE:
        import importlib

        return getattr(importlib.import_module(_NETWORK_SIDE[name]), name)
    raise AttributeError(f"module 'gotk.search' has no attribute {name!r}")


__all__ = ["MoveInfo", "NetEvaluator", "Search", "SearchConfig", "SearchPlayer", "SearchSetupError", "check_agents"]
