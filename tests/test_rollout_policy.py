"""The fast rollout policy (``gotk.game.patterns``, ``gotk.train.rollout``): its features on hand-made boards, their
symmetry, the playouts it draws (incremental weights against a recomputation at every move, hand-scored positions),
learning from a real dataset through ``gotk train --model rollout`` and ``gotk eval``, and its use by the search."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import SETTLED, board, invoke, sample_dataset

from gotk import coords
from gotk.game import patterns as P
from gotk.game.moves import sensible_moves
from gotk.game.playouts import Playouts
from gotk.game.state import BLACK, WHITE, GameState
from gotk.train.rollout import RolloutPolicy, load_rollout_policy, previous_moves

#: White's D6-E6 in atari, its one liberty F6, among Black stones (C6 the last to come)
ATARI = [". . . . . . . . .",
         ". . . . . . . . .",
         ". . . B B . . . .",
         ". . B W W . . . .",
         ". . . B B . . . .",
         ". . . . . . . . .",
         ". . . . . . . . .",
         ". . . . . . . . .",
         ". . . . . . . . ."]


def pt(v: str, size: int = 9) -> int:
    return coords.from_gtp(v, size)


def scores_of(state: GameState, W: np.ndarray, last: int = -1, last2: int = -1):
    """Every candidate's score, and the local (point, feature) pairs, for the player to move."""
    e = state.e
    n = state.size * state.size
    cand, score, keys = np.empty(n, np.int64), np.zeros(n), np.zeros(n, np.int64)
    lp, lf, seen = np.empty(P.MAX_LOCAL, np.int64), np.empty(P.MAX_LOCAL, np.int64), np.empty(5, np.int64)
    canon_pat, canon_resp = P.canon_tables()
    k, m = P.move_scores(e.board, e.head, e.nxt, e.libs, e.ssize, e.nbr, W, canon_pat, canon_resp, state.size,
                         state.to_play, last, last2, -1, cand, score, keys, lp, lf, seen)
    return {int(p): float(score[p]) for p in cand[:k]}, list(zip(lp[:m].tolist(), lf[:m].tolist(), strict=True))


def test_pattern_key_by_hand() -> None:
    """D5 with a Black stone in atari to its north (D6, alone between White stones), a White stone east with two
    liberties (E5), the edge nowhere near, a White stone on the C6 diagonal: the key's codes, for each player."""
    st = board([". . . . . . . . .",
                ". . . . . . . . .",
                ". . . W . . . . .",
                ". . W B W . . . .",
                ". . . . W W . . .",
                ". . . . . . . . .",
                ". . . . . . . . .",
                ". . . . . . . . .",
                ". . . . . . . . ."])
    p = pt("D5")
    e = st.e
    kb, ckb = P.codes_at(e.board, e.head, e.libs, 9, p, BLACK)
    # N: own (Black) with 1 liberty = 2; E: opponent with 3+ liberties (E6 string E6-E5-F5 has many) = 7;
    # S, W: empty = 1; NE (E6) opponent = 3, SE (E4) empty, SW (C4) empty, NW (C6) opponent = 3
    assert [(kb >> (3 * k)) & 7 for k in range(4)] == [2, 7, 1, 1]
    assert [(kb >> (12 + 2 * k)) & 3 for k in range(4)] == [3, 1, 1, 3]
    kw, _ = P.codes_at(e.board, e.head, e.libs, 9, p, WHITE)
    assert [(kw >> (3 * k)) & 7 for k in range(4)] == [5, 4, 1, 1]
    assert P.pattern_keys(e.board, e.head, e.libs, 9, p) == (kb, kw)
    assert P.pattern_legal(kb) and P.pattern_legal(kw)
    # a point whose every neighbour is the opponent's with liberties to spare is a suicide; an own eye is not
    eye = board(["B . B", ". B .", "B . B"])
    k3, _ = P.codes_at(eye.e.board, eye.e.head, eye.e.libs, 3, 1, BLACK)
    assert P.own_eye_pattern(k3) and P.pattern_legal(k3)
    k3w, _ = P.codes_at(eye.e.board, eye.e.head, eye.e.libs, 3, 1, WHITE)
    assert not P.pattern_legal(k3w) and not P.own_eye_pattern(k3w)


