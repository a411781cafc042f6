"""Move choice for playing agents: a trained network's policy (:class:`PolicyPlayer`) or uniform random
sensible moves (:class:`RandomPlayer`), with the same eye, pass and resignation rules.

A *sensible* move (:func:`gotk.game.moves.sensible_moves`) is a legal board move that does not fill one of the
mover's own eyes. The eye is the rules' own eye (:func:`gotk.game.rules.is_own_eye`, also the alphago encoder's
sensibleness plane): an empty point whose on-board neighbours are all the mover's stones and whose on-board
diagonals hold at most one opponent stone in the centre, none on the edge or in a corner.

Pass rule (both players), checked in this order:

1. no sensible move is left → pass;
2. the opponent has just passed and passing now wins by the final count (:meth:`GameState.score_final`:
   area, komi included, the stones dead inside the opponent's pass-alive area and the passer's own homeless
   stones removed, from the mover's side) → pass, ending the game as a win;
3. (:class:`PolicyPlayer` only) no sensible move has policy probability ≥ ``pass_threshold``
   (the network puts its weight on passing) → pass;
4. (:class:`PolicyPlayer` only) the game is settled (:func:`gotk.search.choice.settled`): the policy's pass is at
   least as probable as its most probable sensible move and the final count gives the mover what its value head
   expects → pass. A sampled policy (a human-SL profile) thus ends its games as the players it learned from do.

Resignation (:class:`PolicyPlayer` only, and only when the agent has a value head): resign when the
value of the position for the mover has been below ``resign_threshold`` at ``resign_moves``
consecutive own moves (:class:`gotk.search.choice.Resignation`). ``resign_threshold=None`` turns it off.
The choice itself, sampling and the pass rules included, is :func:`gotk.search.choice.policy_choice`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from gotk.encoders import metadata_inputs as MI
from gotk.errors import GotkError
from gotk.game.moves import passing_wins, sensible_moves
from gotk.game.state import GameState
from gotk.search.choice import RESIGN, Resignation, policy_choice
from gotk.search.config import PLAYER_RESIGN_THRESHOLD


class Player(Protocol):
    """What GTP, analysis, matches and ``gotk serve`` ask of a player (:class:`RandomPlayer`, :class:`PolicyPlayer`,
    :class:`gotk.search.SearchPlayer`): ``choose`` answers a flat index (pass = ``size*size``) or :data:`RESIGN`.
    ``board_size`` is the one size its network plays (None: any); ``search`` and ``clock`` are the searching
    player's tree and time budget (None for a player that does not search)."""

    name: str
    board_size: int | None
    has_value: bool
    search: object | None
    clock: object | None

    def choose(self, state: GameState) -> int: ...

    def reset(self) -> None: ...

    def policy(self, state: GameState) -> np.ndarray: ...

    def value(self, state: GameState) -> float: ...


class RandomPlayer:
    """Uniformly random sensible moves; passes by rules 1 and 2 of the module docstring."""

    def __init__(self, seed: int | None = None, name: str = "gotk-random") -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.name = name
        self.has_value = False
        self.board_size: int | None = None
        self.search = None
        self.clock = None

    def reset(self) -> None:
        """Nothing to forget between games (the random stream continues)."""

    def policy(self, state: GameState) -> np.ndarray:
        """Uniform probabilities over the sensible moves (all on pass when there is none)."""
        probs = np.zeros(state.size * state.size + 1, dtype=np.float64)
        moves = sensible_moves(state)
        if moves.size:
            probs[moves] = 1.0 / moves.size
        else:
            probs[state.pass_point] = 1.0
        return probs

    def choose(self, state: GameState) -> int:
        moves = sensible_moves(state)
        if moves.size == 0 or passing_wins(state):
            return state.pass_point
        return int(moves[self.rng.integers(moves.size)])


