"""The fast rollout policy's features: AlphaGo's linear softmax over local patterns and tactical features, computed
on the compiled engine's strings (:class:`~gotk.game.kernels.Engine`) by the same kernels when it is trained
(:mod:`gotk.train.rollout`), evaluated, and played inside a playout (:mod:`gotk.game.playouts`).

A move ``p`` of the player ``me`` scores the sum of the weights of its features; its probability is the softmax of
the scores over the legal moves. The features (one flat weight vector, :data:`N_WEIGHTS`, at these offsets):

* **pattern** (:data:`OFF_PAT`): the 3×3 neighbourhood of ``p`` — each orthogonal neighbour off the board, empty, or
  a stone of ``me`` / the opponent whose string has 1, 2 or ≥3 liberties; each diagonal one off, empty, ``me``'s or
  the opponent's — reduced over the board's eight symmetries (AlphaGo's "non-response pattern" with liberties);
* **line** (:data:`OFF_LINE`): the distance of ``p`` from the nearest edge (0..5, more counts as 5);
* **response** (:data:`OFF_RESP`): ``p`` within the 12-point diamond of the opponent's last move: where in it, with
  the colours of ``p``'s 3×3 neighbourhood, reduced over the symmetries jointly (AlphaGo's "response pattern");
* **previous own move** (:data:`OFF_PREV`): ``p`` within the diamond of the player's own move before that: next to
  it, diagonal to it, or two points away;
* **tactics** (:data:`OFF_TAC`): ``p`` is a liberty of a string next to the last move (or the last move's own) with
  1 or 2 liberties: whose string (``me``'s, the opponent's), its liberties (1: capture or escape from atari, 2:
  atari or extension) and its size (1, 2, ≥3 stones) — AlphaGo's "save atari", "capture" and "neighbour"
  features of the last move.

The pattern and line features are the *static* part of a move's score: they change only where a move changed the
board or a string's liberty count, so a playout keeps them per point and updates the points a move touched
(:func:`static_logit`); the rest depends on the last two moves and is added for the few points near them
(:func:`local_features`).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from gotk.jit import compiled, internal_kernel

N_PAT = 1 << 20  # 4 orthogonal codes of 3 bits, 4 diagonal codes of 2 bits
N_RESP = 12 << 16  # diamond position x 8 colour codes of 2 bits
OFF_PAT = 0
OFF_RESP = OFF_PAT + N_PAT
OFF_PREV = OFF_RESP + N_RESP
OFF_TAC = OFF_PREV + 3
OFF_LINE = OFF_TAC + 12
N_WEIGHTS = OFF_LINE + 6
#: where the weights of each feature start, and how many (agent.json of a rollout policy records them)
LAYOUT = {"pattern": [OFF_PAT, N_PAT], "response": [OFF_RESP, N_RESP], "previous": [OFF_PREV, 3],
          "tactics": [OFF_TAC, 12], "line": [OFF_LINE, 6]}
VERSION = 1
MAX_LOCAL = 64  # (point, feature) pairs of the local features at most: 24 diamond points, 5 strings x 2 liberties

# the offsets: 4 orthogonal (N, E, S, W), 4 diagonal (NE, SE, SW, NW), the diamond's 4 points at distance 2
OFFSETS = ((-1, 0), (0, 1), (1, 0), (0, -1), (-1, 1), (1, 1), (1, -1), (-1, -1), (-2, 0), (0, 2), (2, 0), (0, -2))
_DR = np.array([o[0] for o in OFFSETS], dtype=np.int64)
_DC = np.array([o[1] for o in OFFSETS], dtype=np.int64)


def _symmetry_perms() -> np.ndarray:
    """``perm[t, k]``: where offset ``k`` goes under symmetry ``t`` (four rotations, each mirrored or not)."""
    out = np.zeros((8, 12), dtype=np.int64)
    for t in range(8):
        for k, (dr, dc) in enumerate(OFFSETS):
            r, c = dr, dc
            if t & 4:
                c = -c
            for _ in range(t & 3):
                r, c = c, -r
            out[t, k] = OFFSETS.index((r, c))
    return out


PERMS = _symmetry_perms()


@compiled
def _canon_tables(perms):
    """The smallest key of each pattern key's eight symmetric images (patterns, then responses)."""
    pat = np.empty(N_PAT, dtype=np.int32)
    codes = np.zeros(8, dtype=np.int64)
    for key in range(N_PAT):
        for k in range(4):
            codes[k] = (key >> (3 * k)) & 7
            codes[4 + k] = (key >> (12 + 2 * k)) & 3
        best = key
        for t in range(1, 8):
            v = 0
            for k in range(4):
                v |= codes[k] << (3 * perms[t, k])
                v |= codes[4 + k] << (12 + 2 * (perms[t, 4 + k] - 4))
            if v < best:
                best = v
        pat[key] = best
    resp = np.empty(N_RESP, dtype=np.int32)
    for key in range(N_RESP):
        rel = key >> 16
        for k in range(8):
            codes[k] = (key >> (2 * k)) & 3
        best = key
        for t in range(1, 8):
            v = perms[t, rel] << 16
            for k in range(8):
                v |= codes[k] << (2 * perms[t, k])
            if v < best:
                best = v
        resp[key] = best
    return pat, resp


