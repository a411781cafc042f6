"""``gotk serve``'s JSON API without a browser (Starlette's TestClient, in process, on a real dataset and a
real agent): what is reachable, bad requests answered 4xx with a message, the games table against a plain
Python filter, the planes against the shard's bits, agents against their own API, SGF round trip; and
``gotk show --svg/--png`` draws the viewer's board."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from serve_helpers import REPO, Server, game_rows, make_agent, write_dataset

from gotk import coords

pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx (pip install -e '.[test]')")
from starlette.testclient import TestClient  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory, encode_expected) -> Path:
    return write_dataset(encode_expected, tmp_path_factory.mktemp("serve-api") / "sample")


@pytest.fixture(scope="module")
def agents(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("serve-agents")
    return make_agent(d / "a19.gotk", 19), make_agent(d / "a9.gotk", 9)


def make_client(folders: list[Path], agent_files: list[Path]) -> TestClient:
    from gotk.serve.agents import load_slots
    from gotk.serve.app import dataset_ids, make_app
    from gotk.serve.data import DatasetView

    views = [DatasetView(f, i) for f, i in zip(folders, dataset_ids(folders), strict=True)]
    return TestClient(make_app(views, load_slots([str(a) for a in agent_files])), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def client(folder, agents) -> TestClient:
    return make_client([folder], list(agents))


def error(resp, status: int) -> str:
    assert resp.status_code == status, (resp.status_code, resp.text[:300])
    body = resp.json()
    assert "Traceback" not in resp.text and body["error"]
    return body["error"]


def some_game(folder: Path, index: int = 0) -> dict:
    return pq.read_table(folder / "games.parquet").to_pylist()[index]


# --- what is reachable ------------------------------------------------------------------------------


def test_only_named_datasets_and_agents(client, folder) -> None:
    info = client.get("/api/info").json()
    assert [d["id"] for d in info["datasets"]] == ["sample"]
    assert [a["id"] for a in info["agents"]] == ["random", "mcts", "a0", "a1"]
    assert client.get("/api/datasets/sample").json()["lines"][0].startswith("gotk dataset")
    assert "no dataset" in error(client.get("/api/datasets/other"), 404)
    assert "no agent" in error(client.post("/api/play", json={"agent": "a7", "size": 9}), 404)


@pytest.mark.parametrize("path", [
    "/api/datasets/..%2F..%2Fetc/games", "/api/datasets/%2Fetc%2Fpasswd", "/static/../pyproject.toml",
    "/static/..%2F..%2Fpyproject.toml", "/api/datasets/sample/games/..%2Fmanifest.json/position",
    "/api/datasets/sample/games/%2Fetc%2Fpasswd/position", "/static/%2Fetc%2Fpasswd", "/nothing",
])
def test_no_path_traversal(client, path) -> None:
    resp = client.get(path)
    assert resp.status_code == 404, (path, resp.status_code)
    assert "root:" not in resp.text and "[project]" not in resp.text


def test_requests_never_name_files(client, folder) -> None:
    g = some_game(folder)["game_id"]
    for planes in ("../manifest.json", "/etc/passwd", "own_liberties_1,../../x"):
        assert "no plane" in error(client.get(f"/api/datasets/sample/games/{g}/position",
                                              params={"planes": planes}), 400)
    for src in ({"dataset": "../sample", "game": g}, {"dataset": str(folder), "game": g}):
        assert "no dataset" in error(client.post("/api/analyse", json={"source": src}), 404)
    assert "no agent" in error(client.post("/api/analyse", json={"agents": [str(REPO / "x.gotk")]}), 404)


# --- malformed requests: 4xx with a message -----------------------------------------------------------


@pytest.mark.parametrize("method,path,payload,status,words", [
    ("get", "/api/datasets/sample/games?offset=abc", None, 400, "offset must be an integer"),
    ("get", "/api/datasets/sample/games?limit=100000", None, 400, "limit"),
    ("get", "/api/datasets/sample/games?limit=0", None, 400, "limit"),
    ("get", "/api/datasets/sample/games?offset=-1", None, 400, "offset"),
    ("get", "/api/datasets/sample/games?offset=" + "9" * 40, None, 400, "offset"),
    ("get", "/api/datasets/sample/games?offset=1000000", None, 400, "past"),
    ("get", "/api/datasets/sample/games?sort=features", None, 400, "cannot sort"),
    ("get", "/api/datasets/sample/games/nope/position", None, 404, "no game"),
    ("post", "/api/analyse", b"not json", 400, "not JSON"),
    ("post", "/api/analyse", b"[1, 2]", 400, "JSON object"),
    ("post", "/api/analyse", {"source": {"size": "x"}}, 400, "size must be int"),
    ("post", "/api/analyse", {"source": {"size": 99}}, 400, "board size"),
    ("post", "/api/analyse", {"source": {"size": 9, "moves": "D4"}}, 400, "moves must be list"),
    ("post", "/api/analyse", {"source": {"size": 9, "moves": ["Z99"]}}, 400, "bad move"),
    ("post", "/api/analyse", {"source": {"size": 9, "moves": [{"a": 1}]}}, 400, "bad move"),
    ("post", "/api/analyse", {"source": {"size": 9, "moves": [10 ** 30]}}, 400, "not on a 9x9"),
    ("post", "/api/analyse", {"source": {"size": 9, "handicap": 12}}, 400, "handicap"),
    ("post", "/api/analyse", {"source": {"size": 9}, "top": 0}, 400, "top"),
    ("post", "/api/analyse", {"source": {"size": 9, "komi": "lots"}}, 400, "komi"),
    ("post", "/api/analyse", {"source": {"size": 9}, "visits": 1}, 400, "visits must be 0 (no search) or 2.."),
    ("post", "/api/analyse", {"source": {"size": 9}, "visits": 10 ** 6}, 400, "visits must be 0"),
    ("post", "/api/analyse", {"source": {"size": 9}, "visits": "many"}, 400, "visits must be int"),
    ("post", "/api/analyse", {"source": {"size": 9}, "visits": 8, "seed": 1.5}, 400, "seed must be int"),
    ("get", "/api/datasets/sample/stats/games.png", None, 404, "no chart 'games'"),
    ("get", "/api/datasets/nope/stats", None, 404, "no dataset"),
    ("post", "/api/play", {"size": 9, "human": "X"}, 400, "human must be"),
    ("post", "/api/play", {"agent": "a0", "size": 9}, 400, "plays 19x19"),
    ("post", "/api/play", {"size": 9, "moves": ["D4", "D4"]}, 400, "move 2 (D4) is illegal"),
    ("post", "/api/play", {"size": 9, "moves": ["D4"], "move": "E5"}, 409, "agent's turn"),
    ("post", "/api/play", {"size": 9, "moves": ["pass", "pass"], "move": "E5"}, 409, "over"),
    ("post", "/api/sgf", {"size": 9, "result": 5}, 400, "result must be str"),
    ("put", "/api/play", None, 405, "Method Not Allowed"),
])
def test_malformed_requests_get_4xx_messages(client, method, path, payload, status, words) -> None:
    kw = {"content": payload} if isinstance(payload, bytes) else {"json": payload} if payload is not None else {}
    resp = getattr(client, method)(path, **kw) if method != "put" else client.put(path)
    assert words in error(resp, status)


def test_huge_move_index_and_illegal_move_in_play(client, folder) -> None:
    g = some_game(folder)
    msg = error(client.get(f"/api/datasets/sample/games/{g['game_id']}/position", params={"move": 10 ** 30}), 404)
    assert f"0..{g['positions'] - 1}" in msg
    msg = error(client.post("/api/analyse", json={"source": {"dataset": "sample", "game": g["game_id"],
                                                             "move": 10 ** 30}}), 404)
    assert "outside" in msg
    # occupied point, then suicide: refused with the engine's reason, nothing played
    assert "occupied" in error(client.post("/api/play", json={"size": 9, "moves": ["E5", "D4"], "move": "E5"}), 400)
    # white A2 and B1 surround A1: black playing there is suicide
    resp = client.post("/api/play", json={"size": 9, "moves": ["pass", "A2", "pass", "B1"], "move": "A1"})
    assert "suicide" in error(resp, 400)


def test_dataset_removed_while_serving(tmp_path, encode_expected) -> None:
    folder = write_dataset(encode_expected, tmp_path / "gone")
    c = make_client([folder], [])
    g = some_game(folder)["game_id"]
    assert c.get(f"/api/datasets/gone/games/{g}/position").status_code == 200
    shutil.rmtree(folder)
    for path in ("/api/datasets/gone", "/api/datasets/gone/games", f"/api/datasets/gone/games/{g}/position",
                 "/api/datasets/gone/stats", "/api/datasets/gone/stats/years.png"):
        assert "removed" in error(c.get(path), 410)
    # shards gone but the manifest back: still a clear message, not a 500
    write_dataset({"manifest.json": encode_expected["manifest.json"]}, folder)
    c2 = make_client([folder], [])
    msg = error(c2.get(f"/api/datasets/gone/games/{g}/position"), 410)
    assert "cannot be read" in msg and str(folder) not in msg
    msg = error(c2.get("/api/datasets/gone/stats"), 410)
    assert "cannot be read" in msg and str(folder) not in msg
    # written again while serving: the manifest changed, the app says so instead of showing stale rows
    write_dataset(encode_expected, folder)
    c3 = make_client([folder], [])
    assert c3.get(f"/api/datasets/gone/games/{g}/position").status_code == 200
    manifest = folder / "manifest.json"
    manifest.write_text(manifest.read_text() + " ")
    assert "written again" in error(c3.get(f"/api/datasets/gone/games/{g}/position"), 410)


# --- the data shown is the data on disk ------------------------------------------------------------------


def test_games_table_filters_sorts_and_pages(client, folder) -> None:
    rows = pq.read_table(folder / "games.parquet").to_pylist()
    player = rows[0]["black"][1:4]
    r = client.get("/api/datasets/sample/games", params={"player": player.upper(), "sort": "num_moves",
                                                          "desc": "1", "limit": 7}).json()
    want = [g for g in rows if player.lower() in (g["black"] or "").lower() or player.lower() in
            (g["white"] or "").lower()]
    want.sort(key=lambda g: (-g["num_moves"], g["game_id"]))
    assert r["total"] == len(want) and [g["game_id"] for g in r["rows"]] == [g["game_id"] for g in want[:7]]
    rank = rows[0]["white_rank_raw"]  # serve shows and matches ranks as written (games.parquet v2: *_raw)
    r = client.get("/api/datasets/sample/games", params={"rank": rank, "result": "b+", "date_from": "2017-02-05",
                                                          "date_to": "2017-02-1", "limit": 500}).json()
    want = {g["game_id"] for g in rows if rank in (g["black_rank_raw"], g["white_rank_raw"])
            and (g["result"] or "").upper().startswith("B+") and "2017-02-05" <= g["date"] and g["date"][:9] <=
            "2017-02-1"}
    assert {g["game_id"] for g in r["rows"]} == want and want
    pages = [client.get("/api/datasets/sample/games", params={"offset": o, "limit": 60}).json()["rows"]
             for o in range(0, len(rows), 60)]
    ids = [g["game_id"] for p in pages for g in p]
    assert sorted(ids) == sorted(g["game_id"] for g in rows) and len(set(ids)) == len(rows)


def test_position_planes_are_the_shard_bits(client, folder) -> None:
    g = some_game(folder, 3)
    ref = game_rows(folder, g["split"], g["game_id"])
    c, h, w = ref["shape"]
    names = ref["plane_names"]
    for k in (0, 5, len(ref["label"]) - 1):
        r = client.get(f"/api/datasets/sample/games/{g['game_id']}/position",
                       params={"move": k, "planes": ",".join(names)}).json()
        assert r["count"] == len(ref["label"]) == g["positions"]
        assert r["next"] == coords.to_gtp(int(ref["label"][k]), h)
        bits = ref["bits"][k].reshape(c, h * w)
        for i, name in enumerate(names):
            drawn = sorted(_attr_points(r["svg"], f'class="overlay" data-plane="{name}"'))
            assert drawn == sorted(coords.to_gtp(int(p), h) for p in np.flatnonzero(bits[i])), (k, name)
            assert r["plane_counts"][name] == int(bits[i].sum())


def _attr_points(svg: str, marker: str) -> list[str]:
    out = []
    for line in svg.splitlines():
        if marker in line:
            out.append(line.split('data-point="')[1].split('"')[0])
    return out


def test_one_rule_per_parameter(client, folder) -> None:
    """A position a game does not have is 404 with the whole range, below 0 as past the end; a filter value
    the table cannot hold is 400 with a message, never silently ignored; the favicon is served."""
    g = some_game(folder)
    last = g["positions"] - 1
    url = f"/api/datasets/sample/games/{g['game_id']}/position"
    for move in (-1, last + 1, 240 if last < 240 else last + 7):
        msg = error(client.get(url, params={"move": move}), 404)
        assert msg == f"move {move} is outside this game's positions 0..{last}"
        src = {"dataset": "sample", "game": g["game_id"], "move": move}
        assert error(client.post("/api/analyse", json={"source": src}), 404) == msg
    assert client.get(url, params={"move": last}).json()["move"] == last
    assert "move must be an integer, got 'x'" in error(client.get(url, params={"move": "x"}), 400)
    games = "/api/datasets/sample/games"
    splits = ", ".join(json.loads((folder / "manifest.json").read_text())["splits"])
    assert error(client.get(games, params={"split": "bogus"}), 400) == f"no split 'bogus'; this dataset has: {splits}"
    for key in ("date_from", "date_to"):
        for bad in ("garbage", "2017-13", "17-02", "2017-02-30x"):
            assert f"{key} must be a date or its start" in error(client.get(games, params={key: bad}), 400)
    assert client.get(games, params={"date_from": "2017-02", "date_to": "2017-02-28"}).status_code == 200
    assert "desc must be 1, 0, true or false, got 'maybe'" in error(client.get(games, params={"desc": "maybe"}), 400)
    for desc, flag in (("1", True), ("true", True), ("0", False), ("", False)):
        assert client.get(games, params={"desc": desc, "sort": "num_moves"}).json()["desc"] is flag
    assert "offset must be >= 0, got -1" in error(client.get(games, params={"offset": -1}), 400)
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO header


def test_rank_chart_and_rank_tables_name_ranks_alike(client) -> None:
    """The ranks chart and the band tables of the stats page follow one rule: ``rank_label`` (``3p``, never
    ``pro``), bands named by the labels of their ends."""
    from gotk.sgf.metadata import RANK_BANDS, RANK_PRO_BASE, rank_band, rank_label

    r = client.get("/api/datasets/sample/stats").json()
    assert "pro" not in r["text"].split() and "pro" not in r["report"]["rank_bands"]
    for name, lo, hi in RANK_BANDS:
        assert name == (rank_label(lo) if lo == hi else f"{rank_label(lo)}-{rank_label(hi)}")
    assert rank_band(RANK_PRO_BASE + 3) == "1p-9p" and rank_label(RANK_PRO_BASE + 3) == "3p"


def test_agents_are_named_by_run_model_and_size(tmp_path, folder) -> None:
    """Every ``gotk train`` run writes ``agent.gotk``: two runs are told apart by their folders, with the model
    and the board size; the same run folder name under two parents shows one more level."""
    files = []
    for rel, size in (("runs/r1/agent.gotk", 19), ("runs/r2/agent.gotk", 9), ("runs/r1/best.gotk", 19),
                      ("old/r2/agent.gotk", 9)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        files.append(make_agent(tmp_path / rel, size))
    names = [a["name"] for a in make_client([folder], files).get("/api/info").json()["agents"]][2:]  # random, mcts
    assert names == ["r1 · resnet 1x8 · 19x19", "runs/r2 · resnet 1x8 · 9x9", "r1/best · resnet 1x8 · 19x19",
                     "old/r2 · resnet 1x8 · 9x9"]


def test_analyse_matches_the_agent_api(client, agents, folder) -> None:
    from gotk.nets.agent import load_agent
    from gotk.serve.agents import build_state, state_from_stones
    from gotk.serve.data import DatasetView, stones_at

    agent = load_agent(agents[0])
    moves = ["D4", "Q16", "pass", "C3"]
    r = client.post("/api/analyse", json={"source": {"size": 19, "moves": moves}, "agents": ["a0", "a1"]}).json()
    probs = agent.policy(build_state(19, 7.5, 0, moves))
    a0 = r["results"][0]
    assert a0["top"][0]["move"] == coords.to_gtp(int(np.argmax(probs)), 19)
    assert abs(a0["value"] - agent.value(build_state(19, 7.5, 0, moves))) < 1e-6
    assert _attr_points(a0["svg"], 'data-rank="1"') == [a0["top"][0]["move"]]
    assert "plays 9x9" in r["results"][1]["error"]
    # a dataset position: the same stones, the player to move of the row
    g = some_game(folder, 2)
    r = client.post("/api/analyse", json={"source": {"dataset": "sample", "game": g["game_id"], "move": 20},
                                          "agents": ["a0"]}).json()
    ds = DatasetView(folder, "x")
    _m, gp = ds.positions(g["game_id"])
    state = state_from_stones(stones_at(gp, 20, ds.encoder), 19, int(gp.to_play[20]), g["komi"])
    # the agent was trained on this encoder: the network reads the shard's planes, illegal moves masked
    logp, value = agent.predict(ref_planes(folder, g, 20)[None])
    probs = np.exp(logp[0])
    legal = np.zeros(probs.size, bool)
    legal[state.legal_moves()] = True
    probs[~legal] = 0
    res = r["results"][0]
    assert res["planes_from"] == "shard" and abs(res["value"] - float(value[0])) < 1e-6
    assert res["top"][0]["move"] == coords.to_gtp(int(np.argmax(probs)), 19)
    assert abs(res["top"][0]["prob"] - probs.max() / probs.sum()) < 1e-5


def test_analyse_searches_with_agents_that_have_a_value_head(client, agents) -> None:
    """``visits`` runs gotk's PUCT search per agent: the same visits, win rates and principal variations as
    :class:`gotk.search.Search` run directly with the same settings; agents that cannot search say why."""
    from gotk.nets.agent import load_agent
    from gotk.search import Search, SearchConfig
    from gotk.search.evaluate import NetEvaluator
    from gotk.serve.agents import build_state

    moves = ["D4", "Q16", "C16"]
    r = client.post("/api/analyse", json={"source": {"size": 19, "moves": moves}, "agents": ["a0", "random"],
                                          "visits": 24, "seed": 3, "top": 50}).json()
    res = {x["agent"]: x for x in r["results"]}
    sr = res["a0"]["search"]
    assert "value head" in res["random"]["search"]["error"]
    # the random player has no policy: no heat map, no top moves, a note with its uniform share
    from gotk.game.moves import sensible_moves

    n = len(sensible_moves(build_state(19, 7.5, 0, moves)))
    rnd = res["random"]
    assert rnd["uniform"] and rnd["top"] == [] and rnd["svg"] is None and not res["a0"]["uniform"]
    assert rnd["note"].startswith(f"no policy: the random player picks uniformly among the {n} sensible moves")
    search = Search(NetEvaluator(load_agent(agents[0]), seed=3), SearchConfig(visits=24, seed=3))
    search.set_position(build_state(19, 7.5, 0, moves))
    search.run(visits=24)
    want = [(coords.to_gtp(i.move, 19), i.visits, i.pv[:12]) for i in search.infos() if i.visits > 0]
    assert sr["visits"] == search.root_visits == 24
    assert [(m["move"], m["visits"], [coords.from_gtp(v, 19) for v in m["pv"]]) for m in sr["moves"]] == want
    # the root's first evaluation is one visit; every other playout went through exactly one root child
    assert sum(m["visits"] for m in sr["moves"]) == 23
    assert abs(sr["winrate"] - (search.root_value() + 1) / 2) < 1e-9
    assert all(0 <= m["winrate"] <= 1 and 0 <= m["prior"] <= 1 for m in sr["moves"])
    # the visits heat map labels the most visited move first
    most = max(m["visits"] for m in sr["moves"])
    top = _attr_points(sr["svg"], 'data-rank="1"')
    assert len(top) == 1 and top[0] in {m["move"] for m in sr["moves"] if m["visits"] == most}
    # without visits no search runs
    plain = client.post("/api/analyse", json={"source": {"size": 19, "moves": moves}, "agents": ["a0"]}).json()
    assert "search" not in plain["results"][0]


def test_play_against_a_searching_agent(client, agents) -> None:
    """``/api/play`` with ``visits``: the agent plays the most visited move of the same search."""
    from gotk.serve.agents import build_state

    r = client.post("/api/play", json={"agent": "a0", "size": 19, "moves": [], "move": "D4", "visits": 12}).json()
    assert r["moves"][0] == "D4" and r["agent_move"] == r["search"]["moves"][0]["move"] == r["moves"][1]
    assert r["search"]["visits"] == 12
    direct = client.post("/api/analyse", json={"source": {"size": 19, "moves": ["D4"]}, "agents": ["a0"],
                                               "visits": 12}).json()["results"][0]["search"]
    assert direct["moves"][0]["move"] == r["agent_move"]
    assert build_state(19, 7.5, 0, r["moves"]).move_number == 2
    assert "value head" in error(client.post("/api/play", json={"agent": "random", "size": 9, "visits": 8}), 400)
    assert "visits must be" in error(client.post("/api/play", json={"agent": "a0", "size": 19, "visits": -3}), 400)


def test_mcts_searches_and_plays_with_rollouts(client) -> None:
    """The built-in mcts: its search is the network-free search gotk gtp --agent mcts runs (the same visits and
    moves for the same seed), its card says its priors are uniform, and it plays a move on any board size."""
    from gotk.search import Search
    from gotk.serve.agents import build_state, mcts_player

    moves = ["E5", "C3"]
    r = client.post("/api/analyse", json={"source": {"size": 9, "moves": moves}, "agents": ["mcts"], "visits": 40,
                                          "top": 50, "seed": 2}).json()["results"][0]
    assert r["uniform"] and r["note"].startswith("no policy: mcts's priors are uniform")
    assert r["value"] is not None and -1 <= r["value"] <= 1
    player = mcts_player(40, 2)
    search: Search = player.search
    search.set_position(build_state(9, 7.5, 0, moves))
    search.run(visits=40)
    want = [(coords.to_gtp(i.move, 9), i.visits) for i in search.infos() if i.visits > 0]
    assert [(m["move"], m["visits"]) for m in r["search"]["moves"]] == want and r["search"]["visits"] == 40
    g = client.post("/api/play", json={"agent": "mcts", "size": 9, "moves": [], "move": "E5", "visits": 30}).json()
    assert g["moves"][0] == "E5" and g["agent_move"] == g["search"]["moves"][0]["move"] == g["moves"][1]
    g = client.post("/api/play", json={"agent": "mcts", "size": 13, "moves": [], "move": "G7"}).json()
    assert len(g["moves"]) == 2 and g["agent_move"] not in (None, "pass")


def test_dataset_positions_are_set_up_with_their_history(folder) -> None:
    """A dataset position given to an agent (and its search) is the game replayed from its first row: encoding
    that state gives the shard's planes bit for bit (ko, history), for every position of a few games."""
    from gotk.encoders import get_encoder
    from gotk.serve.agents import state_from_rows
    from gotk.serve.data import DatasetView

    ds = DatasetView(folder, "x")
    enc = get_encoder(ds.encoder["name"], ds.size, **(ds.encoder.get("options") or {}))
    checked = 0
    for i in range(3):
        g = some_game(folder, i)
        _m, gp = ds.positions(g["game_id"])
        for k in range(0, len(gp.label), 7):
            state, history = state_from_rows(gp, k, ds.encoder, g["komi"])
            assert history
            assert np.array_equal(enc.encode(state), gp.planes[k]), (g["game_id"], k)
            checked += 1
    assert checked > 20
    # rows that do not follow each other: the stones alone, still the same board
    gp.move_number[3] += 1
    state, history = state_from_rows(gp, 5, ds.encoder, 7.5)
    assert not history and np.array_equal(enc.encode(state)[:2], gp.planes[5][:2])