def _transform(v: int, size: int, t: int) -> int:
    if v < 0:
        return v
    r, c = divmod(v, size)
    if t & 4:
        c = size - 1 - c
    for _ in range(t & 3):
        r, c = c, size - 1 - r
    return r * size + c


@pytest.mark.parametrize("t", range(1, 8))
def test_scores_follow_the_board_symmetries(t: int) -> None:
    """Random weights: a position and its rotated/mirrored copy give every move the same score at its image (the
    pattern and response keys are reduced over the symmetries, the rest is relative to the moves)."""
    rng = np.random.default_rng(t)
    size = 9
    st = GameState(size)
    moves = []
    for _ in range(40):
        p = int(rng.choice(sensible_moves(st)))
        st.play(p)
        moves.append(p)
    W = rng.normal(size=P.N_WEIGHTS)
    a, pairs = scores_of(st, W, moves[-1], moves[-2])
    twin = GameState(size)
    for p in moves:
        twin.play(_transform(p, size, t))
    b, _ = scores_of(twin, W, _transform(moves[-1], size, t), _transform(moves[-2], size, t))
    assert len(a) > 20 and sorted(_transform(p, size, t) for p in a) == sorted(b)
    for p, s in a.items():
        assert b[_transform(p, size, t)] == pytest.approx(s, abs=1e-9)
    assert pairs  # the last moves' features took part


def test_tactical_features_by_hand() -> None:
    """White's two stones D6-E6 in atari after Black's C6 (their one liberty F6): for White that liberty is the
    escape (own string, 1 liberty, 2 stones), for Black the capture (opponent's string, 1 liberty, 2 stones)."""
    rows = ATARI
    W = np.zeros(P.N_WEIGHTS)
    for to_play, fid in ((WHITE, P.OFF_TAC + 0 + 0 + 1), (BLACK, P.OFF_TAC + 6 + 0 + 1)):
        st = board(rows, to_play)
        _, pairs = scores_of(st, W, pt("C6"))
        tac = [(p, f) for p, f in pairs if f >= P.OFF_TAC and f < P.OFF_TAC + 12]
        assert (pt("F6"), fid) in tac
        assert len(tac) == 1  # the Black strings next to C6 have liberties to spare
        # the response features: every empty point of C6's diamond, once
        resp = [p for p, f in pairs if P.OFF_RESP <= f < P.OFF_RESP + (12 << 16)]
        assert sorted(resp) == sorted(pt(v) for v in ("B6", "C7", "C5", "A6", "C8", "C4", "B7", "B5"))
    # a weight on that feature is that move's score, and nothing else's
    W[P.OFF_TAC + 6 + 1] = 2.5
    a, _ = scores_of(board(rows, BLACK), W, pt("C6"))
    assert a[pt("F6")] == 2.5 and sum(v != 0 for v in a.values()) == 1


def test_previous_moves_from_rows() -> None:
    """The last two moves come from the rows before, in the same game, with no move missing between."""
    game = np.array([7, 7, 7, 7, 8, 8])
    mn = np.array([0, 1, 2, 4, 0, 1])  # row 3 follows a pass left out of the dataset
    labels = np.array([10, 11, 12, 13, 20, 21])
    last, last2, carry = previous_moves(game[:2], mn[:2], labels[:2], 9)
    l3, l4, _ = previous_moves(game[2:], mn[2:], labels[2:], 9, carry)
    assert last.tolist() + l3.tolist() == [-1, 10, 11, -1, -1, 20]
    assert last2.tolist() + l4.tolist() == [-1, -1, 10, -1, -1, -1]


def _policy(size: int, seed: int = 0) -> RolloutPolicy:
    return RolloutPolicy(np.random.default_rng(seed).normal(scale=0.7, size=P.N_WEIGHTS), size)


