"""Human-SL profiles in ``gotk serve``: an agent conditioned on metadata (trained with ``--metadata``, docs/human.md)
shows and plays the policy of a named profile (:func:`gotk.encoders.metadata_inputs.profile`: ``rank_3d``,
``preaz_5k``, ``proyear_1990`` ...), or of a dataset position's recorded metadata row.

``/api/analyse`` takes ``profile`` and ``compare`` (a second profile): a conditioned agent's result is the policy
as ``profile`` (or as the position's recorded row when no profile is given and the dataset has the metadata
column) and, with ``compare``, the same for the second profile and the moves whose probability changes most
between the two. Unconditioned agents ignore profiles and say so. ``/api/play`` takes ``profile`` (with ``seed``
and ``argmax``) for a conditioned agent's move, chosen by :class:`gotk.play.players.PolicyPlayer`, as ``gotk gtp
--profile`` chooses it. A conditioned agent does not search, as ``gotk gtp`` refuses ``--visits`` with a profile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gotk import coords
from gotk.encoders import metadata_inputs as MI
from gotk.errors import GotkError
from gotk.game.state import GameState
from gotk.play.factory import policy_player
from gotk.play.players import PolicyPlayer
from gotk.serve import agents as A
from gotk.serve.data import ServeError
from gotk.serve.draw import Board, to_svg

NEED_PROFILE = "conditioned agent: choose a profile (e.g. rank_3d)"
IGNORED = "not conditioned: profile ignored"
NO_SEARCH = ("no search: an agent conditioned on metadata plays its policy alone, as a profile (gotk gtp refuses "
             "--visits with --profile)")
RECORDED = "recorded"  # the profile of a dataset position's own metadata row


def profile_field(req: dict, name: str) -> str | None:
    """A request's profile name ``name`` (None when absent or empty), checked by
    :func:`gotk.encoders.metadata_inputs.profile`: 400 with its one-line message for a name it does not know."""
    value = req.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ServeError(400, f"{name} must be str, got {str(value)[:40]!r}")
    try:
        MI.profile(value)
    except GotkError as e:
        raise ServeError(400, str(e)) from None
    return value


def request_profiles(req: dict) -> tuple[str | None, str | None]:
    """``(profile, compare)`` of an analyse request, both checked; ``compare`` needs ``profile``."""
    profile, compare = profile_field(req, "profile"), profile_field(req, "compare")
    if compare is not None and profile is None:
        raise ServeError(400, "compare needs a profile to compare with: give profile too")
    return profile, compare


def policy_view(state: GameState, probs: np.ndarray, top: int, last_move: int | None) -> dict:
    """A policy's heat map (its ``top`` moves, at most 5, written on the board) and its pass probability."""
    return {"svg": to_svg(Board(state.size, stones=state.board.copy(), heat=probs, top=min(top, 5),
                                last_move=last_move)),
            "pass": round(float(probs[-1]), 6)}


def policy_diff(probs: np.ndarray, other: np.ndarray, size: int, top: int) -> list[dict]:
    """The ``top`` moves (pass included) whose probability changes most from ``probs`` to ``other``, largest change
    first (ties by move index): each move with both probabilities and the change (``other - probs``)."""
    change = np.asarray(other, np.float64) - np.asarray(probs, np.float64)
    order = np.lexsort((np.arange(change.size), -np.abs(change)))[:top]
    return [{"move": coords.to_gtp(int(p), size), "prob": round(float(probs[p]), 6),
             "compare_prob": round(float(other[p]), 6), "change": round(float(change[p]), 6)}
            for p in order if change[p] != 0]


def conditioned_result(slot: A.AgentSlot, state: GameState, top: int, features, encoder, recorded: np.ndarray | None,
                       profile: str | None, compare: str | None, last_move: int | None) -> dict:
    """A conditioned agent's analyse result: its policy, top moves and value as ``profile`` (else as the position's
    ``recorded`` metadata row; neither: an error asking for a profile) and, with ``compare``, a ``compare`` block
    for that profile and the ``diff`` between the two."""
    if profile is None and recorded is None:
        return {"agent": slot.ident, "name": slot.name, "error": NEED_PROFILE}
    res = A.analyse(slot, state, top, features, encoder, profile if profile is not None else recorded)
    probs = res.pop("policy")
    res.update(policy_view(state, probs, top, last_move), uniform=False,
               profile=profile if profile is not None else RECORDED)
    if compare is not None:
        other = A.analyse(slot, state, top, features, encoder, compare)
        other_probs = other.pop("policy")
        res["compare"] = {"profile": compare, "top": other["top"], "value": other["value"],
                          **policy_view(state, other_probs, top, last_move)}
        res["diff"] = policy_diff(probs, other_probs, state.size, top)
    res["profiles"] = [res["profile"]] + ([compare] if compare is not None else [])
    return res


@dataclass(frozen=True)
class PlayProfile:
    """A play request's profile for a conditioned agent: the ``profile`` name, ``argmax`` (the most probable move
    instead of a sample) and the ``seed`` of the sampling (None: a fresh draw)."""

    profile: str
    argmax: bool = False
    seed: int | None = None

    def player(self, slot: A.AgentSlot, state: GameState) -> PolicyPlayer:
        """The :class:`~gotk.play.players.PolicyPlayer` of this profile for the agent's move in ``state``: it samples
        at the profile's temperature (:func:`~gotk.play.players.profile_temperature`), from a generator seeded with
        the seed and the move number, so the same seed and moves give the same move and each move draws anew."""
        seed = None if self.seed is None else int(np.random.SeedSequence([self.seed, state.move_number])
                                                  .generate_state(1)[0])
        return policy_player(slot.agent, seed=seed, resign=False, profile=self.profile, profile_argmax=self.argmax)


def play_profile(slot: A.AgentSlot, req: dict) -> tuple[PlayProfile | None, dict]:
    """A play request's ``profile``, ``argmax`` and ``seed``, checked → ``(PlayProfile or None, what the reply
    says)``: a conditioned agent needs a profile (400 without one); any other agent plays with its own player
    (None), and the reply notes a profile it was given."""
    profile = profile_field(req, "profile")
    argmax, seed = req.get("argmax", False), req.get("seed")
    if not isinstance(argmax, bool):
        raise ServeError(400, f"argmax must be bool, got {str(argmax)[:40]!r}")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 63):
        raise ServeError(400, f"seed must be an integer 0..2^63-1, got {str(seed)[:40]!r}")
    if not slot.conditioned:
        return None, ({"profile_note": IGNORED} if profile is not None else {})
    if profile is None:
        raise ServeError(400, f"{NEED_PROFILE} to play against {slot.name!r}")
    return PlayProfile(profile, argmax, seed), {"profile": profile}


__all__ = ["IGNORED", "NEED_PROFILE", "NO_SEARCH", "RECORDED", "PlayProfile", "conditioned_result", "play_profile",
           "policy_diff", "policy_view", "profile_field", "request_profiles"]