def test_policy_only_agent_cannot_search(tmp_path, folder) -> None:
    import torch

    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    torch.manual_seed(0)
    enc = get_encoder("sevenplane", 9)
    model = build_model("resnet", enc.num_planes, 9, head="policy", blocks=1, filters=8)
    path = save_agent(tmp_path / "p.gotk", model, "resnet", {"blocks": 1, "filters": 8}, enc.describe())
    c = make_client([folder], [path])
    r = c.post("/api/analyse", json={"source": {"size": 9, "moves": ["E5"]}, "agents": ["a0"], "visits": 8}).json()
    assert r["results"][0]["top"] and "value head" in r["results"][0]["search"]["error"]


def test_dataset_stats_are_gotk_stats(client, folder) -> None:
    """The summary page's statistics are ``gotk stats DATASET --json``'s report, with its charts as PNG."""
    resp = client.get("/api/datasets/sample/stats")
    assert resp.status_code == 200
    body = resp.json()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "gotk", "stats", str(folder), "--json"], capture_output=True,
                         text=True, timeout=300, env=env, check=True).stdout
    cli = json.loads(out)
    assert {k: v for k, v in body["report"].items() if k != "plots"} == \
        {k: v for k, v in cli.items() if k in body["report"]}
    games = pq.read_table(folder / "games.parquet")
    assert body["report"]["games"] == games.num_rows == sum(body["report"]["by_year"].values())
    assert body["report"]["positions"] == sum(games.column("positions").to_pylist())
    assert f"games {games.num_rows:,}" in body["text"]
    import matplotlib.image

    for url in body["charts"]:
        png = client.get(url)
        assert png.status_code == 200 and png.headers["content-type"] == "image/png"
        img = matplotlib.image.imread(io.BytesIO(png.content), format="png")
        assert img.shape[0] > 100 and img.shape[1] > 100 and img.std() > 0  # a drawn chart, not a blank


