"""``gotk serve`` with an agent conditioned on metadata (KataGo's human-SL inputs): ``/api/analyse`` shows its policy
as a profile (or two, with the moves that change most), or as a dataset position's recorded metadata row;
``/api/play`` plays as a profile, sampled as :class:`gotk.play.players.PolicyPlayer` samples, reproducible with a
seed. The references are the agent's own API (``Agent.policy``/``value``/``predict``) and the shard's metadata
column read with pyarrow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import archive_slice
from serve_helpers import game_rows, make_agent, make_conditioned_agent, metadata_dataset

from gotk import coords
from gotk.encoders import metadata_inputs as MI
from gotk.errors import GotkError
from gotk.game.state import GameState

pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx (pip install -e '.[test]')")
from test_serve_api import _attr_points, error, make_client  # noqa: E402

MOVES = ["D4", "Q16", "C16"]


@pytest.fixture(scope="module")
def files(tmp_path_factory, sample_archive) -> tuple[Path, Path, Path]:
    """A dataset encoded with --metadata (30 real KGS games), a conditioned agent and a plain one."""
    base = tmp_path_factory.mktemp("serve-profiles")
    data = metadata_dataset(archive_slice(sample_archive, base, 30), base / "human")
    return data, make_conditioned_agent(base / "human.gotk"), make_agent(base / "plain.gotk")


@pytest.fixture(scope="module")
def client(files):
    data, cond, plain = files
    return make_client([data], [cond, plain])


@pytest.fixture(scope="module")
def agent(files):
    from gotk.nets.agent import load_agent

    return load_agent(files[1])


def replayed(moves: list[str]) -> GameState:
    state = GameState.new(19)
    for m in moves:
        state.play(coords.from_gtp(m, 19))
    return state


def by_agent(resp) -> dict:
    assert resp.status_code == 200, resp.text[:300]
    return {r["agent"]: r for r in resp.json()["results"]}


def assert_policy(block: dict, probs: np.ndarray) -> None:
    """A result's top moves, pass probability and heat map are those of ``probs``."""
    order = np.argsort(-probs, kind="stable")[:len(block["top"])]
    assert [t["prob"] for t in block["top"]] == pytest.approx(probs[order], abs=2e-6)
    assert block["top"][0]["move"] == coords.to_gtp(int(order[0]), 19)
    assert block["pass"] == pytest.approx(probs[-1], abs=2e-6)
    if order[0] < 361:
        assert _attr_points(block["svg"], 'data-rank="1"') == [block["top"][0]["move"]]


def test_profiles_change_the_policy(client, agent, files) -> None:
    from gotk.nets.agent import load_agent

    state = replayed(MOVES)
    weak, strong = agent.policy(state, "rank_20k"), agent.policy(state, "rank_9d")
    assert np.abs(weak - strong).max() > 1e-3  # the metadata encoder's output reaches the policy
    r = by_agent(client.post("/api/analyse", json={"source": {"size": 19, "moves": MOVES}, "profile": "rank_20k",
                                                   "compare": "rank_9d", "top": 12}))
    a0 = r["a0"]
    assert a0["profile"] == "rank_20k" and a0["profiles"] == ["rank_20k", "rank_9d"]
    assert a0["compare"]["profile"] == "rank_9d"
    assert_policy(a0, weak)
    assert_policy(a0["compare"], strong)
    assert a0["value"] == pytest.approx(agent.value(state, "rank_20k"), abs=1e-6)
    assert a0["compare"]["value"] == pytest.approx(agent.value(state, "rank_9d"), abs=1e-6)
    # the difference list: the moves whose probability changes most, with both probabilities
    change = strong - weak
    listed = [coords.from_gtp(d["move"], 19) if d["move"] != "pass" else 361 for d in a0["diff"]]
    assert len(listed) == 12 and len(set(listed)) == 12
    assert [d["prob"] for d in a0["diff"]] == pytest.approx(weak[listed], abs=2e-6)
    assert [d["compare_prob"] for d in a0["diff"]] == pytest.approx(strong[listed], abs=2e-6)
    assert [d["change"] for d in a0["diff"]] == pytest.approx(change[listed], abs=2e-6)
    rest = np.delete(np.abs(change), listed)
    assert np.abs(change[listed]).min() >= rest.max() - 1e-6
    assert list(np.abs(change[listed])) == sorted(np.abs(change[listed]), reverse=True)
    # one profile alone: the same block as the compared one above
    alone = by_agent(client.post("/api/analyse", json={"source": {"size": 19, "moves": MOVES}, "profile": "rank_9d",
                                                       "top": 12}))["a0"]
    assert alone["top"] == a0["compare"]["top"] and "compare" not in alone and alone["profiles"] == ["rank_9d"]
    # unconditioned agents ignore profiles, and say so
    plain = r["a1"]
    assert plain["profile_note"] == "not conditioned: profile ignored" and "profile" not in plain
    assert_policy(plain, load_agent(files[2]).policy(state))
    assert r["random"]["profile_note"] == "not conditioned: profile ignored"


