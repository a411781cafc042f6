"""``gotk serve`` driven by a real headless Chromium (Debian's ``chromium`` through playwright, never a
downloaded browser): open a dataset, step through a game, overlay a plane and compare it with the
shard's bits, compare an agent's heat map with ``gotk-policy``, play against the random agent.

Set ``GOTK_SCREENSHOTS=docs/img`` to save the screenshots shown in the README there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import archive_slice
from serve_helpers import REPO, Server, game_rows, make_agent, make_conditioned_agent, metadata_dataset, write_dataset

from gotk import coords
from gotk.serve.draw import CELL, MARGIN, NUMBER_SHIFT

CHROMIUM = os.environ.get("GOTK_CHROMIUM", "/usr/bin/chromium")

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the CI installs it (pip install -e '.[test]')
    sync_playwright = None


@pytest.fixture(scope="module")
def browser():
    if sync_playwright is None:
        pytest.skip("playwright is not installed (pip install playwright; the browser is Debian's chromium)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium; .ci/run installs it)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory, encode_expected):
    folder = write_dataset(encode_expected, tmp_path_factory.mktemp("serve") / "kgs-sample")
    agent = make_agent(folder.parent / "tiny.gotk")
    server = Server(str(folder), "--agent", str(agent))
    yield server, folder, agent
    server.stop()


def new_page(browser):
    """A fresh 1280x900 page; after the test, no JavaScript error may have been thrown."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert not errors, f"JavaScript errors: {errors}"


@pytest.fixture
def page(browser, served):
    yield from new_page(browser)


