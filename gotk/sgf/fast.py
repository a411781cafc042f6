"""The compiled SGF scanner: raw bytes -> each game tree's root properties and main line, in one numba pass.

One compiled scan (:func:`_scan`) tokenises the whole input exactly as sgfmill's grammar layer does
(``sgf_grammar.tokenise`` + ``_parse_sgf_game``: junk before ``(;`` skipped, lower-case letters dropped
from property names, ``\\``-escapes inside values, a property seen twice in a node = one with all the
values), finds each game tree's main line (the nodes before the tree's first ``)``: the main line only
ever descends into first variations) and decodes its moves. The root's properties are handed over as raw
bytes (:func:`scan_trees`); the reader builds the record through the very code the sgfmill path uses
(:func:`gotk.sgf.reader.record_from_root`: charset, size, setup, text decoding, result), so both paths build
their records with one set of rules.

Anything the scan does not fully understand is *declined* (:data:`DECLINE_REASONS`): the caller then
reads the input with the sgfmill path, which gives the exact errors and messages. That covers every
input sgfmill rejects (so the fast reader never accepts what sgfmill refuses), every unusual ``SZ``
and every move value other than ``""``, ``tt`` or two letters on the board.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from gotk.jit import kernel

OK = 0
DECLINE_REASONS = {
    1: "parse_error",  # sgfmill raises: the fallback reports it with sgfmill's message
    2: "no_game",  # no "(;" anywhere
    3: "unusual_size",  # SZ not 1-3 digits with optional whitespace (rectangles, "+19", bad sizes...)
    4: "unusual_move",  # a move value other than "", "tt" (<= 19x19) or two letters on the board
    5: "long_name",  # a property name over 64 letters (sgfmill's tokeniser splits it)
    6: "size_mismatch",  # the shared metadata code read another size than the scan (never seen)
}


def _code(name: str) -> int:
    """Property name (upper-case, 1-2 letters) -> the scan's numeric code."""
    a = ord(name[0]) - 64
    b = ord(name[1]) - 64 if len(name) > 1 else 0
    return a * 27 + b


_NAMES = {}
for _a in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _NAMES[_code(_a)] = _a
    for _b in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        _NAMES[_code(_a + _b)] = _a + _b
_NAME_OF = [_NAMES.get(code, "") for code in range(max(_NAMES) + 1)]  # the same, indexed by code
# the codes the kernel spells out as numbers
assert (_code("B"), _code("W"), _code("SZ"), _code("AB"), _code("AW"), _code("AE")) == (54, 621, 539, 29, 50, 32)


# Byte classes and move letters are looked up in tables (numba compiles them in as constants): the
# kernel's branches are what numba's passes and LLVM spend a fresh install's first run on, and a
# lookup replaces two to four chained comparisons (less compile time for the scan). The kernel stays one plain
# function: a helper split out of it cost more to compile than it saved. It takes its outputs preallocated by
# the caller.
# Space: the bytes of a bytes regex's \s (sgfmill skips these between tokens): \t \n \v \f \r and space.
_SPACE, _UPPER, _LOWER, _DIGIT = 1, 2, 4, 8
_LETTER = _UPPER | _LOWER
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[[9, 10, 11, 12, 13, 32]] = _SPACE
_CLASS[65:91] = _UPPER
_CLASS[97:123] = _LOWER
_CLASS[48:58] = _DIGIT
# A move letter's coordinate as gotk.sgf.reader._point reads it: a-z 0..25, A-Z 26..51, else 99.
_COORD = np.full(256, 99, dtype=np.int64)
_COORD[97:123] = np.arange(26)
_COORD[65:91] = np.arange(26, 52)


