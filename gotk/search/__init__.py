"""Tree search over policy + value networks: PUCT (AlphaGo Zero) with batched, symmetric leaf evaluation.

``SearchPlayer(agent, value_agent, SearchConfig(visits=200))`` plays like any player; :class:`Search` is the
tree and its loop; :mod:`gotk.search.tree` the compiled kernels over flat arrays.
"""

from gotk.search.evaluate import NetEvaluator, SearchSetupError, check_agents
from gotk.search.puct import Search, SearchConfig, SearchPlayer

__all__ = ["NetEvaluator", "Search", "SearchConfig", "SearchPlayer", "SearchSetupError", "check_agents"]