def shot(page, name: str) -> None:
    folder = os.environ.get("GOTK_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def points(page, selector: str, attr: str = "data-point") -> list[str]:
    return page.eval_on_selector_all(selector, f"els => els.map(e => e.getAttribute('{attr}'))")


def test_dataset_games_viewer_and_planes(page, served) -> None:
    server, folder, _agent = served
    page.goto(server.url + "/")
    page.click("a.dataset-link")
    page.wait_for_selector("table.games tbody tr")
    assert "sevenplane" in page.inner_text("pre.summary")
    # the gotk stats charts: every image drawn (decoded by the browser), and the headline's game count
    page.wait_for_function("document.querySelectorAll('img.stats-chart').length === 6 && "
                           "[...document.querySelectorAll('img.stats-chart')]"
                           ".every(i => i.complete && i.naturalWidth > 100)")
    games = pq.read_table(folder / "games.parquet").num_rows
    assert page.inner_text("#stats-headline").startswith(f"{games:,} games")
    # each chart is drawn at its own aspect ratio (a flex row once stretched them all to the tallest)
    sizes = page.eval_on_selector_all("img.stats-chart", "els => els.map(i => [i.naturalWidth, i.naturalHeight, "
                                      "i.getBoundingClientRect().width, i.getBoundingClientRect().height])")
    assert len({round(nw / nh, 2) for nw, nh, _w, _h in sizes}) > 1  # the charts do differ in shape
    for nw, nh, w, h in sizes:
        assert abs((w / h) / (nw / nh) - 1) < 0.02, (nw, nh, w, h)
    shot(page, "serve-dataset.png")
    # sort by moves (descending: click twice), filter by result, then open the first game
    page.click("th[data-col=num_moves]")
    page.wait_for_selector("th[data-col=num_moves]:has-text('▲')")
    page.click("th[data-col=num_moves]")
    page.wait_for_selector("th[data-col=num_moves]:has-text('▼')")
    moves = [int(x) for x in page.eval_on_selector_all("table.games tbody tr td:nth-child(9)",
                                                      "els => els.map(e => e.textContent)")]
    assert moves == sorted(moves, reverse=True) and len(moves) == 50
    page.fill("input[name=result]", "W+")
    page.click("form.filters button")
    page.wait_for_function("document.querySelector('#games-count').textContent.includes('games') && "
                           "[...document.querySelectorAll('table.games tbody tr td:nth-child(6)')]"
                           ".every(td => td.textContent.startsWith('W+'))")
    game_id = page.get_attribute("table.games tbody tr", "data-game")
    page.click("table.games tbody tr a.game-link")
    page.wait_for_selector("svg.board")

    meta = game_rows(folder, _split_of(folder, game_id), game_id)
    size = meta["shape"][1]
    # step with the keyboard: 3 x right, then up (-10 clamps at 0), then down (+10)
    for _ in range(3):
        before = page.inner_text("#pos")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"document.querySelector('#pos') && document.querySelector('#pos').textContent "
                               f"!== '{before}'")
    assert page.inner_text("#pos") == "4"
    assert points(page, "circle.next-move") == [coords.to_gtp(int(meta["label"][3]), size)]
    assert len(points(page, "circle.stone")) == 3
    page.keyboard.press("ArrowDown")
    page.wait_for_function("document.querySelector('#pos').textContent === '14'")
    k = 13
    assert points(page, "circle.next-move") == [coords.to_gtp(int(meta["label"][k]), size)]
    # the move numbers drawn on the stones are the recorded moves
    nums = [int(n) for n in page.eval_on_selector_all("text.number", "els => els.map(e => e.textContent)")]
    played = {int(m) + 1 for m, lab in zip(meta["move_number"][:k], meta["label"][:k], strict=True)
              if lab < size * size}
    assert nums and set(nums) <= played and len(nums) == len(set(nums))

    # overlay two planes: each drawn square is exactly a set bit of the shard row
    c, h, w = meta["shape"]
    planes = meta["bits"][k].reshape(c, h * w)
    for name in ("own_liberties_3plus", "opponent_liberties_3plus"):
        page.check(f"input.plane-toggle[data-plane={name}]")
        page.wait_for_selector(f"rect.overlay[data-plane={name}]")
    shot(page, "serve-viewer.png")
    for name in ("own_liberties_3plus", "opponent_liberties_3plus"):
        i = meta["plane_names"].index(name)
        drawn = sorted(points(page, f"rect.overlay[data-plane={name}]"))
        expected = sorted(coords.to_gtp(int(p), size) for p in np.flatnonzero(planes[i]))
        assert drawn == expected and drawn
    # each mark sits inside its point's stone, outlined, on a white halo; the legend names both planes
    marks = page.eval_on_selector_all("#board rect.overlay", MARK_BOXES)
    for plane, point, cx, cy, w, stroke in marks:
        x, y = _centre(point, size)
        assert abs(cx - x) + w / 2 <= CELL / 2 and abs(cy - y) + w / 2 <= CELL / 2 and stroke == "#000", plane
    assert page.eval_on_selector_all("#board rect.mark-halo", "els => els.length") == len(marks) + 2
    assert points(page, "#board text.legend", "data-plane") == ["own_liberties_3plus", "opponent_liberties_3plus"]
    _coordinates_clear(page)
    # toggling off removes that overlay only; one plane alone is a square centred on the point
    page.uncheck("input.plane-toggle[data-plane=own_liberties_3plus]")
    page.wait_for_function("!document.querySelector('rect.overlay[data-plane=own_liberties_3plus]')")
    assert points(page, "rect.overlay[data-plane=opponent_liberties_3plus]")
    # (on a stone with a move number, the mark sits a little lower, under the number)
    numbered = set(points(page, "#board text.number"))
    for _plane, point, cx, cy, _w, _stroke in page.eval_on_selector_all("#board rect.overlay", MARK_BOXES):
        x, y = _centre(point, size)
        assert (cx, cy) == pytest.approx((x, y + (NUMBER_SHIFT if point in numbered else 0)), abs=0.01)
    assert numbered


MARK_BOXES = ("els => els.map(e => { const b = e.getBBox(); return [e.dataset.plane, e.dataset.point, "
              "b.x + b.width / 2, b.y + b.height / 2, b.width, e.getAttribute('stroke')]; })")


def _centre(point: str, size: int) -> tuple[float, float]:
    row, col = divmod(coords.from_gtp(point, size), size)
    return MARGIN + col * CELL, MARGIN + row * CELL


