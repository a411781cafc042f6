"""Many self-play games advanced together, their network evaluations batched.

Every game in a :class:`SelfPlayBatch` needs exactly one network evaluation per step: its root at the start
of a move, else the leaf its next simulation reached. The step gathers one position from each game still
playing, evaluates them in one call (each under a random board symmetry), and gives each game its result.
This is what keeps the network busy with a batch the size of the game count on CPUs and GPUs alike, with no
virtual loss: each tree has one walk in flight.

A walk plays its path's moves on the game's one :class:`~gotk.game.state.GameState` (the engine's recorded
``play``), encodes the leaf there and takes the moves back with ``undo``: no position is copied.

Per move (see :class:`SelfPlayConfig`):

* a **full** search (probability ``full_fraction``; ``visits`` simulations), recorded as a training row with
  the search's policy target, or a **fast** one (``fast_visits``), not recorded (KataGo's playout-cap
  randomisation: more games for the value target at the same cost);
* ``search="gumbel"``: Gumbel AlphaZero at the root (:mod:`gotk.selfplay.gumbel`), target the improved policy
  π'; ``search="puct"``: AlphaZero's PUCT with Dirichlet noise on the root priors, target the visit counts;
* the first ``sample_moves`` moves are sampled from the target, later ones are the search's choice (Gumbel: the
  sequential-halving winner; PUCT: the most visited move);
* resignation when the root value stays below ``resign_threshold`` for ``resign_moves`` of the player's moves
  in a row (never before ``resign_min_move``), except in a ``resign_disabled`` share of the games, which play on
  and tell how often a resignation would have been wrong;
* the moves considered are the legal ones that fill no own eye; pass only when none is left or to answer the
  opponent's pass (``early_pass`` makes it a candidate everywhere). A network whose value says one side wins
  anyway would otherwise pass from the first moves on, and the games would teach nothing of the board; without it
  the games are played out until the stones settle, which is also what area scoring with every stone alive needs;
* a game ends after two passes (area score, every stone counted alive, komi included) or ``max_moves``.

``policy_only=True`` is AlphaGo's value-data recipe: no search, moves sampled from the network's policy at
``temperature``, one uniformly random move at a random move number ``U``, and the position after it recorded
(one row per game, policy weight 0: a value target only).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gotk.datasets.symmetry import NUM_SYMMETRIES, apply_symmetries_, label_permutations
from gotk.errors import GotkError
from gotk.game.scoring import area_ownership
from gotk.game.state import GameState
from gotk.play.players import sensible_moves
from gotk.search import tree as T
from gotk.selfplay import gumbel as G

BLACK, WHITE = 1, 2
SEARCHES = ("gumbel", "puct")


class SelfPlayError(GotkError):
    """Self-play cannot start with these options or this agent (``bad_selfplay``)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_selfplay", message)


