"""Build the player a command line asks for: a searching player, or the policy player when no search is asked."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection

from gotk.search.config import SearchConfig
from gotk.search.evaluate import SearchSetupError


def make_search_player(agent: str | None, config: SearchConfig, value_agent: str | None = None,
                       threads: int | None = 1, warn: Callable[[str], None] | None = None, amp: bool = False,
                       keep: Collection[str] = (), **policy_kwargs):
    """A :class:`~gotk.search.SearchPlayer` when ``config`` searches (``visits`` ≥ 2 or ``seconds``), else
    :func:`gotk.play.players.make_player` with ``policy_kwargs``. Raises :class:`gotk.errors.GotkError`
    (:class:`SearchSetupError`, :class:`~gotk.nets.AgentError`) with a one-line reason.

    The search takes the agent's own constants (agent.json ``search``; :meth:`SearchConfig.with_agent`) in place
    of ``config``'s, except the fields named in ``keep``: the ones its caller set on purpose.

    A search whose value head is no better than its komi/handicap baseline (:attr:`SearchPlayer.warning`) is
    still built, and ``warn`` gets that line (default: ``warning: …`` on stderr, which GTP leaves free). ``amp``: the
    networks run under bf16 autocast (:attr:`gotk.nets.agent.Agent.amp`)."""
    from gotk.play.players import make_player

    config.validate()
    if not config.searches:
        if value_agent:
            raise SearchSetupError("--value-agent is used by the search only: give --visits N (N >= 2) or --seconds S")
        return make_player(agent, seed=config.seed, threads=threads, amp=amp, **policy_kwargs)
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
    return search_player(policy, config, value, keep, warn)


def search_player(policy, config: SearchConfig, value=None, keep: Collection[str] = (),
                  warn: Callable[[str], None] | None = None):
    """The :class:`~gotk.search.SearchPlayer` of loaded agents (``policy``, and ``value`` for the leaves' values
    when given): ``config`` with the policy agent's own search settings except the fields in ``keep``
    (:meth:`SearchConfig.with_agent`), its value-head warning to ``warn`` (module function
    :func:`make_search_player`). ``gotk serve`` and the file-based factory above build their searches here."""
    from gotk.search.player import SearchPlayer

    player = SearchPlayer(policy, value, config.with_agent(policy.meta.get("search", {}), keep))
    if player.warning:
        (warn or _stderr)(player.warning)
    return player


def _stderr(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr, flush=True)


__all__ = ["make_search_player", "search_player"]