def _coordinates_clear(page) -> None:
    """No stone covers a coordinate label (in the SVG's own units)."""
    hits = page.evaluate("""() => {
        const box = e => e.getBBox();
        const stones = [...document.querySelectorAll('#board circle.stone')].map(box);
        const labels = [...document.querySelectorAll('#board text.coord')].map(box);
        return labels.filter(l => stones.some(s => l.x < s.x + s.width && s.x < l.x + l.width &&
                                                   l.y < s.y + s.height && s.y < l.y + l.height)).length;
    }""")
    assert hits == 0


def _split_of(folder: Path, game_id: str) -> str:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(folder / "games.parquet", columns=["game_id", "split"])
    return t.filter(pc.equal(t["game_id"], game_id))["split"][0].as_py()


def _gtp_policy(agent: Path, moves: list[str]) -> list[str]:
    """``gotk-policy`` of ``gotk gtp --agent`` after ``moves`` (alternating, black first)."""
    cmds = [f"play {'BW'[i % 2]} {m}" for i, m in enumerate(moves)] + ["gotk-policy 3", "quit"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(agent)], input="\n".join(cmds) + "\n",
                         capture_output=True, text=True, timeout=120, env=env, check=True).stdout
    answer = out.split("\n\n")[len(moves)]
    return [line.split()[0] for line in answer.lstrip("= ").splitlines() if not line.startswith("value")]


def test_agent_heat_map_matches_gotk_policy(page, served) -> None:
    server, _folder, agent = served
    page.goto(server.url + "/#/analyse")
    page.wait_for_selector(".agent-card[data-agent=a0] text.top-move")
    clicked = ["D4", "Q16", "K10"]
    for i, vertex in enumerate(clicked):
        page.click(f"#board rect.target[data-point={vertex}]")
        page.wait_for_function(f"document.querySelectorAll('#board circle.stone').length === {i + 1}")
    page.wait_for_selector(".agent-card[data-agent=a0] text.top-move[data-rank='1']")
    shot(page, "serve-analyse.png")
    top = points(page, ".agent-card[data-agent=a0] text.top-move[data-rank='1']")
    listed = page.get_attribute(".agent-card[data-agent=a0] ol.top-moves li", "data-move")
    expected = _gtp_policy(agent, clicked)
    assert top == [expected[0]] and listed == expected[0]
    assert page.inner_text(".agent-card[data-agent=a0] .value") not in ("", "no value head")
    # a position from the dataset: the viewer's link opens it with every agent's heat map
    page.goto(server.url + "/#/d/kgs-sample")
    page.click("table.games tbody tr a.game-link")
    page.wait_for_selector("#analyse-link")
    page.click("#analyse-link")
    page.wait_for_selector(".agent-card[data-agent=a0] rect.heat")
    # the random player has no policy: it says so instead of drawing a uniform heat map and a top 10
    assert "no policy" in page.inner_text(".agent-card[data-agent=random] .no-policy")
    assert not points(page, ".agent-card[data-agent=random] rect.heat")
    assert not points(page, ".agent-card[data-agent=random] ol.top-moves li", "data-move")