def ref_planes(folder: Path, g: dict, k: int) -> np.ndarray:
    ref = game_rows(folder, g["split"], g["game_id"])
    return ref["bits"][k].reshape(ref["shape"]).astype(np.uint8)


def test_play_undo_and_sgf_round_trip(client) -> None:
    from gotk.game.handicap import fixed_handicap_points
    from gotk.sgf.reader import read_sgf

    r = client.post("/api/play", json={"size": 9, "handicap": 2, "komi": 0.5, "human": "B", "moves": []}).json()
    assert r["agent_move"] and len(r["moves"]) == 1  # white moves first after handicap
    moves = r["moves"]
    for _ in range(3):
        free = next(coords.to_gtp(p, 9) for p in range(81) if coords.to_gtp(p, 9) not in moves
                    and p not in fixed_handicap_points(9, 2))
        r = client.post("/api/play", json={"size": 9, "handicap": 2, "komi": 0.5, "human": "B", "moves": moves,
                                           "move": free}).json()
        assert r["moves"][len(moves)] == free and len(r["moves"]) == len(moves) + 2
        moves = r["moves"]
    text = client.post("/api/sgf", json={"size": 9, "handicap": 2, "komi": 0.5, "moves": moves, "result": "W+R",
                                         "black": "me", "white": "gotk random"}).text
    rec = read_sgf(text.encode())[0]
    assert rec.size == 9 and rec.komi == 0.5 and rec.black == "me" and str(rec.result).startswith("W+R")
    assert sorted(rec.setup_black) == sorted(fixed_handicap_points(9, 2))
    assert [coords.to_gtp(p, 9) for _c, p in rec.moves] == moves
    # the human takes white: the agent opens as black
    r = client.post("/api/play", json={"size": 9, "human": "W", "moves": []}).json()
    assert len(r["moves"]) == 1 and r["agent_move"] == r["moves"][0] and r["to_play"] == "W"
    # two passes end the game with an area score
    r = client.post("/api/play", json={"size": 9, "human": "B", "moves": ["E5", "pass"], "move": "pass"}).json()
    assert r["over"] and r["result"] == "B+73.5"