@dataclass
class SelfPlayConfig:
    """How games are played; :meth:`validate` raises :class:`SelfPlayError` on a value out of range."""

    size: int = 9
    komi: float = 7.5
    search: str = "gumbel"
    visits: int = 32  # simulations of a full search (recorded)
    fast_visits: int = 8  # ... of a fast one (not recorded)
    full_fraction: float = 0.25  # share of moves searched fully
    considered: int = 16  # Gumbel: moves sampled at the root (m)
    c_visit: float = 50.0
    c_scale: float = 1.0
    c_puct: float = 1.5  # PUCT alternative
    dirichlet_alpha: float | None = None  # None: 0.03 · 361 / size² (AlphaZero's 0.03 on 19x19)
    noise_fraction: float = 0.25
    sample_moves: int | None = None  # None: size² / 8
    resign_threshold: float | None = -0.9
    resign_moves: int = 2
    resign_min_move: int | None = None  # None: size² / 2 (no resignation in the opening)
    resign_disabled: float = 0.2
    max_moves: int | None = None  # None: 2 · size²
    policy_only: bool = False
    temperature: float = 1.0  # policy-only mode
    symmetries: bool = True
    early_pass: bool = False  # pass a candidate at every move, not only when no sensible move is left or to answer one

    def validate(self) -> SelfPlayConfig:
        def bad(msg: str) -> None:
            raise SelfPlayError(msg)

        if not 2 <= self.size <= 25:
            bad(f"--size must be 2..25, not {self.size}")
        if self.search not in SEARCHES:
            bad(f"--search must be one of {', '.join(SEARCHES)}, not {self.search!r}")
        if not 1 <= self.visits <= 100_000 or not 1 <= self.fast_visits <= 100_000:
            bad(f"--visits and --fast-visits must be 1..100000, not {self.visits} and {self.fast_visits}")
        if not 0 < self.full_fraction <= 1:
            bad(f"--full-fraction must be in (0, 1], not {self.full_fraction}")
        if self.considered < 1:
            bad(f"--considered must be >= 1, not {self.considered}")
        if not (self.c_visit >= 0 and self.c_scale > 0 and self.c_puct > 0):
            bad("c_visit must be >= 0, c_scale and c_puct > 0")
        if not 0 <= self.noise_fraction <= 1:
            bad(f"noise fraction must be in 0..1, not {self.noise_fraction}")
        if self.resign_threshold is not None and not -1 <= self.resign_threshold <= 1:
            bad(f"--resign-threshold must be in -1..1, not {self.resign_threshold}")
        if not 0 <= self.resign_disabled <= 1 or self.resign_moves < 1:
            bad("--resign-disabled must be in 0..1 and resign moves >= 1")
        if self.max_moves is not None and self.max_moves < 1:
            bad(f"--max-moves must be >= 1, not {self.max_moves}")
        if not 0 < self.temperature <= 100:
            bad(f"--temperature must be in (0, 100], not {self.temperature}")
        return self

    @property
    def move_cap(self) -> int:
        return self.max_moves if self.max_moves is not None else 2 * self.size * self.size

    @property
    def sampled_moves(self) -> int:
        return self.sample_moves if self.sample_moves is not None else self.size * self.size // 8

    @property
    def resign_from(self) -> int:
        return self.resign_min_move if self.resign_min_move is not None else self.size * self.size // 2

    @property
    def alpha(self) -> float:
        return self.dirichlet_alpha if self.dirichlet_alpha is not None else 0.03 * 361 / (self.size * self.size)


@dataclass
class FinishedGame:
    """One game's record and training rows (the row arrays are aligned; planes are unsymmetrised)."""

    index: int
    size: int
    komi: float
    moves: list[tuple[int, int]]
    comments: list[str]  # per move: the root value and search kind
    score: float  # area score, Black's view, komi included (0 after a resignation: see ``resigned``)
    winner: int  # BLACK, WHITE or 0 (a draw)
    resigned: bool
    ownership: np.ndarray  # int8 (size, size), Black's view, of the final position
    resign_enabled: bool
    would_resign: int  # in a resign-disabled game, the first colour whose resignation would have triggered
    planes: np.ndarray
    move_number: np.ndarray
    to_play: np.ndarray
    label: np.ndarray
    policy: np.ndarray
    root_value: np.ndarray
    weight: np.ndarray

    @property
    def result(self) -> str:
        if self.winner == 0:
            return "0"
        side = "B" if self.winner == BLACK else "W"
        return f"{side}+R" if self.resigned else f"{side}+{abs(self.score):g}"


@dataclass
class _Game:
    index: int
    state: GameState
    rng: np.random.Generator
    resign_enabled: bool
    tree: T.Tree = field(default_factory=lambda: T.Tree(1024))
    path: np.ndarray = field(default_factory=lambda: np.zeros(64, dtype=np.int64))
    budget: int = 0
    full: bool = False
    sims: int = 0
    gumbel: np.ndarray | None = None
    schedule: np.ndarray | None = None
    pending: tuple | None = None  # ("root", moves) | ("leaf", path, moves) | ("policy",)
    root_planes: np.ndarray | None = None
    low_streak: list[int] = field(default_factory=lambda: [0, 0, 0])
    would_resign: int = 0
    resigned_by: int = 0
    done: bool = False
    comments: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    random_at: int = -1  # policy-only: the move number of the random move
    record_next: bool = False


def _candidates(state: GameState, early_pass: bool = False) -> np.ndarray:
    """The moves a search or policy considers: the legal moves that fill no own eye, and pass when none is left or
    when the opponent has just passed (passing then ends the game, which the search values exactly), or always with
    ``early_pass``."""
    moves = sensible_moves(state)
    if early_pass or moves.size == 0 or state.passes >= 1:
        moves = np.append(moves, state.pass_point)
    return moves.astype(np.int32)


def _terminal_value(state: GameState) -> float:
    """After two passes: +1/−1/0 for the player who moved last (into the node)."""
    score = state.score_area()
    mover_in = 3 - state.to_play
    return 0.0 if score == 0 else (1.0 if (score > 0) == (mover_in == BLACK) else -1.0)