def test_search_visits_and_win_rates_on_the_agent_page(page, served) -> None:
    """The analyse page's search: the table lists the root moves by visits, as the API's search gives them."""
    server, _folder, _agent = served
    page.goto(server.url + "/#/analyse")
    page.wait_for_selector(".agent-card[data-agent=a0] text.top-move")
    page.click("#board rect.target[data-point=D4]")
    page.wait_for_function("document.querySelectorAll('#board circle.stone').length === 1")
    page.fill("#visits", "16")
    page.click("#search")
    page.wait_for_selector(".agent-card[data-agent=a0] .search table.search-moves tbody tr")
    assert page.get_attribute(".agent-card[data-agent=a0] .search", "data-visits") == "16"
    rows = page.eval_on_selector_all(".agent-card[data-agent=a0] table.search-moves tbody tr",
                                     "els => els.map(e => [e.dataset.move, +e.dataset.visits])")
    visits = [v for _m, v in rows]
    assert visits == sorted(visits, reverse=True) and 0 < sum(visits) <= 15
    # the visits heat map labels the table's first rows 1, 2, ... (ties in the table's order, not the board's)
    labels = [points(page, f".agent-card[data-agent=a0] .search text.top-move[data-rank='{r}']")
              for r in range(1, 6)]
    assert labels == [[m] for m, _v in rows[:5]] + [[]] * (5 - len(rows[:5]))
    assert "value head" in page.inner_text(".agent-card[data-agent=random] .search-error")
    shot(page, "serve-search.png")
    # the same request through the API: the page shows what the search returned
    payload = {"source": {"size": 19, "moves": ["D4"]}, "agents": ["a0"], "visits": 16, "top": 10}
    req = urllib.request.Request(server.url + "/api/analyse", method="POST",
                                 headers={"Content-Type": "application/json"}, data=json.dumps(payload).encode())
    with urllib.request.urlopen(req, timeout=120) as resp:
        api = json.loads(resp.read())["results"][0]["search"]
    assert [[m["move"], m["visits"]] for m in api["moves"]] == [list(r) for r in rows]


def test_search_result_is_in_view_at_1400x1000(browser, served) -> None:
    """At 1400x1000 pressing "search" shows the result and the random player's refusal without scrolling."""
    server, _folder, _agent = served
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        pg = ctx.new_page()
        pg.goto(server.url + "/#/analyse")
        pg.wait_for_selector(".agent-card[data-agent=a0] text.top-move")
        pg.fill("#visits", "16")
        pg.click("#search")
        pg.wait_for_selector(".agent-card[data-agent=a0] .search table.search-moves tbody tr")
        assert pg.evaluate("window.scrollY") == 0

        def box(sel: str) -> dict:
            return pg.eval_on_selector(sel, "e => { const b = e.getBoundingClientRect(); "
                                            "return {top: b.top, bottom: b.bottom, left: b.left, right: b.right}; }")

        for sel in (".agent-card[data-agent=a0] .search h4", ".agent-card[data-agent=a0] .search svg.board",
                    ".agent-card[data-agent=a0] .search table.search-moves tbody tr",
                    ".agent-card[data-agent=random] .search-error"):
            b = box(sel)
            assert 0 <= b["top"] and b["bottom"] <= 1000 and 0 <= b["left"] and b["right"] <= 1400, (sel, b)
        shot(pg, "serve-search-1400x1000.png")
    finally:
        ctx.close()


def test_play_starts_with_the_first_agent_and_switches_at_once(page, served) -> None:
    """The page opens on the first agent file on its board size; choosing another agent starts a new game with
    it at once (the request after the change names it). Agents are listed by run folder, model and size."""
    server, _folder, agent = served
    page.goto(server.url + "/#/play")
    page.wait_for_selector("#board svg.board")
    assert page.input_value("#agent") == "a0"
    assert page.get_attribute("#board svg.board", "data-size") == "19" and page.is_disabled("#psize")
    label = page.inner_text("#agent option[value=a0]")
    assert label == f"{agent.parent.name}/{agent.stem} · resnet 1x8 · 19x19"
    page.click("#board rect.target[data-point=D4]")
    page.wait_for_function("document.querySelector('#board').dataset.moves === '2'")
    with page.expect_request("**/api/play") as req:
        page.select_option("#agent", "random")
    sent = req.value.post_data_json
    assert sent["agent"] == "random" and sent["moves"] == [] and sent["move"] is None
    page.wait_for_function("document.querySelector('#board').dataset.moves === '0'")
    assert page.is_enabled("#psize")
    with page.expect_request("**/api/play") as req:
        page.click("#board rect.target[data-point=Q16]")
    assert req.value.post_data_json["agent"] == "random"