@pytest.mark.parametrize("size", [9, 13])
def test_incremental_weights_equal_recomputed_ones(size: int) -> None:
    """The same seed draws the same playouts whether the weights are updated where a move changed them or
    recomputed everywhere after every move (captures, ko, the edges included over 60 playouts)."""
    pol = _policy(size, size)
    st = GameState(size)
    for v in ("C3", "D4", "E5")[:3]:
        st.play(pt(v, size))
    a = Playouts(size, seed=4, policy=pol).run(st, 60)
    b = Playouts(size, seed=4, policy=pol, full_refresh=True).run(st, 60)
    assert np.array_equal(a, b)
    c = Playouts(size, seed=5, policy=pol).run(st, 60)
    assert not np.array_equal(a, c)


def test_policy_playouts_score_a_settled_position_exactly() -> None:
    """No move is left that fills no own eye: the policy passes, the hand count stands (as uniform playouts)."""
    pol = _policy(5)
    assert np.all(Playouts(5, seed=3, policy=pol).run(board(SETTLED, BLACK, komi=0.5), 32) == -5.5)
    with pytest.raises(ValueError, match="5x5"):
        Playouts(9, policy=pol)


def test_a_learnt_liking_for_captures_and_escapes() -> None:
    """Weights that like taking, or saving, the string the last move left in atari: F6 takes D6-E6 for Black after
    White's E6 and saves it for White after Black's C6, with probability near 1; with no last move (no tactics) F6
    is one move among many."""
    rows = ATARI
    for to_play, last, fid in ((BLACK, "E6", P.OFF_TAC + 6 + 1), (WHITE, "C6", P.OFF_TAC + 0 + 1)):
        W = np.zeros(P.N_WEIGHTS)
        W[fid] = 30.0
        pol = RolloutPolicy(W, 9)
        st = board(rows, to_play)
        assert pol.probabilities(st)[pt("F6")] < 0.05
        st.history.append((3 - to_play, pt(last)))  # what the policy reads as the last move
        probs = pol.probabilities(st)
        assert probs.argmax() == pt("F6") and probs[pt("F6")] > 0.99 and probs.sum() == pytest.approx(1)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return sample_dataset(tmp_path_factory)


@pytest.fixture(scope="module")
def rollout_run(tmp_path_factory, dataset) -> Path:
    out = tmp_path_factory.mktemp("rollout") / "run"
    res = invoke(["train", "--model", "rollout", "--data", str(dataset), "--out", str(out), "--no-progress",
                  "--max-val-positions", "3000"])
    assert res.exit_code == 0, res.output
    assert "val top1" in res.output
    return out


