"""Area scoring (stones + territory) on a flat board, compiled, and the count a finished game is scored by.

Two counts:

* :func:`area_score` / :func:`area_ownership`: every stone on the board counted alive (Tromp-Taylor's count);
* :func:`final_ownership` / :func:`final_score`, the **final count** gotk scores a finished game by (search's
  terminal value and so its pass decision, self-play's result and ownership, the GTP ``final_score``, the
  policy players' pass rule, a match's own count): the same after removing

  - the stones that are certainly dead: those of a player inside the opponent's pass-alive area (Benson's
    unconditional life, KataGo's ``calculateArea``: :func:`calculate_area`). A stone in an eye of the
    opponent's unconditionally living group counts neither as a stone nor as breaking that territory;
  - when the game ends by a pass that answers a pass, the *passer's* homeless stones (:func:`homeless_stones`:
    strings that touch none of their own player's area and are not pass-alive). The player who ends the game
    bears the risk of its unsettled stones: an opponent that removes dead stones by judgement (GNU Go's
    ``final_score``) removes a lone stone in its framework, which every-stone-alive counting takes as alive
    and as breaking the framework. So the search does not answer a pass while such a stone makes the
    difference; it plays on.

  Other stones count alive: the opponent's homeless stones (removing them could only flatter the passer), a
  stone dead by judgement that touches an empty point of its own player's area.

Benson's algorithm is written from KataGo's ``cpp/game/board.cpp`` (``calculateArea``, ``calculateAreaForPla``:
vital regions, repeated removal of chains with fewer than two, then territory marking); the KataGo exporter's
pass-alive features (18-19) use it too.
"""

from __future__ import annotations

import numpy as np

from gotk.game.rules import neighbour_strings, touches_string
from gotk.jit import compiled, kernel


@kernel
def area_into(board, nbr, owner, seen, stack, region):
    """Black's area minus White's, every stone alive; ``owner[p]`` gets +1 (Black's area), -1 (White's) or 0
    (neither). ``seen``, ``stack``, ``region``: scratch of the board's size (uint8, int32, int32)."""
    n = board.shape[0]
    black = 0
    white = 0
    for p in range(n):
        seen[p] = 0
        owner[p] = 0
        if board[p] == 1:
            black += 1
            owner[p] = 1
        elif board[p] == 2:
            white += 1
            owner[p] = -1
    for p in range(n):
        if board[p] != 0 or seen[p]:
            continue
        # flood the empty region, noting which colours border it
        borders = 0
        count = 0
        top = 0
        stack[top] = p
        top += 1
        seen[p] = 1
        while top > 0:
            top -= 1
            x = stack[top]
            region[count] = x
            count += 1
            for k in range(4):
                q = nbr[x, k]
                if q < 0:
                    break
                v = board[q]
                if v == 0:
                    if not seen[q]:
                        seen[q] = 1
                        stack[top] = q
                        top += 1
                else:
                    borders |= v
        if borders == 1:
            black += count
            for i in range(count):
                owner[region[i]] = 1
        elif borders == 2:
            white += count
            for i in range(count):
                owner[region[i]] = -1
    return black - white


@compiled
def _area(board, nbr, owner):
    """:func:`area_into` with its scratch allocated."""
    n = board.shape[0]
    return area_into(board, nbr, owner, np.zeros(n, dtype=np.uint8), np.empty(n, dtype=np.int32),
                     np.empty(n, dtype=np.int32))


def area_score(board: np.ndarray, nbr: np.ndarray) -> int:
    """Black's area minus White's, every stone on the board counted alive (no komi)."""
    return int(_area(board, nbr, np.empty(board.shape[0], dtype=np.int8)))


def area_ownership(board: np.ndarray, nbr: np.ndarray) -> tuple[int, np.ndarray]:
    """``(black's area minus white's, owner)``: ``owner`` int8 per point, +1 Black's area (stone or territory),
    -1 White's, 0 neither (dame, or a region both border); every stone counted alive, no komi."""
    owner = np.empty(board.shape[0], dtype=np.int8)
    return int(_area(board, nbr, owner)), owner


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
        nv = neighbour_strings(board, head, nbr, start, pla, vital[r])
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
                    if touches_string(board, head, nbr, x, hv):
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