def test_play_three_moves_against_random(page, served) -> None:
    server, _folder, _agent = served
    page.goto(server.url + "/#/play")
    page.wait_for_selector("#newgame")
    page.select_option("#agent", "random")
    page.fill("#psize", "9")
    page.click("#start")
    page.wait_for_selector("svg.board[data-size='9'] rect.target")
    stone_list = "els => els.map(e => e.dataset.color + e.dataset.point)"
    played = []
    for i in range(3):
        # the random reply may take any empty point: play the first candidate still empty
        taken = {s[1:] for s in page.eval_on_selector_all("#board circle.stone", stone_list)}
        vertex = next(v for v in ["E5", "C3", "G7", "C7", "G3", "E3"] if v not in taken)
        played.append(vertex)
        page.click(f"#board rect.target[data-point={vertex}]")
        page.wait_for_function(f"document.querySelector('#board').dataset.moves === '{2 * (i + 1)}'")
    stones = page.eval_on_selector_all("#board circle.stone", stone_list)
    assert {"B" + v for v in played} <= set(stones) and len(stones) == 6
    # an illegal move (occupied point) is refused with a message and changes nothing
    page.click(f"#board rect.target[data-point={played[0]}]")
    page.wait_for_selector("#error:not([hidden])")
    assert "illegal" in page.inner_text("#error") or "occupied" in page.inner_text("#error")
    assert page.get_attribute("#board", "data-moves") == "6"
    shot(page, "serve-play.png")
    # undo takes back the agent's reply and my last move; then resign and save the game as SGF
    page.click("#undo")
    page.wait_for_function("document.querySelector('#board').dataset.moves === '4'")
    page.click("#resign")
    assert "W+R" in page.inner_text("#status")
    with page.expect_download() as dl:
        page.click("#save")
    text = Path(dl.value.path()).read_text()
    from gotk.sgf.reader import read_sgf

    rec = read_sgf(text.encode())[0]
    assert rec.size == 9 and rec.num_moves == 4 and str(rec.result).startswith("W+R") or "W+R" in text
    assert [coords.to_gtp(p, 9) for _c, p in rec.moves][::2] == played[:2]


def test_removed_dataset_shows_a_message(browser, tmp_path, encode_expected) -> None:
    folder = write_dataset(encode_expected, tmp_path / "gone")
    server = Server(str(folder))
    ctx = browser.new_context()
    try:
        pg = ctx.new_page()
        pg.goto(server.url + "/")
        (folder / "manifest.json").unlink()
        pg.click("a.dataset-link")
        pg.wait_for_selector("#error:not([hidden])")
        assert "removed" in pg.inner_text("#error")
    finally:
        ctx.close()
        server.stop()


# --- an agent conditioned on metadata: profiles -------------------------------------------------------------


@pytest.fixture(scope="module")
def served_profiles(tmp_path_factory, sample_archive):
    """gotk serve over a dataset encoded with --metadata, a conditioned agent (a0) and a plain one (a1)."""
    base = tmp_path_factory.mktemp("serve-profiles")
    folder = metadata_dataset(archive_slice(sample_archive, base, 30), base / "human")
    server = Server(str(folder), "--agent", str(make_conditioned_agent(base / "human.gotk")), "--agent",
                    str(make_agent(base / "plain.gotk")))
    yield server
    server.stop()


@pytest.fixture
def ppage(browser, served_profiles):
    yield from new_page(browser)