def test_recorded_metadata_of_a_dataset_position(client, agent, files) -> None:
    from gotk.serve.agents import state_from_stones
    from gotk.serve.data import DatasetView, stones_at

    data = files[0]
    g = pq.read_table(data / "games.parquet").to_pylist()[1]
    ref = game_rows(data, g["split"], g["game_id"])
    k = 9
    planes = ref["bits"][k].reshape(ref["shape"]).astype(np.uint8)
    row = ref["metadata"][k]
    assert row.shape == (192,) and row.any()
    ds = DatasetView(data, "x")
    _m, gp = ds.positions(g["game_id"])
    state = state_from_stones(stones_at(gp, k, ds.encoder), 19, int(gp.to_play[k]), g["komi"])
    legal = np.zeros(362, bool)
    legal[state.legal_moves()] = True

    def reference(meta_row: np.ndarray) -> tuple[np.ndarray, float]:
        logp, value = agent.predict(planes[None], None, meta_row[None])
        probs = np.where(legal, np.exp(logp[0].astype(np.float64)), 0.0)
        return probs / probs.sum(), float(value[0])

    src = {"dataset": "human", "game": g["game_id"], "move": k}
    a0 = by_agent(client.post("/api/analyse", json={"source": src, "top": 10}))["a0"]
    probs, value = reference(row)
    assert a0["profile"] == "recorded" and a0["planes_from"] == "shard"
    assert_policy(a0, probs)
    assert a0["value"] == pytest.approx(value, abs=1e-6)
    # a profile given wins over the recorded row, on the shard's planes too
    body = {"source": src, "profile": "rank_1k_5d", "compare": "rank_9d"}
    a0 = by_agent(client.post("/api/analyse", json=body))["a0"]
    to_play = 1 if gp.to_play[k] > 0 else 2
    assert_policy(a0, reference(MI.fill_row(MI.profile("rank_1k_5d"), to_play, 361))[0])
    assert_policy(a0["compare"], reference(MI.fill_row(MI.profile("rank_9d"), to_play, 361))[0])
    assert not np.allclose(reference(MI.fill_row(MI.profile("rank_9d"), to_play, 361))[0], probs)


def test_refusals_are_one_line(client) -> None:
    bad = "rank_3x"
    with pytest.raises(GotkError) as e:
        MI.profile(bad)
    want = str(e.value)
    src = {"size": 19, "moves": MOVES}
    for body in ({"profile": bad}, {"profile": "rank_3d", "compare": bad}):
        msg = error(client.post("/api/analyse", json={"source": src, **body}), 400)
        assert msg == want and "\n" not in msg
    assert "compare needs a profile" in error(client.post("/api/analyse", json={"source": src,
                                                                                "compare": "rank_3d"}), 400)
    assert "profile must be str" in error(client.post("/api/analyse", json={"source": src, "profile": 3}), 400)
    # the inputs are checked before any agent runs: a bad profile beside a long search is refused at once
    assert error(client.post("/api/analyse", json={"source": src, "profile": bad, "visits": 5000}), 400) == want
    # a set-up position has no recorded metadata: the conditioned agent asks for a profile, the others answer
    r = by_agent(client.post("/api/analyse", json={"source": src}))
    assert r["a0"]["error"] == "conditioned agent: choose a profile (e.g. rank_3d)" and r["a1"]["top"]
    # a search with a conditioned agent is refused for that agent, as gotk gtp refuses it
    r = by_agent(client.post("/api/analyse", json={"source": src, "profile": "rank_3d", "visits": 8}))
    assert r["a0"]["top"] and "policy alone" in r["a0"]["search"]["error"] and r["a1"]["search"]["visits"] == 8
    play = {"agent": "a0", "size": 19, "human": "W", "moves": []}
    for body, words in (({}, "conditioned agent: choose a profile (e.g. rank_3d)"), ({"profile": bad}, want),
                        ({"profile": "rank_3d", "visits": 8}, "cannot search"),
                        ({"profile": "rank_3d", "argmax": "yes"}, "argmax must be bool"),
                        ({"profile": "rank_3d", "seed": -1}, "seed must be")):
        msg = error(client.post("/api/play", json={**play, **body}), 400)
        assert words in msg and "\n" not in msg


def test_play_as_a_profile_is_reproducible_with_a_seed(client, agent) -> None:
    from gotk.game.moves import sensible_moves
    from gotk.play.players import PolicyPlayer

    play = {"agent": "a0", "size": 19, "human": "W", "moves": [], "profile": "rank_20k"}

    def move(**kw) -> str:
        resp = client.post("/api/play", json={**play, **kw})
        assert resp.status_code == 200, resp.text
        assert resp.json()["profile"] == "rank_20k"
        return resp.json()["agent_move"]

    assert move(seed=5) == move(seed=5)
    sampled = {move(seed=s) for s in range(8)}
    assert len(sampled) > 1  # sampled from the policy, not its most probable move
    state = GameState.new(19)
    # the player is PolicyPlayer's, seeded from the request's seed and the move number
    seed = int(np.random.SeedSequence([5, 0]).generate_state(1)[0])
    direct = PolicyPlayer(agent, temperature=1.0, seed=seed, resign_threshold=None, profile="rank_20k").choose(state)
    assert move(seed=5) == coords.to_gtp(direct, 19)
    # argmax: the profile's most probable sensible move, whatever the seed
    ok = sensible_moves(state)
    best = coords.to_gtp(int(ok[np.argmax(agent.policy(state, "rank_20k")[ok])]), 19)
    assert move(seed=1, argmax=True) == move(seed=2, argmax=True) == best
    # later in the game: the reply after the human's move is reproducible too, and legal
    later = {**play, "human": "B", "moves": ["D4", "Q16"], "move": "C3", "seed": 9}
    a, b = (client.post("/api/play", json=later).json() for _ in range(2))
    assert a["moves"] == b["moves"] and len(a["moves"]) == 4 and a["agent_move"] not in ("D4", "Q16", "C3")
    # an unconditioned agent plays as before and notes the profile it ignored
    r = client.post("/api/play", json={**play, "agent": "a1"}).json()
    assert r["agent_move"] and r["profile_note"] == "not conditioned: profile ignored" and "profile" not in r