@kernel
def _scan(buf, games, props, moves, nodes, counts):
    """Tokenise and parse every game tree in ``buf`` (uint8); returns 0 or a decline code.

    Fills ``games[g]`` = (first prop, end prop, first move, end move, defect kind, defect move index,
    size), defect kind 0 none, 1 setup after the root, 2 a node with both B and W; ``props[k]`` =
    (code, value start, value end) for each root property value with a 1-2 letter name;
    ``moves[i]`` = (colour, point) of every game's main line; ``counts`` = (games, props, moves).
    ``nodes`` is scratch (one row per main-line node: B span, W span, setup). Sizes: games >
    number of "(" bytes, props > "[", moves and nodes > ";".
    """
    n = buf.shape[0]
    ng = 0
    nprops = 0
    nmoves = 0
    pos = 0
    while True:
        # --- find the start: "(" space* ";" (anything before it is skipped, as sgfmill does) -----
        start = -1
        i = pos
        while i < n:
            if buf[i] == 40:  # (
                j = i + 1
                while j < n and _CLASS[buf[j]] == _SPACE:
                    j += 1
                if j < n and buf[j] == 59:  # ;
                    start = i
                    break
            i += 1
        if start < 0:
            break
        # --- tokenise + parse one game tree, with sgfmill's checks -------------------------------
        i = start
        depth = 0
        seq_open = False  # sgfmill's "sequence is not None"
        seq_len = 0  # nodes in the open sequence
        in_node = False  # sgfmill's "properties is not None"
        main = True  # before the tree's first ")" every node is on the main line
        nmain = 0
        game_props0 = nprops
        size = 19
        sz_seen = False
        while True:
            while i < n and _CLASS[buf[i]] == _SPACE:
                i += 1
            if i >= n:
                return 1  # unexpected end
            c = buf[i]
            if c == 59:  # ;
                if not seq_open:
                    return 1  # unexpected node
                seq_len += 1
                in_node = True
                if main:
                    nodes[nmain, 0] = -1
                    nodes[nmain, 2] = -1
                    nodes[nmain, 4] = 0
                    nmain += 1
                i += 1
                continue
            if c == 40 or c == 41:  # ( )
                if seq_open and seq_len == 0:
                    return 1  # empty sequence
                in_node = False
                i += 1
                if c == 40:
                    depth += 1
                    seq_open = True
                    seq_len = 0
                    continue
                seq_open = False
                depth -= 1
                main = False
                if depth == 0:
                    break
                continue
            if (_CLASS[c] & _LETTER) == 0:
                return 1  # a value with no name, or a byte sgfmill cannot tokenise
            # property name: letters, lower-case ones dropped
            code = 0
            nup = 0
            nlet = 0
            while i < n and (_CLASS[buf[i]] & _LETTER) != 0:
                if _CLASS[buf[i]] == _UPPER:
                    nup += 1
                    code = code * 27 + (buf[i] - 64)
                nlet += 1
                i += 1
            if nlet > 64:
                return 5
            if not in_node:
                return 1  # property outside a node
            if nup == 1:
                code = code * 27
            elif nup != 2:
                code = -1
            nvalues = 0
            while True:
                j = i
                while j < n and _CLASS[buf[j]] == _SPACE:
                    j += 1
                if j >= n or buf[j] != 91:
                    break
                v0 = j + 1
                k = v0
                while k < n and buf[k] != 93:
                    if buf[k] == 92:  # a backslash escapes the next byte, whatever it is
                        k += 1
                    k += 1
                if k >= n:
                    return 1  # unterminated value
                i = k + 1
                nvalues += 1
                if main:
                    m = nmain - 1
                    if code == 54:  # B
                        if nodes[m, 0] < 0:
                            nodes[m, 0] = v0
                            nodes[m, 1] = k
                    elif code == 621:  # W
                        if nodes[m, 2] < 0:
                            nodes[m, 2] = v0
                            nodes[m, 3] = k
                    elif code == 29 or code == 50 or code == 32:  # AB AW AE
                        nodes[m, 4] = 1
                    if m == 0 and code >= 0:
                        props[nprops, 0] = code
                        props[nprops, 1] = v0
                        props[nprops, 2] = k
                        nprops += 1
                        if code == 539 and not sz_seen:  # the first SZ value: 1-3 digits, spaces around
                            sz_seen = True
                            a = v0
                            b = k
                            while a < b and _CLASS[buf[a]] == _SPACE:
                                a += 1
                            while b > a and _CLASS[buf[b - 1]] == _SPACE:
                                b -= 1
                            if b - a < 1 or b - a > 3:
                                return 3
                            size = 0
                            for q in range(a, b):
                                if _CLASS[buf[q]] != _DIGIT:
                                    return 3
                                size = size * 10 + (buf[q] - 48)
                            if size < 2 or size > 25:  # gotk.coords.MIN_SIZE / MAX_SIZE
                                return 3
            if nvalues == 0:
                return 1  # property with no values
        pos = i
        # --- the main line's moves ---------------------------------------------------------------
        game_moves0 = nmoves
        dkind = 0
        dindex = 0
        for m in range(nmain):
            if m > 0 and nodes[m, 4] != 0:
                dkind = 1
                dindex = nmoves - game_moves0
                break
            if nodes[m, 0] < 0 and nodes[m, 2] < 0:
                continue
            if nodes[m, 0] >= 0 and nodes[m, 2] >= 0:
                dkind = 2
                dindex = nmoves - game_moves0
                break
            color = 1 if nodes[m, 0] >= 0 else 2
            v0 = nodes[m, 2 * color - 2]
            ln = nodes[m, 2 * color - 1] - v0
            if ln == 0:
                point = size * size
            elif ln == 2:
                x = buf[v0]
                y = buf[v0 + 1]
                col = _COORD[x]
                row = _COORD[y]
                if col < size and row < size:
                    point = row * size + col
                elif x == 116 and y == 116 and size <= 19:  # tt
                    point = size * size
                else:
                    return 4
            else:
                return 4
            moves[nmoves, 0] = color
            moves[nmoves, 1] = point
            nmoves += 1
        games[ng, 0] = game_props0
        games[ng, 1] = nprops
        games[ng, 2] = game_moves0
        games[ng, 3] = nmoves
        games[ng, 4] = dkind
        games[ng, 5] = dindex
        games[ng, 6] = size
        ng += 1
    counts[0] = ng
    counts[1] = nprops
    counts[2] = nmoves
    return 2 if ng == 0 else 0


