"""AlphaGo ladder planes (46–47) cached across the positions of a game, exactly.

Reading a ladder is a pure function of the position, and most of the positions of a game differ from
the previous one (same player to move, two moves earlier) far from a given ladder. The compiled game
loop therefore keeps, per player and per query — ``(move, target string)`` for a ladder capture,
``move`` for a ladder escape — the last answer together with the query's *footprint* (the bitset of
points :mod:`gotk.encoders.ladders` records while reading), and reads again only the queries whose
footprint holds a point that changed.

**Why this is exact.** Let a query be read in position ``R`` (loaded into the scratch) with core ``T``
and footprint ``F`` (``T`` plus its neighbours), and let ``R'`` be a later position, for the same
player, that agrees with ``R`` in stone colour (``board``) on every point of ``F`` and also in string
head and link (``head``, ``nxt``) on every point of ``T``. Run the two searches side by side;
induction on the steps: before a step both are in the same frame with the same history of moves.

* What a step reads is, by the touch rules of :mod:`gotk.encoders.ladders`, either the colour of a
  point of ``F`` or a field of a string ``S`` of the current layer whose stones the old search put
  in ``T`` before reading it. A stone outside ``T`` is only ever seen for its colour: the one other
  use of its head (de-duplicating liberty increments when a string next to it is captured) writes
  only to its own string, which nothing reads without touching it first.
* A point of the position at a ply differs from the root only where the search played or captured
  (the same in both, by the same history; undone moves leave nothing behind); elsewhere it holds the
  root's value. So the colours on ``F`` are equal in both positions: ``S`` is the same set of stones
  with the same liberty count and size (the reader's moves keep liberty counts exact, as the engine's
  do), and its heads and links are the root's on ``T`` (equal) changed by the same merges — string
  identities and traversal orders, which fix candidate order and with it where the node budget cuts,
  agree too.
* The ko point of ``R`` is read only by the first move, which the encoder asks for only where it is
  legal (never the ko point); later ko points come from the search's own moves. Scratch stamps are
  never read for a decision.

Hence every step reads the same values and takes the same branch: the two searches return the same
answer and record the same core and footprint.

An entry is used only if it was read or confirmed at the player's previous position (its stamp is
that fill's number), no point of its footprint changed colour and no point of its core changed
colour, head or link between that position and this one (compared point by point with a copy of
``board``/``head``/``nxt`` kept per player — a compare, not a move log, so captures, passes, setup
and a board that changes and changes back in between are all seen as they are; the copy is of the
player's last position that had queries, which is that previous position whenever an entry can be used,
for a position without queries confirms none). Then by
the argument above the answer and the footprint carry over, so the entry is confirmed for this
position; chained, an entry stays right for as long as it is confirmed. An entry not asked for at a
position lapses (nothing tracked what changed around it since).

:func:`fill_cached` must give exactly :func:`gotk.encoders.alphago.fill_planes` (``ladders=True``);
``tests/test_ladder_cache.py`` checks it on every position of a real archive and on random games.
"""

from __future__ import annotations

import threading

import numpy as np

from gotk.encoders import alphago_planes as AG
from gotk.encoders import ladders as LD
from gotk.jit import inline_kernel, internal_kernel

# indices of the cache tuple (see make_cache)
C_SCR, C_PREV, C_FILLS, C_DIRTY, C_CAND, C_CAP_HEAD, C_CAP_STAMP, C_CAP_RES, C_CAP_FP = range(9)
C_ESC_STAMP, C_ESC_RES, C_ESC_FP, C_STATS = 9, 10, 11, 12
S_HITS, S_READS, S_NODES = 0, 1, 2  # stats: answers taken from the cache, ladders read, moves played reading


def make_cache(n: int) -> tuple:
    """A fresh ladder cache for a board of ``n`` points (the game loop's ``state``; see :func:`game_cache`).

    ``(scratch, prev[2, 3, n] (board, head, nxt per player), fills[2], dirty[2, W], cand[3, 6n + 12]
    (capture moves, their targets, escape moves: :func:`gotk.encoders.alphago.local_planes`),
    cap_head/cap_stamp/cap_res[2, n, 4], cap_fp[2, n, 4, 2, W] (footprint, core), esc_stamp/esc_res[2, n],
    esc_fp[2, n, 2, W], stats[3])`` with ``W = (n + 63) // 64`` words per bitset.
    """
    w = (n + 63) // 64
    return (LD.new_scratch(n, LD.max_plies(n)), np.full((2, 3, n), -1, dtype=np.int32),
            np.zeros(2, dtype=np.int64), np.zeros((2, w), dtype=np.uint64), np.empty((3, 6 * n + 12), dtype=np.int32),
            np.full((2, n, 4), -1, dtype=np.int32), np.full((2, n, 4), -1, dtype=np.int64),
            np.zeros((2, n, 4), dtype=np.int8), np.zeros((2, n, 4, 2, w), dtype=np.uint64),
            np.full((2, n), -1, dtype=np.int64), np.zeros((2, n), dtype=np.int8),
            np.zeros((2, n, 2, w), dtype=np.uint64), np.zeros(3, dtype=np.int64))


_LOCAL = threading.local()


def game_cache(n: int) -> tuple:
    """This thread's ladder cache for boards of ``n`` points, ready for a new game.

    Made once per thread and board size, then reused game after game instead of a zeroed megabyte per
    game. A new game forgets each player's previous position, so every point counts as changed at the
    game's first fill and no answer carries over from one game to the next. One cache per thread,
    because the game loop writes into it.
    """
    caches = getattr(_LOCAL, "caches", None)
    if caches is None:
        caches = _LOCAL.caches = {}
    cache = caches.get(n)
    if cache is None:
        cache = caches[n] = make_cache(n)
    cache[C_PREV].fill(-1)
    return cache


