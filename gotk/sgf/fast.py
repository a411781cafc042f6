"""The compiled SGF reader: raw bytes -> :class:`GameRecord` for the common case, in one numba pass.

One compiled scan (:func:`_scan`) tokenises the whole input exactly as sgfmill's grammar layer does
(``sgf_grammar.tokenise`` + ``_parse_sgf_game``: junk before ``(;`` skipped, lower-case letters dropped
from property names, ``\\``-escapes inside values, a property seen twice in a node = one with all the
values), finds each game tree's main line (the nodes before the tree's first ``)``: the main line only
ever descends into first variations) and decodes its moves. The root's properties go, as raw bytes,
through the very code the sgfmill path uses (:func:`gotk.sgftools.reader.record_from_root`: charset,
size, setup, text decoding, result), so both paths build their records with one set of rules.

Anything the scan does not fully understand is *declined* (:data:`DECLINE_REASONS`): the caller then
reads the input with the sgfmill path, which gives the exact errors and messages. That covers every
input sgfmill rejects (so the fast reader never accepts what sgfmill refuses), every unusual ``SZ``
and every move value other than ``""``, ``tt`` or two letters on the board.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gotk.errors import SGFError

OK = 0
DECLINE_REASONS = {
    1: "parse_error",  # sgfmill raises: the fallback reports it with sgfmill's message
    2: "no_game",  # no "(;" anywhere
    3: "unusual_size",  # SZ not 1-3 digits with optional whitespace (rectangles, "+19", bad sizes...)
    4: "unusual_move",  # a move value other than "", "tt" (<= 19x19) or two letters on the board
    5: "long_name",  # a property name over 64 letters (sgfmill's tokeniser splits it)
    6: "size_mismatch",  # the shared metadata code read another size than the scan (never seen)
}
_MIN_SIZE, _MAX_SIZE = 2, 25  # gotk.sgftools.coords.MIN_SIZE / MAX_SIZE (a mismatch declines, see above)
_CODE_B = 2 * 27
_CODE_W = 23 * 27
_CODE_SZ = 19 * 27 + 26
_SETUP_CODES = (1 * 27 + 2, 1 * 27 + 23, 1 * 27 + 5)  # AB, AW, AE


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
assert _code("B") == _CODE_B and _code("W") == _CODE_W and _code("SZ") == _CODE_SZ
assert _SETUP_CODES == (_code("AB"), _code("AW"), _code("AE"))


@njit(cache=True, inline="always")
def _is_space(c):
    # \s of a bytes regex: space, \t \n \v \f \r
    return c == 32 or (9 <= c <= 13)


@njit(cache=True, inline="always")
def _letter(c):
    """SGF point letter value: a-z 0..25, A-Z 26..51, else 99 (as gotk.sgftools.reader._point)."""
    if 97 <= c <= 122:
        return c - 97
    if 65 <= c <= 90:
        return c - 65 + 26
    return 99


@njit(cache=True)
def _grow(a):
    b = np.empty((2 * a.shape[0], a.shape[1]), dtype=np.int64)
    b[: a.shape[0]] = a
    return b


@njit(cache=True)
def _scan(buf):
    """Tokenise and parse every game tree in ``buf`` (uint8).

    Returns ``(status, games, props, moves)``: ``status`` 0 or a decline code;
    ``games[g]`` = (first prop, end prop, first move, end move, defect kind, defect move index, size)
    with defect kind 0 none, 1 setup after the root, 2 a node with both B and W;
    ``props[k]`` = (code, value start, value end) for each root property value of a 1-2 letter name
    (code -1: another name, not kept); ``moves[i]`` = (colour, point) of every game's main line.
    """
    n = buf.shape[0]
    games = np.empty((16, 7), dtype=np.int64)
    props = np.empty((64, 3), dtype=np.int64)
    moves = np.empty((256 + n // 4, 2), dtype=np.int64)  # colour, point
    nodes = np.empty((256 + n // 4, 5), dtype=np.int64)  # main-line nodes of a game: B span, W span, setup
    ng = 0
    nprops = 0
    nmoves = 0
    pos = 0
    while True:
        # --- find the start: "(" whitespace* ";" -------------------------------------------------
        start = -1
        i = pos
        while i < n:
            if buf[i] == 40:  # (
                j = i + 1
                while j < n and _is_space(buf[j]):
                    j += 1
                if j < n and buf[j] == 59:  # ;
                    start = i
                    break
            i += 1
        if start < 0:
            break
        # --- tokenise + parse one game tree --------------------------------------------------------
        i = start
        depth = 0
        seq_open = False  # sgfmill's "sequence is not None"
        seq_len = 0  # nodes in the open sequence
        in_node = False  # sgfmill's "properties is not None"
        main = True  # before the tree's first ")": every node is on the main line
        nmain = 0
        game_props0 = nprops
        size = 19
        sz_seen = False
        closed = False
        while True:
            while i < n and _is_space(buf[i]):
                i += 1
            if i >= n:
                return 1, games[:0], props[:0], moves[:0]  # unexpected end
            c = buf[i]
            if c == 91:  # [ : a value where a property name was expected
                return 1, games[:0], props[:0], moves[:0]
            if c == 59:  # ;
                if not seq_open:
                    return 1, games[:0], props[:0], moves[:0]
                seq_len += 1
                in_node = True
                if main:
                    if nmain == nodes.shape[0]:
                        nodes = _grow(nodes)
                    nodes[nmain, 0] = -1
                    nodes[nmain, 2] = -1
                    nodes[nmain, 4] = 0
                    nmain += 1
                i += 1
                continue
            if c == 40 or c == 41:  # ( )
                if seq_open and seq_len == 0:
                    return 1, games[:0], props[:0], moves[:0]  # empty sequence
                seq_open = False
                in_node = False
                i += 1
                if c == 40:
                    depth += 1
                    seq_open = True
                    seq_len = 0
                else:
                    depth -= 1
                    main = False
                    if depth == 0:
                        closed = True
                        break
                continue
            if not ((65 <= c <= 90) or (97 <= c <= 122)):
                return 1, games[:0], props[:0], moves[:0]  # untokenisable
            # property name: letters, lower-case ones dropped
            up0 = -1
            up1 = -1
            nup = 0
            nlet = 0
            while i < n and ((65 <= buf[i] <= 90) or (97 <= buf[i] <= 122)):
                if buf[i] <= 90:
                    if nup == 0:
                        up0 = buf[i] - 64
                    elif nup == 1:
                        up1 = buf[i] - 64
                    nup += 1
                nlet += 1
                i += 1
            if nlet > 64:
                return 5, games[:0], props[:0], moves[:0]
            if not in_node:
                return 1, games[:0], props[:0], moves[:0]  # property outside a node
            code = -1
            if nup == 1:
                code = up0 * 27
            elif nup == 2:
                code = up0 * 27 + up1
            nvalues = 0
            while True:
                j = i
                while j < n and _is_space(buf[j]):
                    j += 1
                if j >= n or buf[j] != 91:
                    break
                v0 = j + 1
                k = v0
                ok = False
                while k < n:
                    ck = buf[k]
                    if ck == 92:  # backslash: escapes the next byte, whatever it is
                        k += 2
                    elif ck == 93:  # ]
                        ok = True
                        break
                    else:
                        k += 1
                if not ok:
                    return 1, games[:0], props[:0], moves[:0]  # unterminated value
                v1 = k
                i = k + 1
                nvalues += 1
                if main:
                    m = nmain - 1
                    if code == 2 * 27:  # B
                        if nodes[m, 0] < 0:
                            nodes[m, 0] = v0
                            nodes[m, 1] = v1
                    elif code == 23 * 27:  # W
                        if nodes[m, 2] < 0:
                            nodes[m, 2] = v0
                            nodes[m, 3] = v1
                    elif code == 1 * 27 + 2 or code == 1 * 27 + 23 or code == 1 * 27 + 5:  # AB AW AE
                        nodes[m, 4] = 1
                    if m == 0 and code >= 0:
                        if nprops == props.shape[0]:
                            props = _grow(props)
                        props[nprops, 0] = code
                        props[nprops, 1] = v0
                        props[nprops, 2] = v1
                        nprops += 1
                        if code == 19 * 27 + 26 and not sz_seen:  # the first SZ value
                            sz_seen = True
                            a = v0
                            b = v1
                            while a < b and _is_space(buf[a]):
                                a += 1
                            while b > a and _is_space(buf[b - 1]):
                                b -= 1
                            if b - a < 1 or b - a > 3:
                                return 3, games[:0], props[:0], moves[:0]
                            size = 0
                            for q in range(a, b):
                                if not (48 <= buf[q] <= 57):
                                    return 3, games[:0], props[:0], moves[:0]
                                size = size * 10 + (buf[q] - 48)
                            if size < _MIN_SIZE or size > _MAX_SIZE:
                                return 3, games[:0], props[:0], moves[:0]
            if nvalues == 0:
                return 1, games[:0], props[:0], moves[:0]  # property with no values
        if not closed:
            return 1, games[:0], props[:0], moves[:0]
        pos = i
        # --- the main line's moves ---------------------------------------------------------------
        game_moves0 = nmoves
        dkind = 0
        dindex = 0
        for m in range(nmain):
            if m > 0 and nodes[m, 4]:
                dkind = 1
                dindex = nmoves - game_moves0
                break
            hb = nodes[m, 0] >= 0
            hw = nodes[m, 2] >= 0
            if not hb and not hw:
                continue
            if hb and hw:
                dkind = 2
                dindex = nmoves - game_moves0
                break
            if nmoves == moves.shape[0]:
                moves = _grow(moves)
            if hb:
                v0 = nodes[m, 0]
                v1 = nodes[m, 1]
                moves[nmoves, 0] = 1
            else:
                v0 = nodes[m, 2]
                v1 = nodes[m, 3]
                moves[nmoves, 0] = 2
            ln = v1 - v0
            if ln == 0:
                moves[nmoves, 1] = size * size
            elif ln == 2:
                col = _letter(buf[v0])
                row = _letter(buf[v0 + 1])
                if col < size and row < size:
                    moves[nmoves, 1] = row * size + col
                elif buf[v0] == 116 and buf[v0 + 1] == 116 and size <= 19:  # tt
                    moves[nmoves, 1] = size * size
                else:
                    return 4, games[:0], props[:0], moves[:0]
            else:
                return 4, games[:0], props[:0], moves[:0]
            nmoves += 1
        if ng == games.shape[0]:
            games = _grow(games)
        games[ng, 0] = game_props0
        games[ng, 1] = nprops
        games[ng, 2] = game_moves0
        games[ng, 3] = nmoves
        games[ng, 4] = dkind
        games[ng, 5] = dindex
        games[ng, 6] = size
        ng += 1
    if ng == 0:
        return 2, games[:0], props[:0], moves[:0]
    return 0, games[:ng], props[:nprops], moves[:nmoves]


class Declined(Exception):
    """The compiled reader does not take this input; ``reason`` says why (see DECLINE_REASONS)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


_DEFECTS = {1: ("bad_setup", "setup stones after the root node"), 2: ("bad_move", "a node with both B and W")}


def read_fast(data: bytes, source: str = "", member: str = "") -> list:
    """Every game tree of ``data`` as a :class:`GameRecord`, or an :class:`SGFError` in its place
    (as :func:`gotk.sgftools.reader.iter_sgf` yields them). Raises :class:`Declined` when the
    input needs the sgfmill path."""
    from gotk.sgftools.reader import record_from_root

    status, games, props, moves = _scan(np.frombuffer(data, dtype=np.uint8))
    if status != OK:
        raise Declined(DECLINE_REASONS[int(status)])
    out: list = []
    plist = props.tolist()
    colors = moves[:, 0].astype(np.int8)
    points = moves[:, 1].astype(np.int16)
    for p0, p1, m0, m1, dkind, dindex, size in games.tolist():
        root: dict = {}
        for code, v0, v1 in plist[p0:p1]:
            name = _NAMES[code]
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
            return colors[m0:m1].copy(), points[m0:m1].copy(), defect

        try:
            out.append(record_from_root(root, main_line, source, member))
        except SGFError as e:
            out.append(e)
    return out