@cache
def canon_tables() -> tuple[np.ndarray, np.ndarray]:
    """``(pattern, response)``: each raw key → the key its weight is stored under (computed once a process)."""
    pat, resp = _canon_tables(PERMS)
    pat.setflags(write=False)
    resp.setflags(write=False)
    return pat, resp


@internal_kernel
def colour_key(pkey):
    """The colours alone of a pattern key (2 bits a neighbour: off, empty, the mover's, the opponent's), the 8
    neighbours in :data:`OFFSETS` order."""
    ckey = 0
    for k in range(4):
        code = (pkey >> (3 * k)) & 7
        ckey |= (code if code < 2 else (2 if code < 5 else 3)) << (2 * k)
    return ckey | (((pkey >> 12) & 0xFF) << 8)


@internal_kernel
def codes_at(board, head, libs, size, p, me):
    """``(pattern key, colour key)`` of the empty point ``p`` for the player ``me`` (module docstring)."""
    kb, kw = pattern_keys(board, head, libs, size, p)
    pkey = kb if me == 1 else kw
    return pkey, colour_key(pkey)


@internal_kernel
def pattern_keys(board, head, libs, size, p):
    """The pattern keys of the empty point ``p`` for Black and for White (module docstring), its neighbours read
    once."""
    r0 = p // size
    c0 = p - r0 * size
    kb = 0
    kw = 0
    for k in range(8):
        r = r0 + _DR[k]
        c = c0 + _DC[k]
        if r < 0 or c < 0 or r >= size or c >= size:
            cb = 0
            cw = 0
        else:
            q = r * size + c
            b = board[q]
            if b == 0:
                cb = 1
                cw = 1
            elif k < 4:
                n = libs[head[q]]
                lc = 0 if n == 1 else (1 if n == 2 else 2)
                cb = 2 + lc if b == 1 else 5 + lc
                cw = 5 + lc if b == 1 else 2 + lc
            else:
                cb = 2 if b == 1 else 3
                cw = 3 if b == 1 else 2
        shift = 3 * k if k < 4 else 12 + 2 * (k - 4)
        kb |= cb << shift
        kw |= cw << shift
    return kb, kw


@internal_kernel
def line_of(p, size):
    r = p // size
    c = p - r * size
    d = min(r, c, size - 1 - r, size - 1 - c)
    return 5 if d > 5 else d


@internal_kernel
def pattern_legal(pkey):
    """Whether a stone on a point with this pattern key has a liberty or takes one (no suicide; ko aside)."""
    for k in range(4):
        code = (pkey >> (3 * k)) & 7
        if code == 1 or code == 3 or code == 4 or code == 5:  # empty, own string with ≥ 2, opponent's in atari
            return True
    return False


@internal_kernel
def own_eye_pattern(pkey):
    """Whether the point is one of the player's own eyes by its pattern (:func:`gotk.game.rules.is_own_eye`)."""
    bad = 0
    corner_or_edge = False
    for k in range(4):
        code = (pkey >> (3 * k)) & 7
        if code == 0:
            corner_or_edge = True
        elif not 2 <= code <= 4:
            return False
    for k in range(4):
        if (pkey >> (12 + 2 * k)) & 3 == 3:
            bad += 1
    return bad == 0 if corner_or_edge else bad <= 1


