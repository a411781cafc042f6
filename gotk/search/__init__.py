"""The one search (:mod:`gotk.search.core`) that play, analysis, self-play and the zero loop's evaluations share,
with its parts (root rule, interior rule, final choice, pass rule, batching) chosen in :class:`SearchConfig`.

``SearchPlayer(agent, value_agent, SearchConfig(visits=200))`` plays like any player; :class:`Search` is the
tree itself, for analysis, benchmarks and self-play. Reading a setting (:mod:`gotk.search.config`) imports neither
the compiled search nor torch: the names below are imported from their modules when first named here.
"""

_HOMES = {"SearchConfig": "gotk.search.config", "SearchSetupError": "gotk.search.config",
          "MoveInfo": "gotk.search.core", "Search": "gotk.search.core",
          "NetEvaluator": "gotk.search.evaluate", "check_agents": "gotk.search.evaluate",
          "SearchPlayer": "gotk.search.player"}


def __getattr__(name: str):
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'gotk.search' has no attribute {name!r}")


__all__ = ["MoveInfo", "NetEvaluator", "Search", "SearchConfig", "SearchPlayer", "SearchSetupError", "check_agents"]