# --- the command line ---------------------------------------------------------------------------------------


def _gotk(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gotk", *args], capture_output=True, text=True, timeout=timeout,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_cli_refuses_bad_inputs_and_warns_off_loopback(tmp_path, folder) -> None:
    bad = tmp_path / "bad.gotk"
    bad.write_bytes(b"not a zip")
    r = _gotk("serve", str(folder), "--agent", str(bad), "--port", "0")
    assert r.returncode == 2 and "bad.gotk" in r.stderr
    r = _gotk("serve", str(tmp_path), "--port", "0")
    assert r.returncode == 2 and "not a gotk dataset" in r.stderr
    r = _gotk("serve", str(tmp_path), "--host", "0.0.0.0", "--port", "0")  # fails on the dataset: binds nothing
    assert r.returncode == 2 and "NO authentication" in r.stderr
    from gotk.cli.serve import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.org")


def test_cli_serves_on_loopback(folder) -> None:
    import urllib.request

    server = Server(str(folder))
    try:
        assert server.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.url + "/api/info", timeout=30) as resp:
            assert json.loads(resp.read())["datasets"][0]["id"] == "sample"
        with urllib.request.urlopen(server.url + "/", timeout=30) as resp:
            assert b"/static/app.js" in resp.read()
        # answers are not held back by Nagle's algorithm: on a kept-alive connection a small request takes
        # milliseconds, not the ~40 ms of the client's delayed ACK (the listening socket is created as TCP)
        import http.client
        import statistics
        import time

        host, port = server.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        took = []
        for _ in range(15):
            t = time.perf_counter()
            conn.request("GET", "/api/info")
            assert conn.getresponse().read()
            took.append(time.perf_counter() - t)
        conn.close()
        assert statistics.median(took) < 0.030, took
    finally:
        server.stop()


