"""Many self-play games advanced together, their network evaluations batched.

Every game in a :class:`SelfPlayBatch` has its own :class:`gotk.search.core.Search`, the one search that play and
analysis use too, and needs one network evaluation per step: its root at the start of a move, else the leaf its
next simulation reached. The step gathers one leaf from each game still playing (:meth:`Search.gather`), evaluates
them in one call (each under a random board symmetry, :class:`gotk.search.evaluate.NetEvaluator`), and gives each
game its result (:meth:`Search.absorb`). This is what keeps the network busy with a batch the size of the game
count on CPUs and GPUs alike: each tree has one walk in flight, so no virtual loss bends its rules.

Per move (see :class:`SelfPlayConfig`):

* a **full** search (probability ``full_fraction``; ``visits`` simulations on a fresh tree), recorded as a
  training row with the search's policy target, or a **fast** one (``fast_visits`` simulations on the subtree
  kept from the moves before), not recorded (KataGo's playout-cap randomisation: more games for the value target
  at the same cost);
* ``search="gumbel"``: Gumbel AlphaZero at the root and inside (:mod:`gotk.search.gumbel`), target the improved
  policy π'; ``search="puct"``: AlphaZero's PUCT with Dirichlet noise on a full search's root priors, target the
  visit counts;
* the first ``sample_moves`` moves are sampled from the target, later ones are the search's choice (Gumbel: the
  sequential-halving winner; PUCT: the most visited move);
* resignation when the root value stays below ``resign_threshold`` for ``resign_moves`` of the player's moves
  in a row (never before ``resign_min_move``), except in a ``resign_disabled`` share of the games, which play on
  and tell how often a resignation would have been wrong;
* the moves considered are the search's pass rule (:mod:`gotk.search.core`): the legal ones that fill no own eye;
  pass only when none is left or to answer the opponent's pass (the search's ``pass_rule`` ``"always"``,
  ``--early-pass``: a candidate everywhere). A network whose value says one side wins anyway would otherwise pass
  from the first moves on, and the games would teach nothing of the board; without it the games are played out
  until the stones settle, which is also what area scoring with every stone alive needs;
* a game ends after two passes (area score, every stone counted alive, komi included) or ``max_moves``.

``policy_only=True`` plays **policy games**: no search, each move drawn from
:func:`gotk.search.choice.behaviour` (the network's policy over the sensible moves at ``temperature``, with
``experience`` its probabilities clipped at ``clip`` and a ``random_moves`` share of uniform moves), and records
**experience** (:mod:`gotk.shards.experience_column`): the position, the move, the probability the move had and the
network's value when it was played, the game's return added to every row at the end. Which moves are recorded
is the recipe: with ``experience=True`` every move the agent chose (the book's chapters 9–12: learning from the
games); without it AlphaGo's value-data recipe, one uniformly random move at a random move number ``U`` and the
position after it, one row a game, which also carries the self-play target columns with policy weight 0 (a
value target only). A policy game ends as a policy player's does: a resignation by the mover's value head (the
threshold and the share of games played out are self-play's), a pass that wins after the opponent's pass or ends a
settled game (:func:`gotk.search.choice.settled`), two passes, or the move cap; the passes and resignations are
not recorded (no move was drawn).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gotk.datasets.symmetry import NUM_SYMMETRIES
from gotk.encoders import global_inputs as GI
from gotk.game.moves import passing_wins
from gotk.game.state import GameState
from gotk.search import choice as C
from gotk.search.core import Search, candidates
from gotk.search.evaluate import Leaves, NetEvaluator
from gotk.selfplay.config import SelfPlayConfig, SelfPlayError

BLACK, WHITE = 1, 2


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
    capped: bool  # stopped at ``max_moves`` before two passes: its final position is not a settled board
    ownership: np.ndarray  # int8 (size, size), Black's view, of the final position
    resign_enabled: bool
    would_resign: int  # in a resign-disabled game, the first colour whose resignation would have triggered
    planes: np.ndarray
    move_number: np.ndarray
    to_play: np.ndarray  # int8: +1 black to move, -1 white (the shards' column)
    label: np.ndarray
    policy: np.ndarray  # (rows, size²+1); experience games: (0, size²+1), none is recorded
    root_value: np.ndarray  # the search's value, or (policy games) the network's at play time
    weight: np.ndarray
    play_prob: np.ndarray | None = None  # policy games: the probability of each row's move at play time
    choices: np.ndarray | None = None  # policy games: bool (rows, size²+1), the moves each row's player chose from
    symmetry: np.ndarray | None = None  # policy games: int8 (rows,), the symmetry the acting network saw

    def returns(self, discount: float = 1.0) -> np.ndarray:
        """Each row's return: the game's result from its mover's view (+1 won, −1 lost, 0 a draw), times
        ``discount ** (moves after it)`` (the result arrives after the game's last move)."""
        black = 1 if self.winner == BLACK else -1 if self.winner == WHITE else 0
        ret = self.to_play.astype(np.float32) * black
        if discount != 1.0:
            ret = ret * np.float32(discount) ** (len(self.moves) - 1 - self.move_number).astype(np.float32)
        return ret

    @property
    def global_inputs(self) -> np.ndarray:
        """The rows' global inputs ``(rows, G)`` float32: the game's komi from each row's player to move's view and
        the side to move (:mod:`gotk.encoders.global_inputs`), what the shards' ``globals`` column holds."""
        return GI.from_to_play(self.komi, self.to_play, self.size)

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
    search: Search
    searching: bool = False  # a move's search is under way
    full: bool = False
    pending: bool = False  # a leaf (or, policy-only, the position) waits for the network
    moves: np.ndarray | None = None  # policy-only: the candidates of the pending position
    symmetry: int = 0  # policy-only: the board symmetry the network sees the pending position under
    root_planes: np.ndarray | None = None
    resignation: dict[int, C.Resignation] = field(default_factory=dict)  # per colour
    would_resign: int = 0
    resigned_by: int = 0
    done: bool = False
    comments: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    random_at: int = -1  # policy-only: the move number of the random move
    learner: int = BLACK  # with an opponent network: the colour the agent plays
    record_next: bool = False


class SelfPlayBatch:
    """Plays the games ``(index, seed)`` together with ``agent`` (a :class:`gotk.nets.agent.Agent` with policy and
    value heads; policy-only mode needs the policy only). :meth:`run` returns the finished games in index order.

    ``opponent`` (policy games only): another agent of the same board size plays one colour of every game (White in
    the games of even index, Black in the others), its moves drawn the same way and never recorded; each step
    evaluates the positions of each network in a call of its own (AlphaGo's games of the RL policy against an
    earlier version of itself)."""

    def __init__(self, agent, config: SelfPlayConfig, games: list[tuple[int, int]], seed: int = 0,
                 opponent=None) -> None:
        self.cfg = config.validate()
        check_agent(agent, self.cfg)
        if opponent is not None:
            if not self.cfg.policy_only:
                raise SelfPlayError("an opponent network plays policy games only (--policy-only)")
            check_agent(opponent, self.cfg)
        self.opponent = NetEvaluator(opponent, symmetries=self.cfg.tree.symmetries, seed=[seed, 8],
                                     need_value=False) if opponent is not None else None
        self.agent = agent
        self.encoder = agent.encoder
        self.size = self.cfg.size
        self.nm = self.size * self.size + 1
        self.evaluator = NetEvaluator(agent, symmetries=self.cfg.tree.symmetries, seed=[seed, 7],
                                      need_value=not self.cfg.policy_only)
        search_cfg = self.cfg.search_config()
        self.games = []
        for index, game_seed in games:
            rng = np.random.default_rng([game_seed, index])
            g = _Game(index, GameState(self.size, komi=self.cfg.komi), rng,
                      resign_enabled=bool(rng.random() >= self.cfg.resign_disabled),
                      search=Search(self.evaluator, search_cfg, rng=rng, capacity=1024),
                      resignation={c: C.Resignation(self.cfg.resign_threshold, self.cfg.resign_moves,
                                                    self.cfg.resign_from) for c in (BLACK, WHITE)})
            if self.cfg.policy_only and not self.cfg.experience:
                g.random_at = int(rng.integers(0, self.size * self.size))
            g.learner = BLACK if index % 2 == 0 else WHITE
            self.games.append(g)
        self.seconds = 0.0

    @property
    def _nets(self) -> list[NetEvaluator]:
        return [self.evaluator] + ([self.opponent] if self.opponent is not None else [])

    @property
    def net_seconds(self) -> float:
        return sum(e.seconds for e in self._nets)

    @property
    def evaluations(self) -> int:
        return sum(e.positions for e in self._nets)

    @property
    def calls(self) -> int:
        return sum(e.calls for e in self._nets)

    # --- the step loop --------------------------------------------------------------------------

    def run(self) -> list[FinishedGame]:
        t0 = time.perf_counter()
        nets = [self.evaluator] + ([self.opponent] if self.opponent is not None else [])
        room = [e.leaves(len(self.games)) for e in nets]  # one row per game: its leaf (or position) of a step
        active = list(self.games)
        finished: list[FinishedGame] = []
        while active:
            batches: list[list[_Game]] = [[] for _ in nets]
            for g in active:
                if self.cfg.policy_only:
                    ready = self._prepare_policy(g)
                    if ready:
                        k = self._net_to_move(g)
                        row = len(batches[k])
                        nets[k].write(room[k], row, g.state)
                        if k == 0 and (g.record_next or self.cfg.experience):
                            g.root_planes = room[0].feats[row].copy()
                        batches[k].append(g)
                else:
                    ready = self._prepare(g, room[0], len(batches[0]))
                    if ready:
                        batches[0].append(g)
                if not ready and g.done:
                    finished.append(self._finish(g))
            for k, batch in enumerate(batches):
                if batch:
                    syms = None
                    if self.cfg.policy_only:  # drawn as the evaluator draws them, and recorded with the move
                        syms = nets[k].rng.integers(0, NUM_SYMMETRIES, size=len(batch)) if nets[k].symmetries \
                            else np.zeros(len(batch), dtype=np.int64)
                        for g, sym in zip(batch, syms, strict=True):
                            g.symmetry = int(sym)
                    probs, values = nets[k].evaluate_leaves(room[k], len(batch), syms)
                    for i, g in enumerate(batch):
                        self._absorb(g, probs[i: i + 1], values[i: i + 1], learner=k == 0)
            active = [g for g in active if not g.done]
        self.seconds += time.perf_counter() - t0
        return sorted(finished, key=lambda f: f.index)

    def _net_to_move(self, g: _Game) -> int:
        """0: the agent is to move; 1: the opponent network (the games' other colour, when there is one)."""
        return 0 if self.opponent is None or g.state.to_play == g.learner else 1

    # --- one game ------------------------------------------------------------------------------

    def _prepare(self, g: _Game, leaves: Leaves, row: int) -> bool:
        """Advance ``g`` until it needs an evaluation (written into row ``row`` of ``leaves``: True) or ends
        (False). Search games only: :meth:`run` advances policy games by :meth:`_prepare_policy`."""
        search, cfg = g.search, self.cfg
        while True:
            if not g.searching:  # a new move
                if self._game_over(g):
                    return False
                moves = candidates(g.state, cfg.tree.pass_rule)
                if moves.size == 1:  # only pass: nothing to search
                    self._play(g, int(moves[0]), "forced")
                    continue
                g.full = bool(g.rng.random() < cfg.full_fraction)
                search.set_position(g.state)
                if g.full or not cfg.tree.reuse:
                    search.clear_tree()  # a recorded search starts afresh: its target is the search's own
                new = cfg.tree.visits if g.full else cfg.fast_visits
                search.begin(search.root_visits + new + (0 if search.root_visits else 1), noise=g.full)
                g.searching = True
            if search.finished:
                self._decide(g)
                continue
            if search.gather(leaves, row, 1):
                g.pending = True
                return True

    def _absorb(self, g: _Game, probs: np.ndarray, values: np.ndarray, learner: bool = True) -> None:
        g.pending = False
        if self.cfg.policy_only:
            self._absorb_policy(g, probs[0], float(values[0]), learner)
        else:
            g.search.absorb(probs, values)

    def _decide(self, g: _Game) -> None:
        """The search is done: record the position (full search), check resignation, play the move."""
        search, cfg, state = g.search, self.cfg, g.state
        tree = search.tree
        kids = tree.children(0)
        moves = tree.move[kids].astype(np.int64)
        target = search.policy_target()
        root_value = search.root_value()
        if state.move_number < cfg.sampled_moves:  # from the target, never a pass into a loss
            choice = int(moves[C.sample(C.play_on(target, search.losing_passes(kids)), 1.0, g.rng)])
        else:
            choice = C.choose(search, 0.0, g.rng)
        if g.full:
            policy = np.zeros(self.nm, dtype=np.float32)
            policy[moves] = target
            g.rows.append((self.encoder.encode(state), state.move_number, state.to_play, choice, policy, root_value,
                           1.0))
        g.searching = False
        # resignation: the search's value for the player to move
        mover = state.to_play
        if g.resignation[mover].update(root_value, state.move_number):
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

    def _game_over(self, g: _Game) -> bool:
        if g.resigned_by or g.state.passes >= 2 or g.state.move_number >= self.cfg.move_cap:
            g.done = True
        return g.done

    # --- policy-only games ------------------------------------------------------------------------

    def _prepare_policy(self, g: _Game) -> bool:
        """Advance a policy game to its next move that needs the network (True; :meth:`run` writes the position for
        the network to move) or to its end (False)."""
        state = g.state
        while True:
            if self._game_over(g):
                return False
            moves = candidates(state, self.cfg.tree.pass_rule)
            if state.move_number == g.random_at:  # AlphaGo's one random move, then record the next position
                self._play(g, int(moves[g.rng.integers(0, moves.size)]), "random")
                g.record_next = True
                continue
            if moves.size == 1:
                self._play(g, int(moves[0]), "forced")
                g.record_next = False
                continue
            g.moves = moves
            return True

    def _absorb_policy(self, g: _Game, probs: np.ndarray, value: float, learner: bool = True) -> None:
        if self._policy_game_ends(g, probs, value, (self.agent if learner else self.opponent.agent).has_value):
            return
        moves = g.moves
        pri = probs[moves]
        total = pri.sum()
        pri = pri / total if total > 0 and np.isfinite(total) else np.full(moves.size, 1.0 / moves.size)
        cfg = self.cfg
        q = C.behaviour(pri, cfg.temperature, cfg.clip, cfg.random_moves)  # the value recipe: clip 0, no random share
        i = int(g.rng.choice(q.size, p=q))
        choice = int(moves[i])
        # experience: every move of the agent's (the opponent network's are the environment, not recorded);
        # AlphaGo's value recipe: the one position after the random move, its policy target weighted 0
        if learner and (cfg.experience or g.record_next):
            policy = None
            if not cfg.experience:
                policy = np.zeros(self.nm, dtype=np.float32)
                policy[choice] = 1.0
            g.rows.append((g.root_planes, g.state.move_number, g.state.to_play, choice, policy, value, 0.0,
                           float(q[i]), moves, g.symmetry))
            g.record_next = False
        self._play(g, choice, "")

    def _policy_game_ends(self, g: _Game, probs: np.ndarray, value: float, has_value: bool) -> bool:
        """A policy game ends as a policy player's game does (:mod:`gotk.play.players`): the mover resigns when
        its network's value has stayed below the resignation threshold (self-play's rule, in the games whose
        resignation is enabled), or passes when passing now wins after the opponent's pass or the game is settled
        (:func:`gotk.search.choice.settled`: its pass as probable as any sensible move, the count agreeing with
        its value; a network without a value head never resigns and passes a settled game the count does not
        lose). Neither is recorded: no move was drawn. True when the move is made (or the game over)."""
        state, mover = g.state, g.state.to_play
        if has_value and g.resignation[mover].update(value, state.move_number):
            if g.resign_enabled:
                g.resigned_by = mover  # the game is over: its next advance finishes it (_game_over)
                g.comments.append(f"v={value:.3f} resigns")
                return True
            if g.would_resign == 0:
                g.would_resign = mover
        board = g.moves[g.moves != state.pass_point]
        if board.size == 0:
            return False
        best = float(probs[board].max())
        if passing_wins(state) or C.settled(state, float(probs[state.pass_point]), best,
                                            (lambda _: value) if has_value else None):
            self._play(g, state.pass_point, f"v={value:.3f} pass")
            g.record_next = False
            return True
        return False

    # --- the end of a game --------------------------------------------------------------------------

    def _finish(self, g: _Game) -> FinishedGame:
        state = g.state
        score, owner = state.ownership_final()  # the count the search's terminal values use
        score = float(score)
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
            capped=not g.resigned_by and state.passes < 2,
            ownership=owner.reshape(self.size, self.size), resign_enabled=g.resign_enabled,
            would_resign=g.would_resign, planes=planes,
            move_number=np.array([r[1] for r in g.rows], dtype=np.int32),
            to_play=np.array([1 if r[2] == BLACK else -1 for r in g.rows], dtype=np.int8),
            label=np.array([r[3] for r in g.rows], dtype=np.int16),
            policy=np.stack([r[4] for r in g.rows]) if n and not self.cfg.experience
            else np.zeros((0, self.nm), dtype=np.float32),
            root_value=np.array([r[5] for r in g.rows], dtype=np.float32),
            weight=np.array([r[6] for r in g.rows], dtype=np.float32),
            play_prob=np.array([r[7] for r in g.rows], dtype=np.float32) if self.cfg.policy_only else None,
            choices=self._choices(g.rows) if self.cfg.policy_only else None,
            symmetry=np.array([r[9] for r in g.rows], dtype=np.int8) if self.cfg.policy_only else None)

    def _choices(self, rows: list[tuple]) -> np.ndarray:
        """Bool ``(rows, size²+1)``: the moves each recorded row's player chose its move from."""
        out = np.zeros((len(rows), self.nm), dtype=bool)
        for i, r in enumerate(rows):
            out[i, r[8]] = True
        return out


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


__all__ = ["FinishedGame", "SelfPlayBatch", "check_agent"]
