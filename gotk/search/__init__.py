"""The one search (:mod:`gotk.search.core`) that play, analysis, self-play and the zero loop's evaluations share,
with its parts (root rule, interior rule, final choice, pass rule, batching) chosen in :class:`SearchConfig`.

``SearchPlayer(agent, value_agent, SearchConfig(visits=200))`` plays like any player; :class:`Search` is the
tree itself, for analysis, benchmarks and self-play.
"""

from gotk.search.config import SearchConfig, SearchSetupError
from gotk.search.core import MoveInfo, Search
from gotk.search.evaluate import NetEvaluator, check_agents
from gotk.search.player import SearchPlayer

__all__ = ["MoveInfo", "NetEvaluator", "Search", "SearchConfig", "SearchPlayer", "SearchSetupError", "check_agents"]