class SelfPlayBatch:
    """Plays the games ``(index, seed)`` together with ``agent`` (a :class:`gotk.nets.agent.Agent` with policy and
    value heads; policy-only mode needs the policy only). :meth:`run` returns the finished games in index order."""

    def __init__(self, agent, config: SelfPlayConfig, games: list[tuple[int, int]], seed: int = 0) -> None:
        self.cfg = config.validate()
        check_agent(agent, self.cfg)
        self.agent = agent
        self.encoder = agent.encoder
        self.size = self.cfg.size
        self.nm = self.size * self.size + 1
        self.perms = label_permutations(self.size)
        self.sym_rng = np.random.default_rng([seed, 7])
        self.games = []
        for index, game_seed in games:
            rng = np.random.default_rng([game_seed, index])
            g = _Game(index, GameState(self.size, komi=self.cfg.komi), rng,
                      resign_enabled=bool(rng.random() >= self.cfg.resign_disabled))
            if self.cfg.policy_only:
                g.random_at = int(rng.integers(0, self.size * self.size))
            self.games.append(g)
        self.scratch = np.zeros(self.nm + 1, dtype=np.float64)
        self.net_seconds = 0.0
        self.seconds = 0.0
        self.evaluations = 0
        self.calls = 0

    # --- the step loop --------------------------------------------------------------------------

    def run(self) -> list[FinishedGame]:
        t0 = time.perf_counter()
        feats = np.zeros((len(self.games), *self.encoder.shape), dtype=self.encoder.np_dtype)
        active = list(self.games)
        finished: list[FinishedGame] = []
        while active:
            batch: list[_Game] = []
            for g in active:
                if self._prepare(g, feats, len(batch)):
                    batch.append(g)
                elif g.done:
                    finished.append(self._finish(g))
            if batch:
                probs, values = self._evaluate(feats[: len(batch)])
                for g, p, v in zip(batch, probs, values, strict=True):
                    self._absorb(g, p, float(v))
            active = [g for g in active if not g.done]
        self.seconds += time.perf_counter() - t0
        return sorted(finished, key=lambda f: f.index)

    def _evaluate(self, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = feats.shape[0]
        x = feats.copy()
        if self.cfg.symmetries:
            syms = self.sym_rng.integers(0, NUM_SYMMETRIES, size=n)
            apply_symmetries_(x, syms)
        else:
            syms = np.zeros(n, dtype=np.int64)
        t = time.perf_counter()
        logp, val = self.agent.predict(x)
        self.net_seconds += time.perf_counter() - t
        self.calls += 1
        self.evaluations += n
        probs = np.take_along_axis(np.exp(logp.astype(np.float64)), self.perms[syms], axis=1)
        values = np.zeros(n) if val is None else np.asarray(val, dtype=np.float64).reshape(-1)
        return probs, values

    # --- one game ------------------------------------------------------------------------------

    def _prepare(self, g: _Game, feats: np.ndarray, row: int) -> bool:
        """Advance ``g`` until it needs an evaluation (encoded into ``feats[row]``: True) or ends (False)."""
        if self.cfg.policy_only:
            return self._prepare_policy(g, feats, row)
        state, tree = g.state, g.tree
        while True:
            if g.pending is None:  # a new move: evaluate the root
                if self._game_over(g):
                    return False
                moves = _candidates(state, self.cfg.early_pass)
                if moves.size == 1:  # only pass: nothing to search
                    self._play(g, int(moves[0]), "forced")
                    continue
                tree.reset()
                g.full = bool(g.rng.random() < self.cfg.full_fraction)
                g.budget = self.cfg.visits if g.full else self.cfg.fast_visits
                g.sims = 0
                feats[row] = self.encoder.encode(state)
                g.root_planes = feats[row].copy()
                g.pending = ("root", moves)
                return True
            if g.sims >= g.budget:
                self._decide(g)
                continue
            # one simulation: walk to a leaf
            if g.path.shape[0] < tree.size + 2:
                g.path = np.zeros(2 * tree.size + 2, dtype=np.int64)
            if self.cfg.search == "gumbel":
                visits = int(g.schedule[g.sims])
                child = G.root_pick(tree.first, tree.nchild, tree.N, tree.W, tree.P, tree.RV, g.gumbel,
                                    self.cfg.c_visit, self.cfg.c_scale, visits, self.scratch)
                if child < 0:  # the schedule's visit count is gone (a terminal child's): the most visited
                    child = G.root_pick(tree.first, tree.nchild, tree.N, tree.W, tree.P, tree.RV, g.gumbel,
                                        self.cfg.c_visit, self.cfg.c_scale, -1, self.scratch)
                length = G.descend(child, tree.first, tree.nchild, tree.N, tree.W, tree.P, tree.RV, tree.status,
                                   self.cfg.c_visit, self.cfg.c_scale, self.scratch, g.path)
                leaf = int(g.path[length - 1])
                if tree.status[leaf] == T.TERMINAL:
                    G.backup_path(tree.N, tree.W, tree.W2, g.path, length, tree.TV[leaf])
                    g.sims += 1
                    continue
            else:
                code, length = T.select(*tree.stats(), self.cfg.c_puct, 0.0, g.path)
                if code == T.TERMINAL_LEAF:
                    g.sims += 1
                    continue
                leaf = int(g.path[length - 1])
            path = g.path[:length].copy()
            for m in tree.move[path[1:]]:
                state.play(int(m))
            if state.passes >= 2:
                v = _terminal_value(state)
                for _ in range(length - 1):
                    state.undo()
                tree.status[leaf] = T.TERMINAL
                tree.TV[leaf] = v
                self._backup(tree, path, v)
                g.sims += 1
                continue
            feats[row] = self.encoder.encode(state)
            moves = _candidates(state, self.cfg.early_pass)
            for _ in range(length - 1):
                state.undo()
            g.pending = ("leaf", path, moves)
            return True

    def _backup(self, tree: T.Tree, path: np.ndarray, value: float) -> None:
        if self.cfg.search == "gumbel":
            G.backup_path(tree.N, tree.W, tree.W2, path, path.shape[0], value)
        else:
            tree.backup(path, value)

    def _absorb(self, g: _Game, probs: np.ndarray, value: float) -> None:
        if self.cfg.policy_only:
            self._absorb_policy(g, probs, value)
            return
        kind = g.pending[0]
        tree = g.tree
        if kind == "root":
            moves = g.pending[1]
            pri = self._priors(g.state, moves, probs)
            if self.cfg.search == "puct" and g.full and self.cfg.noise_fraction > 0:
                noise = g.rng.dirichlet(np.full(moves.size, self.cfg.alpha))
                pri = (1 - self.cfg.noise_fraction) * pri + self.cfg.noise_fraction * noise
            tree.expand(0, moves, pri, value)
            tree.N[0] = 1.0
            tree.W[0] = -value
            tree.W2[0] = value * value
            if self.cfg.search == "gumbel":
                g.gumbel = g.rng.gumbel(size=moves.size)
                g.schedule = G.considered_visits(min(self.cfg.considered, moves.size), g.budget)
            g.pending = ("searching",)
            return
        _, path, moves = g.pending
        leaf = int(path[-1])
        pri = self._priors(None, moves, probs)
        tree.expand(leaf, moves, pri, value)
        self._backup(tree, path, -value)
        g.sims += 1
        g.pending = ("searching",)

    @staticmethod
    def _priors(state, moves: np.ndarray, probs: np.ndarray) -> np.ndarray:
        pri = probs[moves]
        total = pri.sum()
        if not (total > 0 and np.isfinite(total)):
            return np.full(moves.size, 1.0 / moves.size)
        return pri / total

    def _decide(self, g: _Game) -> None:
        """The search is done: record the position (full search), check resignation, play the move."""
        tree, cfg, state = g.tree, self.cfg, g.state
        kids = g.tree.children(0)
        moves = tree.move[kids].astype(np.int64)
        if cfg.search == "gumbel":
            target = G.improved_policy(tree, cfg.c_visit, cfg.c_scale, self.scratch)
        else:
            n = tree.N[kids]
            target = n / n.sum() if n.sum() > 0 else tree.P[kids] / tree.P[kids].sum()
        root_value = float(-tree.W[0] / tree.N[0])
        sampling = state.move_number < cfg.sampled_moves
        if sampling:
            choice = int(moves[g.rng.choice(moves.size, p=target / target.sum())])
        elif cfg.search == "gumbel":
            best = G.root_pick(tree.first, tree.nchild, tree.N, tree.W, tree.P, tree.RV, g.gumbel, cfg.c_visit,
                               cfg.c_scale, -1, self.scratch)
            choice = int(tree.move[best])
        else:
            choice = int(moves[int(np.argmax(tree.N[kids]))])
        if g.full:
            policy = np.zeros(self.nm, dtype=np.float32)
            policy[moves] = target
            g.rows.append((g.root_planes, state.move_number, state.to_play, choice, policy, root_value, 1.0))
        g.pending = None
        # resignation: the search's best value for the player to move
        mover = state.to_play
        if cfg.resign_threshold is not None:
            if root_value < cfg.resign_threshold:
                g.low_streak[mover] += 1
            else:
                g.low_streak[mover] = 0
            if g.low_streak[mover] >= cfg.resign_moves and state.move_number >= cfg.resign_from:
                if g.resign_enabled:
                    g.resigned_by = mover
                    g.comments.append(f"v={root_value:.3f} resigns")
                    g.done = True
                    return
                if g.would_resign == 0:
                    g.would_resign = mover
        self._play(g, choice, f"v={root_value:.3f} {'full' if g.full else 'fast'} n={int(tree.N[0]) - 1}")

    def _play(self, g: _Game, move: int, note: str) -> None:
        g.state.play(move)
        g.comments.append(note)
        g.pending = None

    def _game_over(self, g: _Game) -> bool:
        if g.state.passes >= 2 or g.state.move_number >= self.cfg.move_cap:
            g.done = True
        return g.done

    # --- policy-only games ------------------------------------------------------------------------

    def _prepare_policy(self, g: _Game, feats: np.ndarray, row: int) -> bool:
        state = g.state
        while True:
            if self._game_over(g):
                return False
            moves = _candidates(state, self.cfg.early_pass)
            if state.move_number == g.random_at:  # AlphaGo's one random move, then record the next position
                self._play(g, int(moves[g.rng.integers(0, moves.size)]), "random")
                g.record_next = True
                continue
            if moves.size == 1:
                self._play(g, int(moves[0]), "forced")
                g.record_next = False
                continue
            feats[row] = self.encoder.encode(state)
            g.root_planes = feats[row].copy() if g.record_next else None
            g.pending = ("policy", moves)
            return True

    def _absorb_policy(self, g: _Game, probs: np.ndarray, value: float) -> None:
        moves = g.pending[1]
        with np.errstate(divide="ignore"):
            logits = np.log(np.maximum(self._priors(None, moves, probs), 1e-300)) / self.cfg.temperature
        w = np.exp(logits - logits.max())
        choice = int(moves[g.rng.choice(moves.size, p=w / w.sum())])
        if g.record_next:
            policy = np.zeros(self.nm, dtype=np.float32)
            policy[choice] = 1.0
            g.rows.append((g.root_planes, g.state.move_number, g.state.to_play, choice, policy, value, 0.0))
            g.record_next = False
        self._play(g, choice, "")

    # --- the end of a game --------------------------------------------------------------------------

    def _finish(self, g: _Game) -> FinishedGame:
        state = g.state
        area, owner = area_ownership(state.board, state.nbr)
        score = float(area) - state.komi
        if g.resigned_by:
            winner = 3 - g.resigned_by
        else:
            winner = BLACK if score > 0 else WHITE if score < 0 else 0
        n = len(g.rows)
        shape = self.encoder.shape
        planes = np.stack([r[0] for r in g.rows]) if n else np.zeros((0, *shape), dtype=self.encoder.np_dtype)
        return FinishedGame(
            index=g.index, size=self.size, komi=state.komi, moves=list(state.history), comments=list(g.comments),
            score=0.0 if g.resigned_by else score, winner=winner, resigned=bool(g.resigned_by),
            ownership=owner.reshape(self.size, self.size), resign_enabled=g.resign_enabled,
            would_resign=g.would_resign, planes=planes,
            move_number=np.array([r[1] for r in g.rows], dtype=np.int32),
            to_play=np.array([1 if r[2] == BLACK else -1 for r in g.rows], dtype=np.int8),
            label=np.array([r[3] for r in g.rows], dtype=np.int16),
            policy=np.stack([r[4] for r in g.rows]) if n else np.zeros((0, self.nm), dtype=np.float32),
            root_value=np.array([r[5] for r in g.rows], dtype=np.float32),
            weight=np.array([r[6] for r in g.rows], dtype=np.float32))


def check_agent(agent, cfg: SelfPlayConfig) -> None:
    """Raise :class:`SelfPlayError` when ``agent`` cannot play these games."""
    if agent.board_size != cfg.size:
        raise SelfPlayError(f"the agent plays {agent.board_size}x{agent.board_size}, not {cfg.size}x{cfg.size} "
                            f"(--size)")
    if not agent.has_policy:
        raise SelfPlayError("the agent has no policy head: self-play needs one")
    if not cfg.policy_only and not agent.has_value:
        raise SelfPlayError("search needs a value head: this agent is policy-only (use --policy-only, or an agent "
                            "trained with --head both)")


__all__ = ["FinishedGame", "SEARCHES", "SelfPlayBatch", "SelfPlayConfig", "SelfPlayError", "check_agent"]
