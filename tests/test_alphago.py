"""The AlphaGo encoder on hand-made positions: every plane family, ko, eyes, snapback, ladders."""

from __future__ import annotations

import numpy as np
import pytest
from ladder_reference import attacker_wins, defender_dies, try_play

from gotk.encoders.alphago import AlphaGoEncoder, plane_names
from gotk.game.state import BLACK, WHITE, GameState, Rules
from gotk.sgf.record import GameRecord


def position(diagram: str, to_play: int = BLACK) -> GameState:
    """A state from an ASCII diagram (``X`` black, ``O`` white, ``.`` empty; row 0 on top)."""
    rows = [line.split() for line in diagram.strip().splitlines()]
    size = len(rows)
    assert all(len(r) == size for r in rows)
    black = [r * size + c for r in range(size) for c in range(size) if rows[r][c] == "X"]
    white = [r * size + c for r in range(size) for c in range(size) if rows[r][c] == "O"]
    return GameState(size).setup(black, white, to_play=to_play)


def encode(state: GameState, **options) -> dict[str, np.ndarray]:
    enc = AlphaGoEncoder(state.size, **options)
    planes = enc.encode(state)
    assert planes.shape == enc.shape and planes.dtype == np.uint8
    return dict(zip(enc.plane_names, planes, strict=True))