@internal_kernel
def static_logit(W, canon_pat, board, head, libs, size, p, me):
    """The pattern and line features' score of ``p`` for ``me``, and its pattern key."""
    pkey, _ = codes_at(board, head, libs, size, p, me)
    return W[OFF_PAT + canon_pat[pkey]] + W[OFF_LINE + line_of(p, size)], pkey


@internal_kernel
def _add_liberties(board, nxt, nbr, h, fid, lp, lf, m):
    """The (liberty, ``fid``) pairs of the string of ``h`` (≤ 2 liberties) appended from ``m``; returns the count."""
    first = -1
    x = h
    while True:
        for k in range(4):
            q = nbr[x, k]
            if q < 0:
                break
            if board[q] == 0 and q != first:
                if m < MAX_LOCAL:
                    lp[m] = q
                    lf[m] = fid
                    m += 1
                if first >= 0:
                    return m
                first = q
        x = nxt[x]
        if x == h:
            return m


@internal_kernel
def local_features(board, head, nxt, libs, ssize, nbr, canon_resp, size, me, last, last2, lp, lf, seen):
    """The local features' (point, feature index) pairs into ``lp``/``lf``; returns their count. ``seen``: four
    string heads of scratch."""
    m = 0
    npts = board.shape[0]
    for which in range(2):
        q = last if which == 0 else last2
        if q < 0 or q >= npts:
            continue
        r0 = q // size
        c0 = q - r0 * size
        for k in range(12):
            r = r0 + _DR[k]
            c = c0 + _DC[k]
            if r < 0 or c < 0 or r >= size or c >= size:
                continue
            p = r * size + c
            if board[p] != 0:
                continue
            if which == 0:
                _, ckey = codes_at(board, head, libs, size, p, me)
                # k is where p lies from the last move; the key records where the last move lies from p
                fid = OFF_RESP + canon_resp[(k << 16) | ckey]
            else:  # by distance (next to it, diagonal, two away): the same under every symmetry
                fid = OFF_PREV + k // 4
            lp[m] = p
            lf[m] = fid
            m += 1
    if last < 0 or last >= npts or board[last] == 0:
        return m
    ns = 0
    for j in range(5):
        q = last if j == 0 else nbr[last, j - 1]
        if j > 0 and q < 0:
            break
        if board[q] == 0:
            continue
        h = head[q]
        dup = False
        for i in range(ns):
            if seen[i] == h:
                dup = True
        if dup:
            continue
        if ns < seen.shape[0]:
            seen[ns] = h
            ns += 1
        n = libs[h]
        if n > 2:
            continue
        s = ssize[h]
        fid = OFF_TAC + (0 if board[q] == me else 6) + (n - 1) * 3 + (0 if s == 1 else (1 if s == 2 else 2))
        m = _add_liberties(board, nxt, nbr, h, fid, lp, lf, m)
    return m


@internal_kernel
def move_scores(board, head, nxt, libs, ssize, nbr, W, canon_pat, canon_resp, size, me, last, last2, ko, cand,
                score, keys, lp, lf, seen):
    """Every move's score for ``me``: the candidates (empty points where a stone is no suicide, ``ko`` excepted)
    into ``cand``, their scores into ``score[point]`` and pattern keys into ``keys[point]``; the local (point,
    feature) pairs into ``lp``/``lf``. Returns ``(candidates, pairs)``."""
    n = 0
    for p in range(board.shape[0]):
        if board[p] != 0 or p == ko:
            continue
        s, pkey = static_logit(W, canon_pat, board, head, libs, size, p, me)
        if not pattern_legal(pkey):
            continue
        cand[n] = p
        n += 1
        score[p] = s
        keys[p] = pkey
    m = local_features(board, head, nxt, libs, ssize, nbr, canon_resp, size, me, last, last2, lp, lf, seen)
    for i in range(m):
        p = lp[i]
        if p != ko and pattern_legal(codes_at(board, head, libs, size, p, me)[0]):
            score[p] += W[lf[i]]
    return n, m


__all__ = ["LAYOUT", "MAX_LOCAL", "N_WEIGHTS", "OFF_LINE", "OFF_PAT", "OFF_PREV", "OFF_RESP", "OFF_TAC", "VERSION",
           "canon_tables", "codes_at", "local_features", "move_scores", "own_eye_pattern", "pattern_keys",
           "pattern_legal", "static_logit"]