def pass_alive(board: np.ndarray, head: np.ndarray, nxt: np.ndarray, nbr: np.ndarray,
               suicide: bool = False) -> np.ndarray:
    """int8 per point: 1 / 2 where Black's / White's pass-alive area (:func:`calculate_area`: the chains and the
    regions they own) lies, else 0. ``suicide``: the rules allow suicide (Benson's vital regions then count
    every point, not only empty ones)."""
    alive = np.zeros(board.shape[0], dtype=np.int8)
    calculate_area(board, head, nxt, nbr, suicide, False, False, False, alive)
    return alive


def dead_stones(board: np.ndarray, head: np.ndarray, nxt: np.ndarray, nbr: np.ndarray,
                suicide: bool = False) -> np.ndarray:
    """Bool per point: a stone inside the opponent's pass-alive area (:func:`pass_alive`), certainly dead."""
    alive = pass_alive(board, head, nxt, nbr, suicide)
    return (board != 0) & (alive != 0) & (alive != board)


@compiled
def _homeless(board, head, nbr, color, owner, alive, out):
    """``out[p]``: ``p`` holds a stone of ``color`` whose string touches no empty point ``owner`` gives ``color``
    and that ``alive`` does not mark ``color``'s."""
    n = board.shape[0]
    sign = 1 if color == 1 else -1
    settled = np.zeros(n, dtype=np.uint8)  # by string head
    for p in range(n):
        if board[p] != color:
            continue
        for k in range(nbr.shape[1]):
            q = nbr[p, k]
            if q < 0:
                break
            if board[q] == 0 and owner[q] == sign:
                settled[head[p]] = 1
                break
    for p in range(n):
        out[p] = board[p] == color and settled[head[p]] == 0 and alive[p] != color


def homeless_stones(board: np.ndarray, head: np.ndarray, nbr: np.ndarray, color: int,
                    alive: np.ndarray | None = None) -> np.ndarray:
    """Bool per point: the stones of ``color`` whose string touches no empty point of ``color``'s own area (an
    empty region that ``color`` alone borders) and is not pass-alive (``alive``, :func:`pass_alive`). Such a
    string has no eye and no territory: an opponent that removes dead stones by judgement will usually remove
    it (a lone stone in the opponent's framework), though it may live in seki or by a connection still to be
    made."""
    _, owner = area_ownership(board, nbr)
    out = np.empty(board.shape[0], dtype=np.bool_)
    _homeless(board, head, nbr, color, owner, np.zeros(board.shape[0], dtype=np.int8) if alive is None else alive,
              out)
    return out


def final_ownership(board: np.ndarray, head: np.ndarray, nxt: np.ndarray, nbr: np.ndarray,
                    suicide: bool = False, passer: int = 0) -> tuple[int, np.ndarray]:
    """:func:`area_ownership` of the board without its :func:`dead_stones` (and, when ``passer`` is 1 or 2, without
    that player's :func:`homeless_stones` either): ``(black's area minus white's, owner)``, no komi. A removed
    stone's point counts for whoever's region then holds it.

    ``passer`` is the player who ends the game by answering a pass: it bears the risk of its own unsettled
    stones, as an opponent that scores with dead-stone removal would count them, so a pass that only wins with
    a lone stone of its own counted alive is valued as the loss it usually is. The opponent's unsettled stones
    still count alive (removing them could only flatter the passer)."""
    alive = pass_alive(board, head, nxt, nbr, suicide)
    dead = (board != 0) & (alive != 0) & (alive != board)
    if dead.any():
        board = np.where(dead, 0, board).astype(board.dtype)
    if passer:
        loose = homeless_stones(board, head, nbr, passer, alive)
        if loose.any():
            board = np.where(loose, 0, board).astype(board.dtype)
    return area_ownership(board, nbr)


def final_score(board: np.ndarray, head: np.ndarray, nxt: np.ndarray, nbr: np.ndarray,
                suicide: bool = False, passer: int = 0) -> int:
    """Black's area minus White's by :func:`final_ownership`, no komi."""
    return final_ownership(board, head, nxt, nbr, suicide, passer)[0]