def in_family(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and not (prefix == "liberties_" and name.startswith("liberties_after_"))


def family(planes: dict, prefix: str) -> list[np.ndarray]:
    return [v for k, v in planes.items() if in_family(k, prefix)]


def bucket(planes: dict, prefix: str, r: int, c: int) -> str | None:
    """Name of the one plane of a family set at (r, c), None if none is (asserts at most one)."""
    hits = [k for k, v in planes.items() if in_family(k, prefix) and v[r, c]]
    assert len(hits) <= 1, hits
    return hits[0] if hits else None


# --- description ------------------------------------------------------------------------------


def test_plane_names_and_options():
    enc = AlphaGoEncoder()
    assert enc.num_planes == 48 and len(set(enc.plane_names)) == 48
    assert enc.plane_names[:6] == ["stone_player", "stone_opponent", "stone_empty", "ones", "zeros", "sensibleness"]
    assert enc.plane_names[46:] == ["ladder_capture", "ladder_escape"]
    assert AlphaGoEncoder(player_plane=True).plane_names == plane_names(True)
    assert AlphaGoEncoder(player_plane=True).shape == (49, 19, 19)
    assert enc.describe()["options"] == {"player_plane": False, "ladders": True}


def test_stone_constant_and_player_planes():
    diagram = """
    . . . . .
    . X O . .
    . . X . .
    . . . . .
    . . . . .
    """
    for to_play in (BLACK, WHITE):
        st = position(diagram, to_play)
        p = encode(st, player_plane=True)
        mine = st.grid() == to_play
        theirs = st.grid() == 3 - to_play
        assert np.array_equal(p["stone_player"], mine)
        assert np.array_equal(p["stone_opponent"], theirs)
        assert np.array_equal(p["stone_empty"], st.grid() == 0)
        assert p["ones"].all() and not p["zeros"].any()
        assert p["player_is_black"].all() == (to_play == BLACK) and p["player_is_black"].any() == (to_play == BLACK)


# --- liberties, turns since ------------------------------------------------------------------------


def test_liberties_of_strings():
    st = position("""
    X O . . . . . . .
    . O . . . . . . .
    O . . . . . . . .
    . . . . . . . . .
    . . . . X X X . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    """)
    p = encode(st)
    assert bucket(p, "liberties_", 0, 0) == "liberties_1"  # black corner stone: (1,0)
    assert bucket(p, "liberties_", 0, 1) == "liberties_4"  # white pair: (0,2), (1,2), (2,1), (1,0)
    assert bucket(p, "liberties_", 1, 1) == "liberties_4"
    assert bucket(p, "liberties_", 2, 0) == "liberties_3"  # white (2,0): (1,0), (3,0), (2,1)
    for c in (4, 5, 6):
        assert bucket(p, "liberties_", 4, c) == "liberties_8plus"  # 3-stone line: 8 liberties
    assert not any(v[st.grid() == 0].any() for v in family(p, "liberties_"))  # empty points: none


def test_liberty_buckets():
    # corner stone 2, edge stone 3, lone stone 4, edge pair 5, open pair 6, open L of three 7
    st = position("""
    X . . . . . . . .
    . . . . . . . . .
    . . X . . . . . .
    . . X . . . . . .
    . . . . . . . X X
    . . . . . X . . .
    . . . . . X X . .
    . X . . . . . . .
    . . . . . . . . .
    """)
    p = encode(st)
    assert bucket(p, "liberties_", 0, 0) == "liberties_2"
    assert bucket(p, "liberties_", 7, 1) == "liberties_4"
    assert bucket(p, "liberties_", 4, 8) == "liberties_5"  # (3,7),(3,8),(5,7),(5,8),(4,6)
    assert bucket(p, "liberties_", 2, 2) == "liberties_6"
    assert bucket(p, "liberties_", 6, 6) == "liberties_7"  # (4,5),(5,4),(5,6),(6,4),(6,7),(7,5),(7,6)
    edge = position(". . . X . . .\n" + ". . . . . . .\n" * 6)
    assert bucket(encode(edge), "liberties_", 0, 3) == "liberties_3"


def test_turns_since_counts_moves_and_passes():
    st = GameState(9).setup(black=[0], white=[80])
    moves = [(BLACK, 10), (WHITE, 11), (BLACK, 12), (WHITE, 81), (BLACK, 14), (WHITE, 15), (BLACK, 16),
             (WHITE, 17), (BLACK, 18), (WHITE, 19)]  # 81 = pass
    for color, point in moves:
        st.play(point, color)
    p = encode(st)
    total = len(moves)
    for i, (_, point) in enumerate(moves):
        if point == 81:
            continue
        age = total - i  # last move: 1
        r, c = divmod(point, 9)
        want = f"turns_since_{age}" if age <= 7 else "turns_since_8plus"
        assert bucket(p, "turns_since_", r, c) == want
    assert bucket(p, "turns_since_", 0, 0) == "turns_since_8plus"  # setup stones count as oldest
    assert bucket(p, "turns_since_", 8, 8) == "turns_since_8plus"
    assert not any(v[st.grid() == 0].any() for v in family(p, "turns_since_"))


# --- legal-move planes -------------------------------------------------------------------------


CAPTURES = """
. X O X . . .
X O . O X . .
. X O X . . .
. X O X . . .
. . X . . . .
. . . . . . .
. . . . . . .
"""


def test_multi_string_capture_and_suicide():
    st = position(CAPTURES)
    p = encode(st)
    # (1,2) captures three single stones and a 2-stone string
    assert bucket(p, "capture_size_", 1, 2) == "capture_size_5"
    # freed liberties: the four neighbours; (3,2) is freed but does not touch the new stone
    assert bucket(p, "liberties_after_", 1, 2) == "liberties_after_4"
    assert bucket(p, "self_atari_size_", 1, 2) is None
    assert p["sensibleness"][1, 2] == 1
    # an ordinary move captures nothing: capture_size_0; empty corner point: 2 liberties
    assert bucket(p, "capture_size_", 6, 6) == "capture_size_0"
    assert bucket(p, "liberties_after_", 6, 6) == "liberties_after_2"
    assert bucket(p, "liberties_after_", 5, 5) == "liberties_after_4"
    # occupied points carry no move planes
    assert all(v[st.grid() != 0].sum() == 0 for k in ("capture_size_", "liberties_after_", "sensibleness")
               for v in family(p, k))
    # for white, (1,2) is suicide: no legal-move plane at all, even under suicide-allowing rules
    sw = position(CAPTURES, WHITE)
    sw.rules = Rules(suicide=True)
    q = encode(sw)
    for prefix in ("capture_size_", "liberties_after_", "self_atari_size_", "sensibleness", "ladder_"):
        assert all(v[1, 2] == 0 for v in family(q, prefix)), prefix
    assert q["stone_empty"][1, 2] == 1


def test_liberties_after_merges_strings():
    st = position("""
    . . . . . . .
    . X . X . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    """)
    p = encode(st)
    # (1,2) joins two stones: liberties (0,1),(0,2),(0,3),(1,0),(1,4),(2,1),(2,2),(2,3) = 8
    assert bucket(p, "liberties_after_", 1, 2) == "liberties_after_8plus"
    assert bucket(p, "liberties_after_", 0, 1) == "liberties_after_5"  # (0,0),(0,2),(1,0),(1,2),(2,1)
    pw = encode(position(str_board(st), WHITE))
    # for white, (0,1) sits between black stones: (0,0), (0,2) left
    assert bucket(pw, "liberties_after_", 0, 1) == "liberties_after_2"


def str_board(st: GameState) -> str:
    g = st.grid()
    return "\n".join(" ".join(".XO"[v] for v in row) for row in g)


def test_snapback_sequence():
    diagram = """
    X O . . O X .
    X O O O O X .
    X X X X X X .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    """
    st = position(diagram)
    p = encode(st)
    # the throw-in: a legal self-atari of one stone that ataris the white string
    assert p["sensibleness"][0, 2] == 1
    assert bucket(p, "capture_size_", 0, 2) == "capture_size_0"
    assert bucket(p, "liberties_after_", 0, 2) == "liberties_after_1"
    assert bucket(p, "self_atari_size_", 0, 2) == "self_atari_size_1"
    assert p["ladder_capture"][0, 2] == 1  # white's only answers leave it capturable: a snapback
    st.play(2, BLACK)
    p = encode(st)  # white to move: taking the stone is itself a 7-stone self-atari
    assert bucket(p, "capture_size_", 0, 3) == "capture_size_1"
    assert bucket(p, "liberties_after_", 0, 3) == "liberties_after_1"
    assert bucket(p, "self_atari_size_", 0, 3) == "self_atari_size_7"
    assert p["ladder_escape"][0, 3] == 0
    st.play(3, WHITE)
    p = encode(st)  # black recaptures seven stones
    assert bucket(p, "capture_size_", 0, 2) == "capture_size_7plus"
    assert bucket(p, "liberties_after_", 0, 2) == "liberties_after_3"
    assert bucket(p, "self_atari_size_", 0, 2) is None


def test_self_atari_size_of_merged_string():
    st = position("""
    O . . . . . .
    O X X O . . .
    . O O . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    """)
    p = encode(st)
    # (0,1) joins the black pair: 3 stones left with the single liberty (0,2)
    assert bucket(p, "liberties_after_", 0, 1) == "liberties_after_1"
    assert bucket(p, "self_atari_size_", 0, 1) == "self_atari_size_3"
    assert bucket(p, "capture_size_", 0, 1) == "capture_size_0"
    # (0,2) keeps two liberties, (0,1) and (0,3)
    assert bucket(p, "liberties_after_", 0, 2) == "liberties_after_2"
    assert bucket(p, "self_atari_size_", 0, 2) is None


def test_ko_point_is_not_legal_for_the_player():
    st = position("""
    . X O . . . .
    X O . O . . .
    . X O . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    """)
    p = encode(st)
    assert bucket(p, "capture_size_", 1, 2) == "capture_size_1"
    assert bucket(p, "self_atari_size_", 1, 2) == "self_atari_size_1"
    st.play(1 * 7 + 2, BLACK)  # takes the ko
    assert st.ko_point == 8
    q = encode(st)
    for prefix in ("capture_size_", "liberties_after_", "self_atari_size_", "sensibleness", "ladder_"):
        assert all(v[1, 1] == 0 for v in family(q, prefix)), prefix
    assert bucket(q, "capture_size_", 6, 6) == "capture_size_0"


# --- sensibleness and eyes ---------------------------------------------------------------------------


@pytest.mark.parametrize("diagram, point, sensible", [
    # corner eye, diagonal own / opponent (the corner allows none)
    ("X . . . . . .\nX X . . . . .", (0, 1), 1),  # an empty neighbour: no eye
    ("X . X . . . .\n. X X . . . .\n. . . . . . .", (0, 1), 0),
    (". X . . . . .\nX X . . . . .", (0, 0), 0),
    (". X . . . . .\nX O . . . . .", (0, 0), 1),
    # edge eye: both diagonals own → eye; one opponent diagonal → false eye
    (". X . X . . .\n. X X X . . .", (0, 2), 0),
    (". X . X . . .\n. O X X . . .", (0, 2), 1),
    # centre: one opponent diagonal is still an eye, two are not
    (". . . . . . .\n. O X . . . .\n. X . X . . .\n. . X X . . .", (2, 2), 0),
    (". . . . . . .\n. O X O . . .\n. X . X . . .\n. . X . . . .", (2, 2), 1),
])
def test_own_eye_is_not_sensible(diagram, point, sensible):
    rows = [r for r in diagram.splitlines()]
    rows += [". . . . . . ."] * (7 - len(rows))
    st = position("\n".join(rows))
    p = encode(st)
    r, c = point
    assert p["sensibleness"][r, c] == sensible
    assert bucket(p, "capture_size_", r, c) == "capture_size_0"  # the eye point itself is legal


def test_opponent_eye_is_not_sensible_for_the_other_side():
    st = position(". X . X . . .\n. X X X . . .\n" + ". . . . . . .\n" * 4 + ". . . . . . .", WHITE)
    p = encode(st)
    assert p["sensibleness"][0, 2] == 0  # suicide for white
    assert bucket(p, "liberties_after_", 0, 2) is None
    assert p["sensibleness"][3, 3] == 1


# --- ladders -----------------------------------------------------------------------------------

LADDER = """
. . . . . . . . . . .
. . . . . . . . . . .
. . . . . . . . . . .
. . . . . . . . . . .
. . . . X . . . . . .
. . . X O . . . . . .
. . . . . X . . . . .
. . . . . . . . . . .
. . . . . . . . . . .
. . . . . . . . . . .
. . . . . . . . . . .
"""


def with_stones(diagram: str, black=(), white=()) -> str:
    rows = [line.split() for line in diagram.strip().splitlines()]
    for r, c in black:
        rows[r][c] = "X"
    for r, c in white:
        rows[r][c] = "O"
    return "\n".join(" ".join(r) for r in rows)








def play_ladder(st: GameState, atari: int, target: int) -> bool:
    """True if the player to move captures ``target`` by a ladder started at ``atari`` (reference)."""
    s = try_play(st, atari, st.to_play)
    return s is not None and s.liberties_at(target) == 1 and defender_dies(s, target)




def test_ladder_works_on_an_open_board():
    st = position(LADDER)
    p = encode(st)
    # both ataris of the white stone start ladders that run to an empty corner and work
    assert p["ladder_capture"][5, 5] == 1 and p["ladder_capture"][6, 4] == 1
    assert play_ladder(st, 5 * 11 + 5, 5 * 11 + 4) and play_ladder(st, 6 * 11 + 4, 5 * 11 + 4)
    assert p["ladder_capture"].sum() == 2
    assert encode(st, ladders=False)["ladder_capture"].sum() == 0
    # white to move, the stone is not in atari: no escape moves
    assert encode(position(LADDER, WHITE))["ladder_escape"].sum() == 0


def test_ladder_broken_by_defender_stone():
    st = position(with_stones(LADDER, white=[(8, 1)]))  # in the path of the ladder towards the lower left
    p = encode(st)
    assert p["ladder_capture"][5, 5] == 0
    assert not play_ladder(st, 5 * 11 + 5, 5 * 11 + 4)
    assert p["ladder_capture"][6, 4] == 1  # the other direction is untouched
    # a stone of the attacker's colour in the same place only helps
    assert encode(position(with_stones(LADDER, black=[(8, 1)])))["ladder_capture"][5, 5] == 1


def test_ladder_broken_by_capturable_attacker_stone():
    # the black stone above the white one has a single liberty: after the atari, white captures it
    weak = position(with_stones(LADDER, white=[(3, 4), (4, 5)]))
    assert weak.liberties_at(4 * 11 + 4) == 1
    assert encode(weak)["ladder_capture"][5, 5] == 0
    assert not play_ladder(weak, 5 * 11 + 5, 5 * 11 + 4)
    # connected to (5,3) the same stone is safe and the ladder works again
    strong = position(with_stones(LADDER, black=[(4, 3)], white=[(3, 4), (4, 5)]))
    assert encode(strong)["ladder_capture"][5, 5] == 1
    assert play_ladder(strong, 5 * 11 + 5, 5 * 11 + 4)


def test_ladder_escape():
    st = position(LADDER)
    st.play(5 * 11 + 5, BLACK)  # atari: white to move
    p = encode(st)
    assert p["ladder_escape"][6, 4] == 0  # running is futile: the ladder works
    broken = position(with_stones(LADDER, white=[(8, 1)]))
    broken.play(5 * 11 + 5, BLACK)
    q = encode(broken)
    assert q["ladder_escape"][6, 4] == 1
    assert q["ladder_escape"].sum() == 1 and p["ladder_escape"].sum() == 0


@pytest.mark.parametrize("size", [19, 25])
def test_long_ladder_across_the_board(size):
    """A ladder from one corner to the other (about 60 plies on 19x19, 90 on 25x25) is read to the end."""
    def pt(r, c):
        return r * size + c

    shape = dict(black=[pt(1, 2), pt(2, 1), pt(1, 3)], white=[pt(2, 2)])
    st = GameState(size).setup(shape["black"], shape["white"])
    assert encode(st)["ladder_capture"][3, 2] == 1
    if size == 19:
        assert play_ladder(st, pt(3, 2), pt(2, 2))
    # a white stone near the far corner breaks it
    far = GameState(size).setup(shape["black"], shape["white"] + [pt(size - 3, size - 2)])
    assert encode(far)["ladder_capture"][3, 2] == 0


EDGE = """
. . X O . . . . . . .
. . . X . . . . . . .
""" + ". . . . . . . . . . .\n" * 9


def test_ladder_escape_along_the_edge():
    dies = position(EDGE, WHITE)  # white (0,3) in atari crawls along the first line into the corner
    p = encode(dies)
    assert bucket(p, "liberties_after_", 0, 4) == "liberties_after_2"
    assert p["ladder_escape"][0, 4] == 0
    assert attacker_wins(dies.copy().play(4, WHITE), 3)
    runs = position(with_stones(EDGE, white=[(0, 8)]), WHITE)  # a friendly stone on the way
    assert encode(runs)["ladder_escape"][0, 4] == 1
    assert not attacker_wins(runs.copy().play(4, WHITE), 3)


# --- encode_game ----------------------------------------------------------------------------------


def test_encode_game_matches_encode():
    size = 9
    moves = [(BLACK, 40), (WHITE, 41), (BLACK, 31), (WHITE, 81), (BLACK, 49), (WHITE, 32), (BLACK, 50),
             (WHITE, 39), (BLACK, 30)]
    rec = GameRecord(size=size, colors=np.array([c for c, _ in moves], dtype=np.int8),
                     points=np.array([p for _, p in moves], dtype=np.int16), setup_black=(0,))
    for player_plane in (False, True):
        enc = AlphaGoEncoder(size, player_plane=player_plane)
        game = enc.encode_game(rec)
        assert game.error is None and game.moves_replayed == len(moves)
        assert list(game.move_numbers) == [i for i, (_, p) in enumerate(moves) if p != 81]
        st = GameState(size).setup(black=[0])
        j = 0
        for i, (color, point) in enumerate(moves):
            st.to_play = color
            if point != 81:
                assert np.array_equal(game.features[j], enc.encode(st)), i
                assert game.labels[j] == point and game.to_play[j] == (1 if color == BLACK else -1)
                j += 1
            st.play(point, color)
        with_passes = enc.encode_game(rec, include_passes=True, skip_first=2)
        assert list(with_passes.move_numbers) == list(range(2, len(moves)))