class PolicyPlayer:
    """Plays an agent's policy (``agent.policy(state)``: probabilities over ``size*size+1`` moves) over
    its sensible moves: the most probable at ``temperature`` 0, else sampled from ``p ** (1/T)``.

    ``profile``: for an agent conditioned on metadata (trained with ``--metadata``), the human-SL profile it plays
    as (:func:`gotk.encoders.metadata_inputs.profile`: ``rank_3d``, ``preaz_5k``, ``proyear_1990`` ...): every
    position's metadata row is that profile's, seen from the player to move on this board. A conditioned agent needs
    one and an unconditioned agent takes none (:class:`~gotk.nets.AgentError`). The pass stays the player's own
    rule (no sensible move left, passing wins, or no move above ``pass_threshold``), not the human policy's, as
    KataGo's ``humanSLChosenMoveIgnorePass`` does by default.

    ``epsilon``: the share of moves drawn uniformly from the sensible ones instead (ε-greedy, as a Q-learning agent
    plays: its policy is the softmax of its action values, so the policy's best move is the best valued one;
    :mod:`gotk.train.objectives`); the pass rules 1 and 2 still come first."""

    def __init__(self, agent, temperature: float = 0.0, pass_threshold: float = 1e-3,
                 resign_threshold: float | None = PLAYER_RESIGN_THRESHOLD, resign_moves: int = 3,
                 seed: int | None = None, name: str | None = None, profile: str | None = None,
                 epsilon: float = 0.0) -> None:
        if temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0.0 <= epsilon <= 1.0:
            raise GotkError("bad_agent", f"--epsilon must be in 0..1, not {epsilon}")
        conditioned = bool(agent.num_metadata)
        if profile is not None and not conditioned:
            raise GotkError("bad_agent", "--profile: this agent is not conditioned on metadata (trained without "
                            "--metadata)")
        if profile is None and conditioned:
            raise GotkError("bad_agent", "this agent is conditioned on metadata (trained with --metadata): give "
                            "--profile, such as rank_3d (docs/human.md)")
        self.metadata = MI.profile(profile) if profile is not None else None
        self.agent = agent
        self.temperature = float(temperature)
        self.epsilon = float(epsilon)
        self.pass_threshold = float(pass_threshold)
        self.resign_threshold = resign_threshold
        self.resign_moves = max(1, int(resign_moves))
        self.resignation = Resignation(resign_threshold, self.resign_moves)
        self.rng = np.random.default_rng(seed)
        # a profile is part of who plays: match reports, GTP ``name`` and Elo tables tell profiles apart
        self.name = name or f"gotk-{agent.name}" + (f" {profile}" if profile else "")
        self.has_value = bool(agent.has_value)
        self.search = None
        self.clock = None
        self.last_value: float | None = None

    @property
    def board_size(self) -> int | None:
        return self.agent.board_size

    def reset(self) -> None:
        """Forget the resignation streak (call at the start of each game)."""
        self.resignation.reset()
        self.last_value = None

    def _policy_args(self) -> tuple:
        return () if self.metadata is None else (self.metadata,)

    def policy(self, state: GameState) -> np.ndarray:
        return self.agent.policy(state, *self._policy_args())

    def value(self, state: GameState) -> float:
        return float(self.agent.value(state, *self._policy_args()))

    def _should_resign(self, state: GameState) -> bool:
        if self.resign_threshold is None or not self.has_value:
            return False
        self.last_value = self.value(state)
        return self.resignation.update(self.last_value, state.move_number)

    def choose(self, state: GameState) -> int:
        if self._should_resign(state):
            return RESIGN
        if self.epsilon and self.rng.random() < self.epsilon:
            moves = sensible_moves(state)
            if moves.size and not passing_wins(state):
                return int(moves[self.rng.integers(moves.size)])
        return policy_choice(state, self.policy, self.temperature, self.rng, self.pass_threshold,
                             self.value if self.has_value else None)


def profile_temperature(temperature: float = 0.0, argmax: bool = False) -> float:
    """The temperature a player of a human-SL profile samples at: 1 (the conditioned policy as it is, as KataGo's
    human-SL play samples it), ``temperature`` instead when it is not 0, or 0 (the most probable move) with
    ``argmax``. ``gotk gtp/match --profile`` and ``gotk serve``'s play both follow it."""
    return 0.0 if argmax else temperature or 1.0


__all__ = ["RESIGN", "Player", "PolicyPlayer", "RandomPlayer", "profile_temperature"]
