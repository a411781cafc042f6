"""KataGo's pass-alive area (features 18-19), superko bans (feature 6) and the per-row board planes,
compiled (numba) on gotk's flat board arrays.

Written from KataGo's ``cpp/game/board.cpp`` (``calculateArea``, ``calculateAreaForPla``: Benson's
algorithm — vital regions, repeated removal of chains with fewer than two — then territory marking) and
``cpp/game/boardhistory.cpp`` (superko-banned points); see docs/katago-export.md. Ladders are in
:mod:`gotk.export.katago_ladders`.
"""

from __future__ import annotations

import numpy as np

from gotk.game import kernels as K
from gotk.jit import compiled, kernel


@compiled
def area_for_pla(board, head, nxt, nbr, pla, suicide_legal, safe_big, unsafe_big, result):
    """KataGo's ``calculateAreaForPla``: mark ``pla``'s pass-alive chains (Benson) and the regions they
    own in ``result`` (and, with ``safe_big`` / ``unsafe_big``, big empty regions bordered by ``pla``)."""
    n = board.shape[0]
    opp = 3 - pla
    region = np.full(n, -1, dtype=np.int32)
    vital = np.empty((n, 4), dtype=np.int32)  # per region: pla chain heads it may be vital for
    nvital = np.zeros(n, dtype=np.int32)
    internal = np.zeros(n, dtype=np.int32)
    borders_pla = np.zeros(n, dtype=np.uint8)
    contains_opp = np.zeros(n, dtype=np.uint8)
    stack = np.empty(n, dtype=np.int32)
    nreg = 0
    for start in range(n):
        if region[start] >= 0 or board[start] != 0:
            continue
        r = nreg
        nreg += 1
        nv = 0
        for k in range(4):
            q = nbr[start, k]
            if q < 0:
                break
            if board[q] == pla:
                hq = head[q]
                dup = False
                for i in range(nv):
                    if vital[r, i] == hq:
                        dup = True
                if not dup:
                    vital[r, nv] = hq
                    nv += 1
        top = 0
        stack[top] = start
        top += 1
        region[start] = r
        while top > 0:
            top -= 1
            x = stack[top]
            if suicide_legal or board[x] == 0:
                keep = 0
                for i in range(nv):
                    hv = vital[r, i]
                    adj = False
                    for k in range(4):
                        q = nbr[x, k]
                        if q < 0:
                            break
                        if board[q] == pla and head[q] == hv:
                            adj = True
                    if adj:
                        vital[r, keep] = hv
                        keep += 1
                nv = keep
            is_internal = True
            for k in range(4):
                q = nbr[x, k]
                if q < 0:
                    break
                if board[q] == pla:
                    is_internal = False
            if is_internal:
                if internal[r] < 2:
                    internal[r] += 1
            else:
                borders_pla[r] = 1
            if board[x] == opp:
                contains_opp[r] = 1
            for k in range(4):
                q = nbr[x, k]
                if q < 0:
                    break
                if board[q] != pla and region[q] < 0:
                    region[q] = r
                    stack[top] = q
                    top += 1
        nvital[r] = nv
    # Benson: drop chains with fewer than two vital regions until nothing changes
    killed = np.zeros(n, dtype=np.uint8)  # by chain head
    bad_region = np.zeros(n, dtype=np.uint8)  # borders a chain that is not pass-alive
    count = np.zeros(n, dtype=np.int32)
    while True:
        for p in range(n):
            count[p] = 0
        for r in range(nreg):
            if bad_region[r]:
                continue
            for i in range(nvital[r]):
                count[vital[r, i]] += 1
        changed = False
        for p in range(n):
            if board[p] != pla or head[p] != p or killed[p]:
                continue
            if count[p] < 2:
                killed[p] = 1
                changed = True
                s = p
                while True:
                    for k in range(4):
                        q = nbr[s, k]
                        if q < 0:
                            break
                        if board[q] != pla and region[q] >= 0:
                            bad_region[region[q]] = 1
                    s = nxt[s]
                    if s == p:
                        break
        if not changed:
            break
    for p in range(n):
        if board[p] == pla and not killed[head[p]]:
            result[p] = pla
    for p in range(n):
        r = region[p]
        if r < 0:
            continue
        mark = internal[r] <= 1 and borders_pla[r] and not bad_region[r]
        mark = mark or (safe_big and borders_pla[r] and not contains_opp[r] and not bad_region[r])
        mark = mark or (unsafe_big and borders_pla[r] and not contains_opp[r])
        if mark:
            result[p] = pla


@compiled
def calculate_area(board, head, nxt, nbr, suicide_legal, non_pass_alive_stones, safe_big, unsafe_big, result):
    """KataGo's ``calculateArea``: 0 / 1 (black) / 2 (white) per point."""
    for p in range(board.shape[0]):
        result[p] = 0
    area_for_pla(board, head, nxt, nbr, 1, suicide_legal, safe_big, unsafe_big, result)
    area_for_pla(board, head, nxt, nbr, 2, suicide_legal, safe_big, unsafe_big, result)
    if non_pass_alive_stones:
        for p in range(board.shape[0]):
            if result[p] == 0:
                result[p] = board[p]


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
        nh = 0
        any_empty = False
        captures = False
        own_alive = False
        own = False
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            v = board[q]
            if v == 0:
                any_empty = True
            elif v == opp and libs[head[q]] == 1:
                hq = head[q]
                dup = False
                for i in range(nh):
                    if heads[i] == hq:
                        dup = True
                if not dup:
                    heads[nh] = hq
                    nh += 1
                    s = hq
                    while True:
                        h ^= zob[opp, s]
                        s = nxt[s]
                        if s == hq:
                            break
                captures = True
            elif v == pla:
                own = True
                if libs[head[q]] > 1:
                    own_alive = True
        suicide = not any_empty and not captures and not own_alive
        if suicide:
            if not own or not suicide_legal:
                continue  # single-stone suicide is never legal in KataGo; multi-stone only if the rules say so
            h ^= zob[pla, p]
            nh = 0
            for k in range(4):
                q = nbr[p, k]
                if q < 0:
                    break
                if board[q] == pla:
                    hq = head[q]
                    dup = False
                    for i in range(nh):
                        if heads[i] == hq:
                            dup = True
                    if not dup:
                        heads[nh] = hq
                        nh += 1
                        s = hq
                        while True:
                            h ^= zob[pla, s]
                            s = nxt[s]
                            if s == hq:
                                break
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
