"""The AlphaGo policy-network encoder (Silver et al. 2016, Extended Data Table 2): 48 bit planes.

Every plane is from the point of view of the player to move (``color``):

* 0–2 stone colour: player / opponent / empty; 3 ones; 4 zeros;
* 5 sensibleness: legal and not filling one of the player's own eyes. An own eye is an empty
  point whose on-board neighbours are all the player's stones and whose on-board diagonals hold
  at most one opponent stone (centre) or none (edge and corner);
* 6–13 turns since: ``move_no - placed[p]`` = 1..7 on planes 6..12, ≥8 and setup stones on 13;
* 14–21 liberties of the string through each stone: 1..7, ≥8;
* 22–29 liberties after move: for each legal move, of the new stone's string once captures are
  resolved: 1..7, ≥8;
* 30–37 capture size: for each legal move, opponent stones captured: 0..6, ≥7;
* 38–45 self-atari size: for each legal move leaving the new string with one liberty, its size:
  1..7, ≥8;
* 46 ladder capture: a legal move that reduces an adjacent 2-liberty opponent string to one
  liberty and wins the ladder that follows;
* 47 ladder escape: a legal move at the liberty of a player string in atari after which that
  string has ≥3 liberties, or 2 and the opponent has no working ladder against it;
* 48 (option ``player_plane``): all ones when black is to move.

"Legal" always means empty, not ko-forbidden for the player and not suicide, whatever the game's
rules. The move planes are computed from the neighbouring strings without playing (union of the
empty neighbours, the merged strings' liberties and the freed points next to the new string); only
ladders are read by playing, on a scratch copy (:mod:`gotk.encoders.ladders`, which defines the
ladder semantics). Option ``ladders=False`` leaves planes 46–47 zero (benchmarks time the ladder
reading apart). The planes but 46–47 and the list of ladders to read are :mod:`gotk.encoders.alphago_planes`'
(:func:`local_planes`, shared with the ladder cache). ``encode_game`` is the generic compiled loop of
:mod:`gotk.encoders.game_loop`.
"""

from __future__ import annotations

from gotk.encoders import ladder_cache as LC
from gotk.encoders import ladders as LD
from gotk.encoders.alphago_planes import (
    NUM_PLANES,
    P_CAPTURE,
    P_EMPTY,
    P_LADDER_CAPTURE,
    P_LADDER_ESCAPE,
    P_LIBS,
    P_LIBS_AFTER,
    P_ONES,
    P_OPPONENT,
    P_PLAYER,
    P_PLAYER_COLOR,
    P_SELF_ATARI,
    P_SENSIBLE,
    P_TURNS,
    P_ZEROS,
    local_planes,
    make_lists,
    new_lists,
)
from gotk.encoders.game_loop import FillEncoder
from gotk.jit import compiled, inline_kernel


def plane_names(player_plane: bool = False) -> list[str]:
    """Names of the 48 (or 49) planes in order."""
    names = ["stone_player", "stone_opponent", "stone_empty", "ones", "zeros", "sensibleness"]
    names += [f"turns_since_{k}" for k in range(1, 8)] + ["turns_since_8plus"]
    names += [f"liberties_{k}" for k in range(1, 8)] + ["liberties_8plus"]
    names += [f"liberties_after_{k}" for k in range(1, 8)] + ["liberties_after_8plus"]
    names += [f"capture_size_{k}" for k in range(0, 7)] + ["capture_size_7plus"]
    names += [f"self_atari_size_{k}" for k in range(1, 8)] + ["self_atari_size_8plus"]
    names += ["ladder_capture", "ladder_escape"]
    if player_plane:
        names.append("player_is_black")
    return names


@compiled
def fill_planes(out, e, color, ladders):
    """Write every plane into zeroed ``out`` (C, N); ladder planes (46–47) only with ``ladders``.

    One pass over the points computes the local planes and collects the few moves that need ladder
    reading (:func:`local_planes`); a second step reads every one of those ladders on a scratch
    copy. This is the uncached reference of :mod:`gotk.encoders.ladder_cache`.
    """
    n = e.board.shape[0]
    # (move, target) pairs to read as ladder captures, moves to read as ladder escapes
    cap_move, cap_target, esc_move = make_lists(n)
    ncap, nesc = local_planes(out, e, color, ladders, cap_move, cap_target, esc_move)
    if ncap + nesc > 0:
        scr = LD.make_scratch(e, LD.max_plies(n))
        LD.load_position(scr, e)
        for i in range(ncap):
            p = cap_move[i]
            if out[P_LADDER_CAPTURE, p] == 0 and LD.ladder_capture(scr, p, color, cap_target[i]):
                out[P_LADDER_CAPTURE, p] = 1
        for i in range(nesc):
            p = esc_move[i]
            if LD.ladder_escape(scr, p, color):
                out[P_LADDER_ESCAPE, p] = 1


@compiled
def alphago_fill(out, e, color):
    """Fill zeroed ``out`` (48 or 49, N) for ``color`` to move; plane 48 if ``out`` has 49 rows."""
    fill_planes(out, e, color, True)


@compiled
def alphago_fill_noladders(out, e, color):
    """:func:`alphago_fill` with planes 46–47 left zero."""
    fill_planes(out, e, color, False)


@inline_kernel
def fill_noladders_lists(out, e, color, lists):
    """:func:`alphago_fill_noladders` with the move lists made once per game (``lists`` from
    :func:`new_lists`, the game loop's per-game state), so that the loop allocates nothing per position."""
    local_planes(out, e, color, False, lists[0], lists[1], lists[2])


class AlphaGoEncoder(FillEncoder):
    """48 AlphaGo planes (49 with ``player_plane``); ``ladders=False`` skips ladder reading.

    ``encode_game`` reads ladders through the cache of :mod:`gotk.encoders.ladder_cache` (one per
    thread, same planes); ``cache_ladders=False`` (not an option of the format) reads every ladder afresh.
    """

    name = "alphago"
    version = 1
    dtype = "bit"
    compile_ahead = True  # its own kernels are most of a first run's compile

    def __init__(self, board_size: int = 19, player_plane: bool = False, ladders: bool = True, *,
                 cache_ladders: bool = True) -> None:
        super().__init__(board_size, player_plane=bool(player_plane), ladders=bool(ladders))
        self.player_plane = bool(player_plane)
        self.ladders = bool(ladders)
        self.names = tuple(plane_names(self.player_plane))
        self.fill = alphago_fill if self.ladders else alphago_fill_noladders
        if self.ladders and cache_ladders:
            self.game_fill = LC.fill_cached
            self.state_maker = LC.game_cache
        elif not self.ladders:
            self.game_fill = fill_noladders_lists
            self.state_maker = new_lists


__all__ = ["NUM_PLANES", "P_CAPTURE", "P_EMPTY", "P_LADDER_CAPTURE", "P_LADDER_ESCAPE", "P_LIBS", "P_LIBS_AFTER",
           "P_ONES", "P_OPPONENT", "P_PLAYER", "P_PLAYER_COLOR", "P_SELF_ATARI", "P_SENSIBLE", "P_TURNS", "P_ZEROS",
           "AlphaGoEncoder", "alphago_fill", "alphago_fill_noladders", "fill_noladders_lists", "fill_planes",
           "local_planes", "make_lists", "new_lists", "plane_names"]