@internal_kernel
def _changed_points(cache, ci, board, head, nxt):
    """Set ``dirty[0]`` to the points whose stone differs from player ``ci``'s previous position and
    ``dirty[1]`` to those whose stone, head or link differ; remember this position for next time.

    Word by word (64 points): a first pass ORs the differences together (branch-free, vectorised), and
    only a word with a difference is compared point by point; most positions change two or three words."""
    prev, dirty = cache[C_PREV], cache[C_DIRTY]
    pb, ph, pn = prev[ci, 0], prev[ci, 1], prev[ci, 2]
    n = board.shape[0]
    for w in range(dirty.shape[1]):
        c0 = w * 64
        m = min(64, n - c0)
        acc = np.int32(0)
        for j in range(m):
            x = c0 + j
            acc |= (pb[x] ^ np.int32(board[x])) | (ph[x] ^ head[x]) | (pn[x] ^ nxt[x])
        if acc == 0:
            dirty[0, w] = 0
            dirty[1, w] = 0
            continue
        d0 = np.uint64(0)
        d1 = np.uint64(0)
        for j in range(m):
            x = c0 + j
            a = np.uint64(pb[x] != board[x])
            b = np.uint64((ph[x] != head[x]) | (pn[x] != nxt[x]))
            d0 |= a << np.uint64(j)
            d1 |= (a | b) << np.uint64(j)
            pb[x] = board[x]
            ph[x] = head[x]
            pn[x] = nxt[x]
        dirty[0, w] = d0
        dirty[1, w] = d1


@internal_kernel
def _clean(fp, dirty):
    """True if no footprint point (``fp[0]``) changed colour and no core point (``fp[1]``) changed at all."""
    for i in range(dirty.shape[1]):
        if (fp[0, i] & dirty[0, i]) | (fp[1, i] & dirty[1, i]):
            return False
    return True


@internal_kernel
def _store(scr, fp):
    """Keep the last query's footprint in ``fp[0]`` and its core in ``fp[1]``."""
    LD.footprint(scr, fp[0])
    core = scr.bits[LD.CORE]
    for i in range(core.shape[0]):
        fp[1, i] = core[i]


@inline_kernel
def fill_cached(out, e, color, cache):
    """:func:`gotk.encoders.alphago.fill_planes` with ladders, reading only the ladders whose footprint
    changed since ``color``'s previous position in this game (``cache`` from :func:`make_cache`)."""
    cand = cache[C_CAND]
    ncap, nesc = AG.local_planes(out, e, color, True, cand[0], cand[1], cand[2])
    ci = color - 1
    fills = cache[C_FILLS]
    before = fills[ci]  # entries confirmed at the previous position have this stamp
    now = before + 1
    fills[ci] = now
    if ncap + nesc == 0:
        return
    # compared with the position of the last call that got here: an entry is used only if confirmed at the
    # player's previous position, which then got here too (a position without queries confirms nothing)
    _changed_points(cache, ci, e.board, e.head, e.nxt)
    scr, dirty, stats = cache[C_SCR], cache[C_DIRTY], cache[C_STATS]
    cap_head, cap_stamp, cap_res, cap_fp = cache[C_CAP_HEAD], cache[C_CAP_STAMP], cache[C_CAP_RES], cache[C_CAP_FP]
    esc_stamp, esc_res, esc_fp = cache[C_ESC_STAMP], cache[C_ESC_RES], cache[C_ESC_FP]
    loaded = False
    taken = -1  # the last move found to capture: the list is in point order, so its other targets follow it
    for i in range(ncap):
        p = cand[0, i]
        if p == taken:  # (not out[P_LADDER_CAPTURE, p]: a load of a cold line of the row, a quarter of this loop)
            continue
        t = cand[1, i]
        res = -1
        slot = -1
        for k in range(4):
            if cap_head[ci, p, k] == t:
                slot = k
                if cap_stamp[ci, p, k] == before and _clean(cap_fp[ci, p, k], dirty):
                    res = cap_res[ci, p, k]
                    cap_stamp[ci, p, k] = now
                break
        if res >= 0:
            stats[S_HITS] += 1
        else:
            if not loaded:
                LD.load_position(scr, e)
                loaded = True
            res = 1 if LD.ladder_capture(scr, p, color, t) else 0
            stats[S_READS] += 1
            stats[S_NODES] += scr.ctl[LD.NODES]
            if slot < 0:
                for k in range(4):  # a slot no other target used at this position (≤ 4 targets per move)
                    if cap_stamp[ci, p, k] != now:
                        slot = k
                        break
            cap_head[ci, p, slot] = t
            cap_stamp[ci, p, slot] = now
            cap_res[ci, p, slot] = res
            _store(scr, cap_fp[ci, p, slot])
        if res == 1:
            out[AG.P_LADDER_CAPTURE, p] = 1
            taken = p
    for i in range(nesc):
        p = cand[2, i]
        if esc_stamp[ci, p] == before and _clean(esc_fp[ci, p], dirty):
            res = esc_res[ci, p]
            stats[S_HITS] += 1
        else:
            if not loaded:
                LD.load_position(scr, e)
                loaded = True
            res = 1 if LD.ladder_escape(scr, p, color) else 0
            stats[S_READS] += 1
            stats[S_NODES] += scr.ctl[LD.NODES]
            esc_res[ci, p] = res
            _store(scr, esc_fp[ci, p])
        esc_stamp[ci, p] = now
        if res == 1:
            out[AG.P_LADDER_ESCAPE, p] = 1