def test_show_svg_and_png_draw_the_viewers_board(client, folder, tmp_path) -> None:
    g = some_game(folder, 1)
    ref = game_rows(folder, g["split"], g["game_id"])
    k = 12
    # the split row of position k of this game
    manifest = json.loads((folder / "manifest.json").read_text())
    ids = [i for s in manifest["splits"][g["split"]]["shards"]
           for i in pq.read_table(folder / s["file"], columns=["game_id"])["game_id"].to_pylist()]
    row = ids.index(g["game_id"]) + k
    svg, png = tmp_path / "b.svg", tmp_path / "b.png"
    r = _gotk("show", str(folder), "-s", g["split"], "-r", str(row), "--svg", str(svg), "--png", str(png),
              "--plane", "own_liberties_3plus", "--plane", "ko")
    assert r.returncode == 0, r.stderr
    web = client.get(f"/api/datasets/sample/games/{g['game_id']}/position",
                     params={"move": k, "planes": "own_liberties_3plus,ko"}).json()["svg"]
    assert svg.read_text() == web
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    width, height = (int(web.split(f'{k}="')[1].split('"')[0]) for k in ("width", "height"))
    assert Image.open(png).size == (width, height) and height > width  # the legend under the board
    # the legend names each overlaid plane beside a mark of its colour, in the file as on the page
    legend = re.findall(r'<text [^>]*class="legend" data-plane="([^"]+)"', web)
    marks = dict(re.findall(r'<rect [^>]*fill="(#[0-9A-Fa-f]+)"[^>]*class="legend-mark" data-plane="([^"]+)"', web))
    assert legend == ["own_liberties_3plus", "ko"] and set(marks.values()) == set(legend)
    from PIL import ImageOps

    # the PNG draws the same legend: its strip under the board is not empty
    strip = ImageOps.grayscale(Image.open(png).convert("RGB")).crop((0, width, width, height))
    assert strip.getextrema()[0] < 60  # dark text and outlines are there
    assert ref["label"][k] == coords.from_gtp(_attr_points(web, 'class="next-move"')[0], 19)
    r = _gotk("show", str(folder), "-s", g["split"], "-r", str(row), "--svg", str(svg), "--plane", "nope")
    assert r.returncode == 2 and "no plane 'nope'" in r.stderr


