"""The methods of the actors-and-learner loop, as recipes: what the actors play and record, which objective the
learner applies, the learner's settings where the command line leaves them, and how a run is judged.

``gotk zero`` runs :data:`METHODS` ``["zero"]``; ``gotk rl --method`` the others. The loop, the options and the
command line ask a :class:`Method` what to do and never compare its name: a new method is one :class:`Method` in
:data:`METHODS` (and its objective in :data:`gotk.train.objectives.OBJECTIVES`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gotk.train.objectives import Objective

#: The learner's settings of a learner from experience where the command line leaves them: on-policy learning
#: uses each new move about once, soon after it was played, in short rounds
RL_DEFAULTS = {"reuse": 1.0, "window_rows": 8192, "min_rows": 4096, "train_steps": 32, "lr_schedule": "constant"}
#: Expert iteration's: the search's targets bear reuse as gotk zero's do, over a window of a few networks' games
EXIT_DEFAULTS = {"reuse": 2.0, "window_rows": 16384, "min_rows": 4096, "train_steps": 64, "lr_schedule": "constant"}


@dataclass(frozen=True)
class Method:
    """One method of the loop.

    ``objective``: the learner's (:data:`gotk.train.objectives.OBJECTIVES`); ``experience``: the actors play
    policy games recorded as experience (no search: the learner learns from the moves played and the results),
    else searched self-play with its targets; ``greedy``: the acting policy plays epsilon-greedy over its outputs
    (action values) unless a temperature is given; ``defaults``: the learner's settings where the command line
    leaves them (empty: :class:`~gotk.zero.options.ZeroOptions`' own); ``against_start``: the evaluation also
    plays each network against the run's first one (the book judges its learners so); ``raw_policy``: the
    evaluation plays the networks' raw policies (sampled at T = 1) unless ``--eval-visits`` asks for a search,
    since the raw policy is what the method improves; ``search_heads``: the heads its actors' search needs;
    ``bare_record``: its runs' ``zero.json`` leaves the learner-from-experience settings out (gotk zero's, as
    before they existed)."""

    name: str
    objective_name: str
    experience: bool
    summary: str
    greedy: bool = False
    defaults: dict = field(default_factory=dict)
    against_start: bool = False
    raw_policy: bool = False
    search_heads: tuple[str, ...] = ()
    bare_record: bool = False

    @property
    def objective(self) -> Objective:
        from gotk.train.objectives import objective  # torch: not at the command line's start-up

        return objective(self.objective_name)

    @property
    def init_heads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.search_heads + self.objective.heads))


#: Every method of the loop by name
METHODS: dict[str, Method] = {m.name: m for m in (
    Method("zero", "supervised", False, "searched self-play, AlphaZero's targets (gotk zero)",
           search_heads=("policy", "value"), bare_record=True),
    Method("pg", "policy-gradient", True, "policy gradient (REINFORCE; AlphaGo's RL policy)",
           defaults=RL_DEFAULTS, against_start=True, raw_policy=True),
    Method("ac", "actor-critic", True, "actor-critic (a policy and a value head)", defaults=RL_DEFAULTS,
           against_start=True, raw_policy=True),
    Method("q", "q-learning", True, "Q-learning (an action value per move, epsilon-greedy play)", greedy=True,
           defaults=RL_DEFAULTS, against_start=True, raw_policy=True),
    Method("exit", "expert-iteration", False, "expert iteration (the start's searched games; the search's "
           "policy as the raw policy's target)", defaults=EXIT_DEFAULTS, against_start=True, raw_policy=True,
           search_heads=("policy", "value")),
)}
#: The methods of ``gotk rl --method``: those that improve a start's raw policy
RL_METHODS = tuple(name for name, m in METHODS.items() if m.against_start)


def find_method(name: str, among: tuple[str, ...] | None = None) -> Method:
    """The registered :class:`Method` of ``name`` (``among``: the names allowed here); ValueError otherwise."""
    names = among if among is not None else tuple(METHODS)
    if name not in names:
        raise ValueError(f"--method must be one of {', '.join(names)}, not {name!r}")
    return METHODS[name]


__all__ = ["EXIT_DEFAULTS", "METHODS", "RL_DEFAULTS", "RL_METHODS", "Method", "find_method"]