class Declined(Exception):
    """The compiled reader does not take this input; ``reason`` says why (see DECLINE_REASONS)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


_DEFECTS = {1: ("bad_setup", "setup stones after the root node"), 2: ("bad_move", "a node with both B and W")}


_REUSE_ROWS = 1 << 14  # inputs up to this many "(", "[" or ";" share one set of output arrays per thread
_reusable = threading.local()


def _outputs(ngames: int, nprops: int, nnodes: int) -> tuple[np.ndarray, ...]:
    """The scan's output arrays (``games``, ``props``, ``moves``, ``nodes``, ``counts``) for an input with
    at most these many game trees, property values and nodes. A game record's fit in one set kept per
    thread (what :func:`read_fast` returns never points into it); a larger input gets arrays of its own."""
    if max(ngames, nprops, nnodes) > _REUSE_ROWS:
        return (np.empty((ngames, 7), dtype=np.int64), np.empty((nprops, 3), dtype=np.int64),
                np.empty((nnodes, 2), dtype=np.int64), np.empty((nnodes, 5), dtype=np.int64),
                np.zeros(3, dtype=np.int64))
    arrays = getattr(_reusable, "arrays", None)
    if arrays is None:
        rows = _REUSE_ROWS
        arrays = _reusable.arrays = (np.empty((rows, 7), dtype=np.int64), np.empty((rows, 3), dtype=np.int64),
                                     np.empty((rows, 2), dtype=np.int64), np.empty((rows, 5), dtype=np.int64),
                                     np.zeros(3, dtype=np.int64))
    return arrays


def scan_trees(data: bytes) -> list[tuple[dict, Callable]]:
    """Every game tree of ``data`` as ``(root, main_line)``: the root's properties (name -> raw values, bytes)
    and ``main_line(size) -> (colors, points, defect)``, what :func:`gotk.sgf.reader.record_from_root` builds
    a record from. Raises :class:`Declined` when the input needs the sgfmill path."""
    data = bytes(data)  # bytearray / memoryview too (a no-op for bytes)
    buf = np.frombuffer(data, dtype=np.uint8)
    if len(data) < _REUSE_ROWS:  # no byte count can exceed the length: skip counting
        games, props, moves, nodes, counts = _outputs(1, 1, 1)
    else:
        games, props, moves, nodes, counts = _outputs(data.count(b"(") + 1, data.count(b"[") + 1,
                                                      data.count(b";") + 1)
    status = _scan(buf, games, props, moves, nodes, counts)
    if status != OK:
        raise Declined(DECLINE_REASONS[int(status)])
    ng, nprops, _ = counts.tolist()
    plist = props[:nprops].tolist()
    out: list = []
    for p0, p1, m0, m1, dkind, dindex, size in games[:ng].tolist():
        root: dict = {}
        for code, v0, v1 in plist[p0:p1]:
            name = _NAME_OF[code]
            value = data[v0:v1]
            values = root.get(name)
            if values is None:
                root[name] = [value]
            else:
                values.append(value)
        defect = None if dkind == 0 else (_DEFECTS[dkind][0], dindex, _DEFECTS[dkind][1])

        def main_line(sz: int, size=size, m0=m0, m1=m1, defect=defect):
            if sz != size:
                raise Declined(DECLINE_REASONS[6])
            # copies: ``moves`` is reused by the next input
            return moves[m0:m1, 0].astype(np.int8), moves[m0:m1, 1].astype(np.int16), defect

        out.append((root, main_line))
    return out


def path_counts(counts) -> dict:
    """``iter_sgf``'s ``counts`` as a run-report entry: inputs and games read by the compiled reader
    (``fast``) and by sgfmill (``fallback``, with why the compiled reader declined them)."""
    why = {k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith("fallback:")}
    return {"fast": {"inputs": counts.get("fast", 0), "games": counts.get("fast_games", 0)},
            "fallback": {"inputs": counts.get("fallback", 0), "games": counts.get("fallback_games", 0),
                         "declined": why}}