def test_searches_with_alphagos_mix_and_a_rollout_policy(tmp_path) -> None:
    """``gotk serve --lambda 0.5 --rollout-policy kgs-rollout``: the agents' searches value their leaves with the
    mix (rollouts played by the policy: their count grows with the search), mcts takes the policy's priors and its
    board size; a policy of another board size than an agent's is refused."""
    from gotk.errors import GotkError
    from gotk.search.rollouts import MixedEvaluator
    from gotk.serve.agents import build_state, load_slots, search

    slots = {s.ident: s for s in load_slots(["kgs"], 0.5, "kgs-rollout")}
    state = build_state(19, 7.5, 0, ["D4", "Q16"])
    summary, shares, move = search(slots["a0"], state, 12)
    assert summary["visits"] == 12 and shares.sum() == pytest.approx(1) and 0 <= move < 361
    assert slots["a0"].rollout_policy.name == "kgs-rollout" and slots["a0"].leaf_lambda == 0.5
    assert slots["mcts"].size == 19 and "kgs-rollout rollouts" in slots["mcts"].name
    from gotk.play.factory import search_player
    from gotk.search import SearchConfig

    player = search_player(slots["a0"].agent, SearchConfig(visits=12, leaf_lambda=0.5), keep={"leaf_lambda"},
                           rollout_policy=slots["a0"].rollout_policy)
    assert isinstance(player.evaluator, MixedEvaluator)
    player.think(state)
    assert player.evaluator.rollouts.rollouts >= 11
    from gotk.train.rollout import RolloutPolicy, load_rollout_policy

    nine = tmp_path / "nine.gotk"
    RolloutPolicy(load_rollout_policy("kgs-rollout").weights, 9).save(nine)
    with pytest.raises(GotkError, match="9x9"):
        load_slots(["kgs"], 0.5, str(nine))
    with pytest.raises(GotkError, match="--lambda"):
        load_slots([], 1.5)
