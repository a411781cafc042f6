"""Every player is built here: from files as a command line asks (:func:`make_search_player`: a searching player,
or the policy or random player when no search is asked), or from loaded agents (:func:`search_player`,
:func:`policy_player`, :func:`random_player`: ``gotk serve`` and the zero loop's evaluations), and the alpha-beta
player (:func:`alphabeta_player`, :func:`alphabeta_from_files`); and ``gotk analysis``'s engine of agent files
(:func:`build_analysis_engine`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import TYPE_CHECKING

from gotk.errors import GotkError
from gotk.play.players import PolicyPlayer, RandomPlayer, profile_temperature
from gotk.search.config import PLAYER_RESIGN_THRESHOLD, SearchConfig, SearchSetupError

if TYPE_CHECKING:
    from gotk.play.analysis_engine import AnalysisEngine


def make_search_player(agent: str | None, config: SearchConfig, value_agent: str | None = None,
                       threads: int | None = 1, warn: Callable[[str], None] | None = None, amp: bool = False,
                       keep: Collection[str] = (), rollout_policy: str | None = None, **policy_kwargs):
    """A :class:`~gotk.search.SearchPlayer` when ``config`` searches (``visits`` ≥ 2 or ``seconds``), else
    :func:`policy_from_file` with ``policy_kwargs``; ``agent`` ``"mcts"``: the search without a network, its leaves
    valued by rollouts (:mod:`gotk.search.rollouts`). Raises :class:`gotk.errors.GotkError`
    (:class:`SearchSetupError`, :class:`~gotk.nets.AgentError`) with a one-line reason.

    The search takes the agent's own constants (agent.json ``search``; :meth:`SearchConfig.with_agent`) in place
    of ``config``'s, except the fields named in ``keep``: the ones its caller set on purpose.

    ``rollout_policy``: a fast rollout policy's file (:mod:`gotk.train.rollout`) that plays the rollouts (and, for
    mcts, gives the priors).

    A search whose value head is no better than its komi/handicap baseline (:attr:`SearchPlayer.warning`) is
    still built, and ``warn`` gets that line (default: ``warning: …`` on stderr, which GTP leaves free). ``amp``: the
    networks run under bf16 autocast (:attr:`gotk.nets.agent.Agent.amp`)."""
    config.validate()
    if agent == "mcts":  # Monte Carlo tree search without a network (gotk.search.rollouts)
        if not config.searches:
            raise SearchSetupError("--agent mcts searches with rollouts: give --playouts N (N >= 2) or --seconds S")
        if value_agent:
            raise SearchSetupError("--agent mcts has no network: --value-agent does not apply")
        if policy_kwargs.get("profile") is not None:
            raise SearchSetupError("--profile needs an agent conditioned on metadata, not mcts")
        from gotk.search.player import SearchPlayer

        return SearchPlayer(None, None, config, rollout_policy=mcts_rollout_policy(rollout_policy))
    if rollout_policy is not None and not config.searches:
        raise SearchSetupError("--rollout-policy plays a search's rollouts: give --visits N (N >= 2) or --seconds S")
    if not config.searches:
        if value_agent:
            raise SearchSetupError("--value-agent is used by the search only: give --visits N (N >= 2) or --seconds S")
        if config.leaf_lambda > 0 or "rollouts" in keep:
            raise SearchSetupError("--lambda and --rollouts are the search's leaf evaluation: give --visits N "
                                   "(N >= 2) or --seconds S")
        return policy_from_file(agent, seed=config.seed, threads=threads, amp=amp, **policy_kwargs)
    if agent is None or agent == "random":
        raise SearchSetupError("search needs an agent file with a policy (--agent FILE), not the random player")
    import torch

    from gotk.nets.agent import load_agent

    if threads:
        torch.set_num_threads(threads)
    policy = load_agent(agent)
    value = load_agent(value_agent) if value_agent else None
    for a in (policy, value):
        if a is not None:
            a.amp = amp
    return search_player(policy, config, value, keep, warn, rollout_policy_file(rollout_policy))


#: ``--rollout-policy`` naming uniform playouts and priors
UNIFORM_ROLLOUTS = "uniform"
#: The network-free search's rollout policy unless one is named: the shipped pattern policy, on every board size
#: (its weights are local), what every measured mcts run used (BENCHMARKS.md, "Rollouts and alpha-beta")
MCTS_ROLLOUT_POLICY = "kgs-rollout"


def rollout_policy_file(path: str | None, any_size: bool = False):
    """The fast rollout policy in the agent file ``path`` (None or ``uniform``: none); ``any_size``: it plays every
    board size; :class:`~gotk.nets.AgentError` when the file is not one."""
    if path is None or path == UNIFORM_ROLLOUTS:
        return None
    from gotk.train.rollout import load_rollout_policy

    return load_rollout_policy(path, any_size=any_size)


def mcts_rollout_policy(path: str | None):
    """The rollout policy of the search without a network: the file ``path`` (its own board size; ``uniform``:
    none), else :data:`MCTS_ROLLOUT_POLICY` on every board size."""
    return rollout_policy_file(MCTS_ROLLOUT_POLICY, any_size=True) if path is None else rollout_policy_file(path)


def search_player(policy, config: SearchConfig, value=None, keep: Collection[str] = (),
                  warn: Callable[[str], None] | None = None, rollout_policy=None):
    """The :class:`~gotk.search.SearchPlayer` of loaded agents (``policy``, and ``value`` for the leaves' values
    when given): ``config`` with the policy agent's own search settings except the fields in ``keep``
    (:meth:`SearchConfig.with_agent`), its value-head warning to ``warn`` (module function
    :func:`make_search_player`). ``gotk serve`` and the file-based factory above build their searches here."""
    from gotk.search.player import SearchPlayer

    player = SearchPlayer(policy, value, config.with_agent(policy.meta.get("search", {}), keep),
                          rollout_policy=rollout_policy)
    if player.warning:
        (warn or _stderr)(player.warning)
    return player


def _stderr(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr, flush=True)


def policy_from_file(agent: str | None, seed: int | None = None, threads: int | None = 1, amp: bool = False,
                     **options) -> RandomPlayer | PolicyPlayer:
    """The player of the agent file ``agent`` that plays its policy (:func:`policy_player` with ``options``), or
    the random player for ``random`` / None; ``amp``: its network under bf16 autocast. Raises
    :class:`~gotk.nets.agent_file.AgentError` for an unreadable agent or one without a policy head."""
    if agent is None or agent == "random":
        if options.get("profile") is not None:
            raise GotkError("bad_agent", "--profile needs an agent conditioned on metadata, not the random player")
        return random_player(seed)
    import torch

    from gotk.nets.agent import load_agent

    if threads:
        torch.set_num_threads(threads)
    loaded = load_agent(agent)
    loaded.amp = amp
    return policy_player(loaded, seed=seed, path=agent, **options)


def policy_player(agent, temperature: float = 0.0, pass_threshold: float = 1e-3, resign: bool = True,
                  resign_threshold: float | None = PLAYER_RESIGN_THRESHOLD, resign_moves: int = 3,
                  seed: int | None = None,
                  profile: str | None = None, profile_argmax: bool = False, path: str | None = None,
                  epsilon: float = 0.0) -> PolicyPlayer:
    """The :class:`PolicyPlayer` of a loaded agent. ``profile``: a conditioned agent plays as that human-SL profile,
    sampling its policy at temperature 1 as KataGo's human-SL play does (``temperature``, when not 0, is used
    instead), or its most probable move with ``profile_argmax``. ``path`` names the agent in errors. ``epsilon``:
    the share of uniformly random sensible moves (ε-greedy: a Q-learning agent's play)."""
    from gotk.nets.agent_file import AgentError

    if not agent.has_policy:
        raise AgentError("the agent has no policy head, it cannot choose moves", path)
    if profile is not None:
        temperature = profile_temperature(temperature, profile_argmax)
    return PolicyPlayer(agent, temperature=temperature, pass_threshold=pass_threshold,
                        resign_threshold=resign_threshold if resign else None, resign_moves=resign_moves, seed=seed,
                        profile=profile, epsilon=epsilon)


def alphabeta_player(depth: int, agent=None, seed: int | None = None, value_agent=None, width: int | None = None):
    """The alpha-beta player (:class:`gotk.search.alphabeta.AlphaBetaPlayer`) searching ``depth`` plies, its moves
    ordered by ``agent``'s policy when given (else its ties drawn with ``seed``), its leaves valued by
    ``value_agent``'s value head when given (else the capture difference), each node trying the ``width`` moves its
    order ranks first when given. A depth out of 1..12, or agents without the heads asked of them, is a one-line
    :class:`GotkError`."""
    from gotk.search.alphabeta import AlphaBetaPlayer

    try:
        return AlphaBetaPlayer(depth, agent, seed=seed, value_agent=value_agent, width=width)
    except ValueError as e:
        raise GotkError("bad_search", str(e)) from None


def alphabeta_from_files(depth: int, value_agent: str | None = None, order_agent: str | None = None,
                         width: int | None = None, seed: int | None = None, threads: int | None = 1,
                         amp: bool = False):
    """:func:`alphabeta_player` of agent files: ``value_agent`` values the leaves; ``order_agent`` orders the moves,
    else the value agent does when it has a policy head. Raises :class:`GotkError` with a one-line reason."""
    if value_agent is None and order_agent is None:
        return alphabeta_player(depth, seed=seed, width=width)
    import torch

    from gotk.nets.agent import load_agent

    if threads:
        torch.set_num_threads(threads)
    value = load_agent(value_agent) if value_agent else None
    order = (value if order_agent == value_agent else load_agent(order_agent)) if order_agent else None
    if order is None and value is not None and value.has_policy:
        order = value
    for a in (value, order):
        if a is not None:
            a.amp = amp
    return alphabeta_player(depth, order, seed=seed, value_agent=value, width=width)


def random_player(seed: int | None = None) -> RandomPlayer:
    """The random player: uniformly random sensible moves."""
    return RandomPlayer(seed=seed)


def _mcts_analysis_engine(config: SearchConfig, value_agent: str | None, human_agent: str | None,
                          board_size: int | None, rollout_policy: str | None, options: dict) -> AnalysisEngine:
    """The engine of the search without a network (``--agent mcts``) on ``board_size`` boards (default: the
    rollout policy's, else 19)."""
    from gotk import coords
    from gotk.play.analysis_engine import AnalysisEngine
    from gotk.search.player import SearchPlayer

    if value_agent or human_agent:
        raise GotkError("bad_search", "--agent mcts has no network: --value-agent and --human-agent do not apply")
    policy = mcts_rollout_policy(rollout_policy)
    own = policy is not None and not policy.any_size  # a policy of one board size
    size = board_size or (policy.board_size if own else 19)
    if not coords.MIN_SIZE <= size <= coords.MAX_SIZE:
        raise GotkError("bad_search", f"--board-size must be {coords.MIN_SIZE}..{coords.MAX_SIZE}, not {size}")
    if own and policy.board_size != size:
        raise GotkError("bad_search", f"the rollout policy is for {policy.board_size}x{policy.board_size}, "
                                      f"--board-size {size}")
    options.pop("warn", None)
    player = SearchPlayer(None, None, replace(config, visits=max(2, config.visits)), rollout_policy=policy,
                          board_size=size)
    return AnalysisEngine(player.evaluator, replace(player.cfg, visits=config.visits), None, **options)


def build_analysis_engine(agent: str, config: SearchConfig, value_agent: str | None = None,
                          human_agent: str | None = None, threads: int | None = None, amp: bool = False, keep=(),
                          rollout_policy: str | None = None, board_size: int | None = None,
                          **options) -> AnalysisEngine:
    """The engine of agent files as ``gotk analysis`` names them: ``agent`` searches (its own search settings
    applied except the fields in ``keep``; ``config.visits`` the default ``maxVisits``), ``value_agent`` gives the
    leaves' values when given (``rollout_policy``'s file plays the rollouts of a mixed leaf value; ``agent``
    ``"mcts"``: the search without a network on ``board_size`` boards), ``human_agent``
    (an agent conditioned on metadata, the same board size) answers ``humanPolicy``. ``options`` go to
    :class:`gotk.play.analysis_engine.AnalysisEngine`. Raises :class:`gotk.errors.GotkError` with a one-line reason."""
    import torch

    from gotk.nets.agent import load_agent
    from gotk.play.analysis_engine import AnalysisEngine

    if threads:
        torch.set_num_threads(threads)
    visits = config.visits
    if visits < 1:
        raise GotkError("bad_search", f"--visits must be >= 1, not {visits}")
    if agent == "mcts":
        return _mcts_analysis_engine(config, value_agent, human_agent, board_size, rollout_policy, options)
    if board_size is not None:
        raise GotkError("bad_search", "--board-size is for --agent mcts: a network plays its own board size")
    policy = load_agent(agent)
    value = load_agent(value_agent) if value_agent else None
    human = load_agent(human_agent) if human_agent else None
    for a in (policy, value, human):
        if a is not None:
            a.amp = amp
    if policy.num_metadata:
        raise GotkError("bad_agent", f"--agent {agent}: conditioned on metadata, it plays as a profile and does not "
                        "search; search with an unconditioned agent (kgs) and give it as --human-agent for "
                        "humanSLProfile queries")
    if human is not None:
        if not human.num_metadata:
            raise GotkError("bad_agent", f"--human-agent {human_agent}: not conditioned on metadata (an agent "
                            "trained with --metadata, such as kgs-human)")
        if not human.has_policy:
            raise GotkError("bad_agent", f"--human-agent {human_agent}: it has no policy head")
        if human.board_size != policy.board_size:
            raise GotkError("bad_agent", f"--human-agent plays {human.board_size}x{human.board_size}, --agent "
                            f"{policy.board_size}x{policy.board_size}")
    player = search_player(policy, replace(config, visits=max(2, visits)), value, keep, options.pop("warn", None),
                           rollout_policy_file(rollout_policy))
    return AnalysisEngine(player.evaluator, replace(player.cfg, visits=visits), human, **options)


__all__ = ["alphabeta_from_files", "alphabeta_player", "build_analysis_engine", "make_search_player",
           "policy_from_file", "policy_player", "random_player",
           "mcts_rollout_policy", "rollout_policy_file", "search_player"]
