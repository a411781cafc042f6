"""Agents as the web app sees them: the agent files named on the command line (:func:`gotk.nets.agent.load_agent`)
plus the built-in random player and ``mcts`` (Monte Carlo tree search with uniform rollouts and no network,
:mod:`gotk.search.rollouts`), each wrapped as a :mod:`gotk.play.players` player. An agent conditioned on
metadata (trained with ``--metadata``) has no player of its own: every request names the profile it plays as
(:mod:`gotk.serve.profiles`). Positions come from a request as a move list (replayed by the rules engine, so an
illegal move is refused with its reason) or as the stones of a dataset position.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gotk import coords
from gotk.errors import GotkError
from gotk.game.state import BLACK, WHITE, GameState
from gotk.serve.data import ServeError
from gotk.serve.draw import top_moves

MAX_MOVES = 1000
MAX_VISITS = 5000  # per agent and request: a search the page waits for
MCTS_VISITS = 1000  # the playouts of mcts's move when a request names no visits


@dataclass
class AgentSlot:
    """One agent: ``ident`` in URLs, ``name`` shown, ``player`` (choose / policy / value; None for a conditioned
    agent, whose player depends on the request's profile), ``size`` (None: any board size), ``agent`` (the loaded
    :class:`~gotk.nets.agent.Agent`, None for the random player)."""

    ident: str
    name: str
    player: object | None
    size: int | None
    agent: object | None = None
    mcts: bool = False  # the search without a network: rollouts value its leaves (and answer its value)
    leaf_lambda: float = 0.0  # the searches' leaf value: AlphaGo's mix with rollouts above 0 (gotk serve --lambda)
    rollout_policy: object | None = None  # what plays those rollouts (and mcts's priors); None: uniform

    @property
    def has_value(self) -> bool:
        return self.mcts or (self.agent is not None and bool(self.agent.has_value))

    @property
    def conditioned(self) -> bool:
        """True for an agent conditioned on metadata: its policy is a profile's (or a position's recorded row)."""
        return self.agent is not None and bool(self.agent.num_metadata)

    def describe(self) -> dict:
        meta = self.agent.meta if self.agent is not None else {}
        return {"id": self.ident, "name": self.name, "board_size": self.size, "has_value": self.has_value,
                "conditioned": self.conditioned, "encoder": (meta.get("encoder") or {}).get("name"),
                "model": "mcts" if self.mcts else (meta.get("model") or {}).get("name"),
                "warning": _value_warning(self.agent)}


def _value_warning(agent) -> str | None:
    """:func:`gotk.nets.agent.value_head_warning` of a loaded agent (None for the random player)."""
    if agent is None:
        return None
    from gotk.nets.agent import value_head_warning

    return value_head_warning(agent)


def mcts_player(visits: int, seed: int | None = 0, rollout_policy=None):
    """The search without a network (priors and playouts uniform, or by ``rollout_policy``) at ``visits``
    playouts, no resignation (requests are stateless)."""
    from gotk.search import SearchConfig
    from gotk.search.player import SearchPlayer

    return SearchPlayer(None, None, SearchConfig(visits=visits, seed=seed, resign_threshold=None),
                        rollout_policy=rollout_policy)


def load_slots(files: list[str | Path], leaf_lambda: float = 0.0, rollout_policy: str | None = None) -> list[AgentSlot]:
    """The random player (``random``), ``mcts`` (:data:`MCTS_VISITS` playouts a move unless a request names its
    visits), plus one slot per agent file (ids ``a0``, ``a1``...); the agents search with the leaf value
    ``leaf_lambda`` (AlphaGo's mix above 0), the rollouts (and mcts's priors) by the ``rollout_policy`` file when
    given. Raises :class:`~gotk.errors.GotkError` for a file or a setting that cannot be used."""
    from gotk.nets.agent import load_agent
    from gotk.play.factory import policy_player, random_player, rollout_policy_file
    from gotk.search.config import SearchConfig

    SearchConfig(leaf_lambda=leaf_lambda).validate()
    pol = rollout_policy_file(rollout_policy)
    kind = f"{pol.name} rollouts" if pol is not None else "uniform rollouts"
    slots = [AgentSlot("random", "random (uniform sensible moves)", random_player(), None),
             AgentSlot("mcts", f"mcts (Monte Carlo tree search: {kind}, no network)",
                       mcts_player(MCTS_VISITS, rollout_policy=pol), pol.board_size if pol is not None else None,
                       mcts=True, rollout_policy=pol)]
    loaded = []
    for f in files:
        agent = load_agent(f)
        if not agent.has_policy:
            raise GotkError("bad_agent", f"{f}: the agent has no policy head")
        loaded.append(agent)
    for i, (agent, name) in enumerate(zip(loaded, agent_names(files, loaded), strict=True)):
        # requests are stateless: no resignation streak; a conditioned agent's player is made per request
        player = None if agent.num_metadata else policy_player(agent, resign=False)
        if leaf_lambda > 0 and pol is not None and pol.board_size != agent.board_size:
            raise GotkError("bad_search", f"--rollout-policy is for {pol.board_size}x{pol.board_size}, {name} plays "
                                          f"{agent.board_size}x{agent.board_size}")
        slots.append(AgentSlot(f"a{i}", name, player, agent.board_size, agent, leaf_lambda=leaf_lambda,
                               rollout_policy=pol if leaf_lambda > 0 else None))
    return slots


def agent_names(files: list[str | Path], agents: list) -> list[str]:
    """Names that tell agents apart: ``RUN · MODEL · SIZE`` (``r1 · resnet 6x64 · 19x19``), where RUN is the
    folder the file is in (every ``gotk train`` run writes ``agent.gotk``, so the file name says nothing), with
    the file's stem added when it is not ``agent`` (``r1/best``). Where two names are still equal, more of the
    path is shown, up to the whole path."""
    def model(agent) -> str:
        m = agent.meta.get("model") or {}
        hp = m.get("hparams") or {}
        shape = f" {hp['blocks']}x{hp['filters']}" if {"blocks", "filters"} <= set(hp) else ""
        return f"{m.get('name', 'agent')}{shape}"

    def run(path: Path, depth: int) -> str:
        parts = list(path.resolve().parent.parts[1:])[-depth:] or ["."]
        return "/".join(parts) + ("" if path.stem == "agent" else f"/{path.stem}")

    from gotk.nets.agent_file import builtin_agent_name

    paths = [Path(f) for f in files]
    depth = [1] * len(paths)
    while True:
        names = [f"{builtin_agent_name(p) or run(p, d)} · {model(a)} · {a.board_size}x{a.board_size}"
                 for p, d, a in zip(paths, depth, agents, strict=True)]
        clash = [i for i, n in enumerate(names) if names.count(n) > 1 and depth[i] < len(paths[i].resolve().parts)]
        if not clash:
            return names
        for i in clash:
            depth[i] += 1


_LOCK = threading.Lock()  # torch inference and the players' state are not shared across threads


def parse_point(value, size: int) -> int:
    """A move from a request: a GTP vertex (``D4``), ``pass``, or a flat index; ServeError otherwise."""
    if isinstance(value, bool):
        raise ServeError(400, f"bad move {value!r}")
    if isinstance(value, int):
        if not 0 <= value <= size * size:
            raise ServeError(400, f"move index {value} is not on a {size}x{size} board (0..{size * size})")
        return value
    if isinstance(value, str) and len(value) <= 8:
        if value.lower() == "pass":
            return size * size
        try:
            return coords.from_gtp(value, size)
        except ValueError as e:
            raise ServeError(400, f"bad move {value!r}: {e}") from e
    raise ServeError(400, f"bad move {str(value)[:40]!r}: expected a vertex like D4, 'pass' or an index")


def build_state(size: int, komi: float, handicap: int, moves: list) -> GameState:
    """Replay ``moves`` (alternating colours, black first or white first after handicap stones) from the
    empty board with fixed handicap stones. ServeError (400) names the first illegal move."""
    from gotk.game.handicap import fixed_handicap_points, max_fixed_handicap

    if not isinstance(size, int) or not coords.MIN_SIZE <= size <= coords.MAX_SIZE:
        raise ServeError(400, f"board size must be {coords.MIN_SIZE}..{coords.MAX_SIZE}, got {size!r}")
    if not isinstance(komi, (int, float)) or not -1000 <= komi <= 1000:
        raise ServeError(400, f"bad komi {komi!r}")
    if not isinstance(handicap, int) or handicap < 0 or handicap == 1 or handicap > max_fixed_handicap(size):
        raise ServeError(400, f"handicap must be 0 or 2..{max_fixed_handicap(size)} on {size}x{size}, got "
                              f"{handicap!r}")
    if not isinstance(moves, list) or len(moves) > MAX_MOVES:
        raise ServeError(400, f"moves must be a list of at most {MAX_MOVES} moves")
    state = GameState(size, komi=float(komi))
    if handicap:
        state.setup(black=fixed_handicap_points(size, handicap), to_play=WHITE)
    for i, m in enumerate(moves):
        p = parse_point(m, size)
        try:
            state.play(p)
        except GotkError as e:
            raise ServeError(400, f"move {i + 1} ({coords.to_gtp(p, size)}) is illegal: {e}") from e
    return state


def state_from_stones(stones: np.ndarray, size: int, to_play: int, komi: float) -> GameState:
    """A position from a board of stones (a dataset row): no history, so no ko point is known."""
    state = GameState(size, komi=komi)
    try:
        state.setup(black=np.flatnonzero(stones == BLACK).tolist(), white=np.flatnonzero(stones == WHITE).tolist(),
                    to_play=BLACK if to_play > 0 else WHITE)
    except GotkError as e:
        raise ServeError(400, f"the stones of this position do not form a legal board: {e}") from e
    return state


def state_from_rows(gp, k: int, encoder: dict, komi: float) -> tuple[GameState, bool]:
    """Position ``k`` of a dataset game as a :class:`GameState` → ``(state, with_history)``. When the game's
    rows start at its first position and follow each other move by move, the state is the first row's
    stones (handicap / setup) with the recorded moves (the earlier rows' labels) replayed, so the ko point
    and the move history are known (an agent re-encoding it sees the planes the shard has); the replayed
    stones are checked against row ``k``'s. Otherwise (rows skipped, a replay that disagrees): row ``k``'s
    stones alone, with no history. ServeError (400) when the planes carry no stones."""
    from gotk.serve.data import stones_at

    size = int(encoder["board_size"])
    stones = stones_at(gp, k, encoder)
    if stones is None:
        raise ServeError(400, f"encoder {encoder['name']} has no stone planes: the position cannot be set up "
                              "for an agent")
    if np.array_equal(gp.move_number[:k + 1], np.arange(k + 1)):  # rows 0..k are moves 0..k of the game
        try:
            state = state_from_stones(stones_at(gp, 0, encoder), size, int(gp.to_play[0]), komi)
            for j in range(k):
                state.play(int(gp.label[j]))
            if np.array_equal(state.board, stones) and state.to_play == (BLACK if gp.to_play[k] > 0 else WHITE):
                return state, True
        except (GotkError, ServeError):
            pass
    return state_from_stones(stones, size, int(gp.to_play[k]), komi), False


def check_size(slot: AgentSlot, size: int) -> None:
    if slot.size is not None and slot.size != size:
        raise ServeError(400, f"agent {slot.name!r} plays {slot.size}x{slot.size}, the position is {size}x{size}")


def same_encoder(a: dict | None, b: dict | None) -> bool:
    """True when two encoder descriptions encode alike (name, version, options, board size)."""
    keys = ("name", "version", "board_size", "shape", "dtype")
    return bool(a and b) and all(a.get(k) == b.get(k) for k in keys) and (a.get("options") or {}) == (
        b.get("options") or {})


def analyse(slot: AgentSlot, state: GameState, top: int = 10, features: np.ndarray | None = None,
            encoder: dict | None = None, metadata=None) -> dict:
    """The agent's policy for the player to move (the probabilities ``agent.policy`` gives, illegal moves 0,
    as ``gotk-policy`` prints them) with its ``top`` moves, and its value (mover's view) when it has one.

    ``features``/``encoder``: a dataset row's planes and their encoder; when the agent was trained on that
    encoder, the network reads these planes (what trains) instead of re-encoding ``state``, which has no
    history (planes such as ko or turns-since then match the shard). ``metadata``: for a conditioned agent, what
    :meth:`~gotk.nets.agent.Agent.metadata_row` takes (a profile name, a row); other agents ignore it."""
    check_size(slot, state.size)
    direct = features is not None and slot.agent is not None and same_encoder(encoder, slot.agent.meta.get("encoder"))
    row = slot.agent.metadata_row(state, metadata) if slot.conditioned else None
    with _LOCK:
        if direct:
            glob = slot.agent.global_inputs(state)
            logp, v = slot.agent.predict(features[None], None if glob is None else glob[None],
                                         None if row is None else row[None])
            probs = np.exp(logp[0].astype(np.float64))
            mask = np.zeros(probs.size, dtype=bool)
            mask[state.legal_moves()] = True
            probs = np.where(mask, probs, 0.0)
            probs = probs / probs.sum() if probs.sum() > 0 else mask / mask.sum()
            value = float(v[0]) if v is not None else None
        elif row is not None:
            probs = slot.agent.policy(state, row)
            value = slot.agent.value(state, row) if slot.has_value else None
        else:
            probs = np.asarray(slot.player.policy(state), dtype=np.float64)
            value = float(slot.player.value(state)) if slot.has_value else None
    return {"agent": slot.ident, "name": slot.name, "policy": probs, "planes_from": "shard" if direct else "state",
            "top": [{"move": coords.to_gtp(p, state.size), "prob": round(pr, 6)}
                    for p, pr in top_moves(probs, state.size, top)],
            "value": value}


def search(slot: AgentSlot, state: GameState, visits: int, top: int = 10,
           seed: int = 0) -> tuple[dict, np.ndarray, int]:
    """The agent's search (the factory's :func:`gotk.play.factory.search_player`: the agent's own search settings
    else the defaults, ``seed`` for the evaluations' random symmetries; no resignation) of ``visits`` root visits from
    ``state`` → ``(summary, visit shares, move)``: ``summary`` has the root's visits, playouts, seconds, the root's
    value and win rate for the player to move, and the ``top`` root moves best first with their visits, win rate
    (``(q + 1) / 2``), prior and principal variation (GTP); ``move`` is the one the search plays (its final choice,
    :func:`gotk.search.choice.choose`). ServeError (400) for an agent that cannot search (the random player, no
    value head)."""
    from gotk.play.factory import search_player
    from gotk.search import SearchConfig
    from gotk.search.evaluate import SearchSetupError

    check_size(slot, state.size)
    if slot.agent is None and not slot.mcts:
        raise ServeError(400, f"{slot.name!r} cannot search: search needs a network with a policy and a value head")
    if not 2 <= visits <= MAX_VISITS:
        raise ServeError(400, f"visits must be 2..{MAX_VISITS}, got {visits}")
    with _LOCK:
        try:
            if slot.mcts:
                player = mcts_player(visits, seed, slot.rollout_policy)
            else:
                cfg = SearchConfig(visits=visits, seed=seed, resign_threshold=None, leaf_lambda=slot.leaf_lambda)
                player = search_player(slot.agent, cfg, keep={"leaf_lambda"}, warn=_quiet,
                                       rollout_policy=slot.rollout_policy)
        except SearchSetupError as e:
            raise ServeError(400, f"{slot.name!r} cannot search: {e}") from None
        player.think(state)
        move = player.decide(state)
        s = player.search
        infos = s.infos()
    n = state.size
    shares = np.zeros(n * n + 1)
    total = sum(i.visits for i in infos) or 1
    for i in infos:
        shares[i.move] = i.visits / total
    root = s.root_value()
    return {"visits": s.root_visits, "playouts": s.playouts, "seconds": round(s.seconds, 3),
            "value": root, "winrate": (root + 1) / 2,
            "moves": [{"move": coords.to_gtp(i.move, n), "visits": i.visits, "winrate": (i.q + 1) / 2,
                       "prior": i.prior, "pv": [coords.to_gtp(m, n) for m in i.pv[:12]]}
                      for i in infos[:top] if i.visits > 0]}, shares, move


def _quiet(line: str) -> None:
    """Searches in the app keep the value-head warning to the agent's own page (no stderr line per request)."""


def choose(slot: AgentSlot, state: GameState, player=None) -> int:
    """The agent's move in ``state`` (a flat index or pass; agents here never resign): by ``player`` when given (a
    conditioned agent's player for the request's profile), else by the slot's own."""
    check_size(slot, state.size)
    with _LOCK:
        return int((player or slot.player).choose(state))


__all__ = ["AgentSlot", "agent_names", "analyse", "build_state", "check_size", "choose", "load_slots", "mcts_player",
           "parse_point", "search", "state_from_rows", "state_from_stones"]