def test_train_and_eval_through_the_cli(rollout_run: Path, dataset: Path) -> None:
    metrics = json.loads((rollout_run / "metrics.json").read_text())
    # 420 games of training: well above the uniform policy (~1/250) and the frequency baseline (~1%)
    assert metrics["val"]["top1"] > 0.12 and metrics["val"]["top5"] > metrics["val"]["top1"]
    assert metrics["positions_seen"] == json.loads((dataset / "manifest.json").read_text())["splits"]["train"]["rows"]
    res = invoke(["eval", "--agent", str(rollout_run / "agent.gotk"), "--data", str(dataset), "--split", "test",
                  "--json"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    assert r["model"] == "rollout" and r["positions"] > 1000 and 0.12 < r["top1"] < r["top5"] < 1
    assert r["nll"] > 0 and r["us_per_position"] > 0
    pol = load_rollout_policy(rollout_run / "agent.gotk")
    assert pol.board_size == 19 and np.any(pol.weights != 0)


def test_one_step_raises_the_played_moves_probability(dataset: Path) -> None:
    from gotk.train.rollout import rollout_batches

    _, batches = rollout_batches(dataset, "train", 64)
    boards, movers, last, last2, labels = next(batches)
    row = slice(30, 31)
    pol = RolloutPolicy(np.zeros(P.N_WEIGHTS), 19)
    before = pol.score_rows(boards[row], movers[row], last[row], last2[row], labels[row])
    pol.score_rows(boards[row], movers[row], last[row], last2[row], labels[row], train=True,
                   grads=np.full(P.N_WEIGHTS, 1e-8), lr=0.1)
    after = pol.score_rows(boards[row], movers[row], last[row], last2[row], labels[row])
    assert after[3] < before[3]  # the NLL of the move played fell


def test_refusals(rollout_run: Path, dataset: Path, tmp_path: Path) -> None:
    agent = str(rollout_run / "agent.gotk")
    for args, words in (
        (["train", "--model", "rollout", "--data", str(dataset), "--out", str(tmp_path / "x"), "--blocks", "3"],
         "does not apply to --model rollout"),
        (["gtp", "--agent", agent], "not a network"),
        (["gtp", "--agent", "kgs", "--visits", "4", "--rollout-policy", agent], "--lambda above 0"),
        (["gtp", "--agent", "kgs", "--rollout-policy", agent], "--visits"),
        (["gtp", "--agent", "mcts", "--visits", "8", "--rollout-policy", "kgs"], "not a rollout policy"),
    ):
        res = invoke(args)
        assert res.exit_code != 0, args
        assert words in res.output and "Traceback" not in res.output, res.output
    assert not (tmp_path / "x").exists()
    nine = tmp_path / "nine.gotk"
    _policy(9).save(nine)
    res = invoke(["gtp", "--agent", "kgs", "--visits", "4", "--lambda", "0.5", "--rollout-policy", str(nine)])
    assert res.exit_code != 0 and "9x9" in res.output and "19x19" in res.output


def test_mcts_with_pattern_priors_plays_gtp(rollout_run: Path) -> None:
    """``--agent mcts --rollout-policy``: the search with the policy's priors and playouts picks a move its policy
    gives a chance, on the policy's board size."""
    from gotk.play.factory import make_search_player
    from gotk.search.config import SearchConfig

    player = make_search_player("mcts", SearchConfig(visits=64, seed=1),
                                rollout_policy=str(rollout_run / "agent.gotk"))
    assert player.board_size == 19 and "agent" in player.name
    st = GameState(19)
    for v in ("Q16", "D4", "Q4"):
        st.play(coords.from_gtp(v, 19))
    move = player.choose(st)
    assert 0 <= move < 361 and st.board[move] == 0
    assert player.evaluator.rollouts >= 63
    probs = player.policy(st)
    assert probs.sum() == pytest.approx(1) and probs[move] > 0
    res = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", "mcts", "--visits", "16", "--rollout-policy",
                          str(rollout_run / "agent.gotk")], input="boardsize 9\nboardsize 19\ngenmove b\nquit\n",
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    answers = [line for line in res.stdout.splitlines() if line.strip()]
    assert answers[0].startswith("?") and answers[1] == "=" and answers[2].startswith("= ") and "pass" not in answers[2]


def test_convert_for_another_board_size(tmp_path: Path) -> None:
    """The policy's features are local: `gotk agent convert --board-size 9` carries its weights to 9x9, recorded as
    resized, and a 9x9 search takes it; a network or --search is refused in one line."""
    from gotk.play.factory import make_search_player
    from gotk.search.config import SearchConfig

    out = tmp_path / "nine.gotk"
    res = invoke(["agent", "convert", "kgs-rollout", "--board-size", "9", "-o", str(out)])
    assert res.exit_code == 0, res.output
    nine, base = load_rollout_policy(out), load_rollout_policy("kgs-rollout")
    assert nine.board_size == 9 and nine.meta["resized_from"] == {"board_size": 19, "agent": "kgs-rollout"}
    assert np.array_equal(nine.weights, base.weights)
    player = make_search_player("mcts", SearchConfig(visits=48, seed=2), rollout_policy=str(out))
    st = GameState(9)
    st.play(pt("E5"))
    move = player.choose(st)
    assert 0 <= move < 81 and st.board[move] == 0
    for args, words in ((["agent", "convert", "kgs", "--board-size", "9", "-o", str(tmp_path / "a")],
                         "converts a rollout policy only"),
                        (["agent", "convert", "kgs-rollout", "--search", "c_puct=2", "-o", str(tmp_path / "b")],
                         "not a rollout policy's")):
        res = invoke(args)
        assert res.exit_code == 2 and words in res.output and "Traceback" not in res.output, res.output
