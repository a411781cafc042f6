"""KataGo's superko bans (feature 6) and the per-row board planes, compiled (numba) on gotk's flat board
arrays. The pass-alive area (features 18-19) is :func:`gotk.game.scoring.calculate_area`, the rules' own.

Written from KataGo's ``cpp/game/boardhistory.cpp`` (superko-banned points); see docs/katago-export.md.
Ladders are in :mod:`gotk.export.katago_ladders`.
"""

from __future__ import annotations

import numpy as np

from gotk.game import kernels as K
from gotk.game import rules as R
from gotk.jit import compiled, kernel


@compiled
def superko_banned(t, pla, suicide_legal, situational, player_key, history, out):
    """``out[p] = 1`` where ``pla`` playing ``p`` is pseudo-legal (empty, not the simple-ko point, not an
    illegal suicide) but recreates a position in ``history`` (sorted ko hashes: the position hash,
    xor ``player_key[c]`` of the player to move when ``situational``)."""
    e = K.Engine(*t)  # the position's arrays as a plain tuple: numba's fast dispatch from Python
    board, head, nxt, libs, meta, hashv, nbr, zob = e.board, e.head, e.nxt, e.libs, e.meta, e.hashv, e.nbr, e.zob
    n = board.shape[0]
    opp = 3 - pla
    heads = np.empty(4, dtype=np.int32)
    for p in range(n):
        out[p] = 0
        if board[p] != 0 or p == meta[K.M_KO]:
            continue
        h = hashv[0] ^ zob[pla, p]
        if K.check_arrays(board, head, libs, meta, nbr, np.int64(p), np.int64(pla), False) == K.SUICIDE:
            # single-stone suicide is never legal in KataGo; multi-stone only if the rules say so
            nh = R.neighbour_strings(board, head, nbr, p, pla, heads)
            if nh == 0 or not suicide_legal:
                continue
            h ^= zob[pla, p]
            for i in range(nh):
                h ^= R.string_key(zob, nxt, pla, heads[i])
        else:
            nh = R.with_liberties(libs, heads, R.neighbour_strings(board, head, nbr, p, opp, heads), 1)
            for i in range(nh):
                h ^= R.string_key(zob, nxt, opp, heads[i])
        if situational:
            h ^= player_key[opp]
        i = np.searchsorted(history, h)
        if i < history.shape[0] and history[i] == h:
            out[p] = 1


@kernel
def fill_board_planes(board, head, libs, meta, pla, pos19, laddered, prev, prevprev, working_opp, area, use_area,
                      out):
    """Spatial features 0-6 (simple-ko part), 14-17 and 18-19 of one row into ``out[22, 361]`` (zeroed here)."""
    for c in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[c, j] = 0
    opp = 3 - pla
    for p in range(board.shape[0]):
        q = pos19[p]
        out[0, q] = 1
        v = board[p]
        if v != 0:
            out[1 if v == pla else 2, q] = 1
            lb = libs[head[p]]
            if 1 <= lb <= 3:
                out[2 + lb, q] = 1
        out[14, q] = laddered[p]
        out[15, q] = prev[p]
        out[16, q] = prevprev[p]
        out[17, q] = working_opp[p]
        if use_area:
            if area[p] == pla:
                out[18, q] = 1
            elif area[p] == opp:
                out[19, q] = 1
    ko = meta[K.M_KO]
    if ko >= 0:
        out[6, pos19[ko]] = 1