def post(server, path: str, payload: dict) -> dict:
    req = urllib.request.Request(server.url + path, method="POST", headers={"Content-Type": "application/json"},
                                 data=json.dumps(payload).encode())
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def test_two_profiles_side_by_side(ppage, served_profiles) -> None:
    """The analyse page with a conditioned agent: two profiles' heat maps side by side under their names, and the
    moves that change most between them, as the API gives them; a bad profile name shows the API's message."""
    server, page = served_profiles, ppage
    page.goto(server.url + "/#/analyse")
    page.wait_for_selector("#profiles:not([hidden]) #profile")
    page.wait_for_selector(".agent-card[data-agent=a0] .agent-error")
    assert "choose a profile" in page.inner_text(".agent-card[data-agent=a0] .agent-error")
    for i, vertex in enumerate(["D4", "Q16"]):
        page.click(f"#board rect.target[data-point={vertex}]")
        page.wait_for_function(f"document.querySelectorAll('#board circle.stone').length === {i + 1}")
    page.fill("#profile", "rank_20k")
    page.fill("#compare", "rank_9d")
    page.click("#show-profiles")
    card = ".agent-card[data-agent=a0]"
    page.wait_for_selector(f"{card} .profile-pair .policy[data-profile=rank_9d] svg.board")
    boxes = page.eval_on_selector_all(f"{card} .profile-pair .policy", """els => els.map(e => {
        const b = e.querySelector('svg.board').getBoundingClientRect();
        return [e.dataset.profile, e.querySelector('h4').textContent, b.left, b.right, b.top, b.width]; })""")
    assert [b[0] for b in boxes] == ["rank_20k", "rank_9d"]
    assert [b[1] for b in boxes] == ["policy as rank_20k", "policy as rank_9d"]
    (_, _, l1, r1, t1, w1), (_, _, l2, _r2, t2, w2) = boxes
    assert abs(t1 - t2) < 1 and l2 >= r1 and w1 == w2 > 200  # side by side, the same size
    shot(page, "serve-profiles.png")
    api = post(server, "/api/analyse", {"source": {"size": 19, "moves": ["D4", "Q16"]}, "top": 10,
                                        "profile": "rank_20k", "compare": "rank_9d", "visits": 0})
    a0 = next(r for r in api["results"] if r["agent"] == "a0")
    diff = points(page, f"{card} table.profile-diff tbody tr", "data-move")
    assert diff == [d["move"] for d in a0["diff"]] and diff
    for profile, block in (("rank_20k", a0), ("rank_9d", a0["compare"])):
        listed = points(page, f"{card} .policy[data-profile={profile}] ol.top-moves li", "data-move")
        assert listed == [t["move"] for t in block["top"]]
    # the unconditioned agent shows its policy and says the profile is not for it
    assert page.inner_text(".agent-card[data-agent=a1] .profile-note") == "not conditioned: profile ignored"
    assert points(page, ".agent-card[data-agent=a1] rect.heat")
    # a name metadata_inputs does not know: the API's one-line message in the red bar
    page.fill("#compare", "rank_10x")
    page.click("#show-profiles")
    page.wait_for_selector("#error:not([hidden])")
    assert "unknown human-SL profile 'rank_10x'" in page.inner_text("#error")


def test_dataset_position_uses_its_recorded_players(ppage, served_profiles) -> None:
    server, page = served_profiles, ppage
    page.goto(server.url + "/#/d/human")
    page.click("table.games tbody tr a.game-link")
    page.wait_for_selector("#analyse-link")
    page.click("#analyse-link")
    page.wait_for_selector(".agent-card[data-agent=a0] .policy[data-profile=recorded] rect.heat")
    assert page.get_attribute("#profile", "placeholder") == "recorded"


def test_play_as_a_profile(ppage, served_profiles) -> None:
    """The play page: the profile box shows for the conditioned agent only; its game's requests carry the profile
    and one seed, so the agent's reply to the same moves is the same."""
    server, page = served_profiles, ppage
    page.goto(server.url + "/#/play")
    page.wait_for_selector("#board svg.board")
    assert page.input_value("#agent") == "a0" and page.is_visible("#pprofile") and page.is_disabled("#pvisits")
    page.fill("#pprofile", "rank_5k")
    page.select_option("#human", "W")
    with page.expect_request("**/api/play") as req:
        page.click("#start")
    sent = req.value.post_data_json
    assert sent["profile"] == "rank_5k" and isinstance(sent["seed"], int) and sent["argmax"] is False
    page.wait_for_function("document.querySelector('#board').dataset.moves === '1'")
    assert "as rank_5k" in page.inner_text("#status")
    first = points(page, "#board circle.stone")
    again = post(server, "/api/play", {**sent, "move": None})
    assert again["moves"] == [first[0]] == [again["agent_move"]]
    page.select_option("#agent", "a1")
    page.wait_for_function("document.querySelector('#board').dataset.moves === '1'")
    assert not page.is_visible("#pprofile") and page.is_enabled("#pvisits")
