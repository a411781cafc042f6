"""``gotk serve`` under load: many concurrent clients mixing games-table queries, position pages and searches,
every answer checked, and the table's latency measured while searches run.

A ``gotk serve DATASET --agent AGENT`` subprocess is started on 127.0.0.1 (any free port), or ``--url`` names one
already running on a loopback address (nothing else is accepted). ``--clients`` clients run at once for at most
``--seconds`` and ``--requests`` requests in all: ``--analysers`` of them post ``/api/analyse`` with ``--visits``
visits on random positions of the dataset (at most ``--analyses`` in all), the others ask for a games-table page
(two times in three: a random sort, direction and filter) or a position page with one or two planes overlaid,
pausing ``--think`` seconds on average between requests as a reader of the page does (0: none, a flood).

Every answer is checked: a table page's ``total`` against the same filter applied here in plain Python to
``games.parquet`` (read with pyarrow, not through gotk), its rows against the filter and the sort order; a
position page's move, length and overlaid planes; a search's root visits (exactly ``--visits``) and its moves in
descending visits. Latencies are reported per kind (p50 / p95 / p99 / max, ms), the table's separately for the
requests sent while at least one search was in flight; the goal is a p99 under 200 ms there. Exit code 1 when an
answer is wrong, a request failed, or the goal is missed.

Without ``--agent``, an untrained agent of the default ``gotk train`` shape (resnet 6 blocks x 64 filters, both
heads) on the dataset's encoder is written to a temporary folder: untrained weights cost the same as trained ones.

    python bench/serve_load.py DATASET [--agent FILE] [--clients 50] [--analysers 6] [--visits 800]
        [--seconds 120] [--requests 3000] [--analyses 40] [--think 0.5] [--seed 0] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, machine_info, write_json  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GOAL_MS = 200.0
SORTS = ("date", "num_moves", "black", "white", "komi", "result")


def default_agent(dataset: Path, folder: Path) -> Path:
    """An untrained resnet 6x64 with both heads on the dataset's encoder (the default ``gotk train`` shape)."""
    import torch

    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    enc_desc = json.loads((dataset / "manifest.json").read_text())["encoder"]
    enc = get_encoder(enc_desc["name"], int(enc_desc["board_size"]), **(enc_desc.get("options") or {}))
    torch.manual_seed(0)
    model = build_model("resnet", enc.num_planes, int(enc_desc["board_size"]), head="both", blocks=6, filters=64)
    return save_agent(folder / "agent.gotk", model, "resnet", {"blocks": 6, "filters": 64}, enc.describe())


def start_server(dataset: Path, agent: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "gotk", "serve", str(dataset), "--agent", str(agent),
                             "--host", "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise SystemExit(f"error: gotk serve did not start: {line.strip()!r}")
    return proc, line[line.index("http://"):].strip().rstrip("/")


def loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Games:
    """The games table read straight from ``games.parquet``: the reference answers for the table queries."""

    def __init__(self, dataset: Path) -> None:
        import pyarrow.parquet as pq

        cols = ["game_id", "black", "white", "result", "date", "split", "num_moves", "komi"]
        self.rows = pq.read_table(dataset / "games.parquet", columns=cols).to_pylist()
        self.splits = sorted({r["split"] for r in self.rows if r["split"]})
        self.names = sorted({r["black"] for r in self.rows if r["black"]})
        self.months = sorted({r["date"][:7] for r in self.rows if r["date"]})

    def query(self, rng: random.Random) -> dict:
        q: dict = {"sort": rng.choice(SORTS), "desc": rng.choice(("0", "1")), "limit": "50"}
        kind = rng.choice(("none", "player", "result", "date_from", "date_to", "split"))
        if kind == "player":
            name = rng.choice(self.names)
            start = rng.randrange(max(1, len(name) - 2))
            q["player"] = name[start:start + 3]
        elif kind == "result":
            q["result"] = rng.choice(("B+", "W+", "B+R", "W+T"))
        elif kind in ("date_from", "date_to"):
            q[kind] = rng.choice(self.months)
        elif kind == "split":
            q["split"] = rng.choice(self.splits)
        return q

    def keep(self, r: dict, q: dict) -> bool:
        if "player" in q:
            p = q["player"].lower()
            if p not in (r["black"] or "").lower() and p not in (r["white"] or "").lower():
                return False
        if "result" in q and not (r["result"] or "").lower().startswith(q["result"].lower()):
            return False
        if "date_from" in q and not (r["date"] is not None and r["date"] >= q["date_from"]):
            return False
        if "date_to" in q and not (r["date"] is not None and r["date"][:len(q["date_to"])] <= q["date_to"]):
            return False
        return not ("split" in q and r["split"] != q["split"])

    def check(self, q: dict, answer: dict) -> str | None:
        """None when the page is right, else what is wrong."""
        want = sum(1 for r in self.rows if self.keep(r, q))
        if answer["total"] != want:
            return f"total {answer['total']} != {want} for {q}"
        if any(not self.keep(r, q) for r in answer["rows"]):
            return f"a row outside the filter {q}"
        values = [r[q["sort"]] for r in answer["rows"] if r[q["sort"]] is not None]
        if values != sorted(values, reverse=q["desc"] == "1"):
            return f"rows not sorted by {q['sort']} (desc {q['desc']})"
        if len(answer["rows"]) != min(50, want):
            return f"{len(answer['rows'])} rows on the first page of {want}"
        return None


async def run_load(url: str, dataset: Path, args) -> dict:
    import httpx

    games = Games(dataset)
    rng = random.Random(args.seed)
    limits = httpx.Limits(max_connections=args.clients + 4, max_keepalive_connections=args.clients + 4)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        info = (await client.get("/api/info")).json()
        ds = info["datasets"][0]["id"]
        agent = next(a["id"] for a in info["agents"] if a["id"] != "random" and a["has_value"])
        planes = (await client.get(f"/api/datasets/{ds}")).json()["encoder"]["plane_names"]
        sample = rng.sample(games.rows, min(60, len(games.rows)))
        lengths = {}
        for g in sample:  # the positions each game has (setup, not timed)
            r = (await client.get(f"/api/datasets/{ds}/games/{g['game_id']}/position", params={"move": 0})).json()
            lengths[g["game_id"]] = r["count"]
        ids = sorted(lengths)

        records: list[dict] = []
        state = {"sent": 0, "analyses": 0, "in_flight": 0}
        deadline = time.monotonic() + args.seconds

        async def one(kind: str, crng: random.Random) -> None:
            t0 = time.perf_counter()
            during = state["in_flight"] > 0
            wrong = None
            try:
                if kind == "table":
                    q = games.query(crng)
                    resp = await client.get(f"/api/datasets/{ds}/games", params=q)
                    wrong = f"status {resp.status_code}" if resp.status_code != 200 else games.check(q, resp.json())
                elif kind == "position":
                    g = crng.choice(ids)
                    k = crng.randrange(lengths[g])
                    pl = crng.sample(planes, crng.choice((1, 2)))
                    resp = await client.get(f"/api/datasets/{ds}/games/{g}/position",
                                            params={"move": k, "planes": ",".join(pl)})
                    if resp.status_code != 200:
                        wrong = f"status {resp.status_code}"
                    else:
                        a = resp.json()
                        if (a["move"], a["count"], [x["plane"] for x in a["legend"]]) != (k, lengths[g], pl) \
                                or not a["svg"].startswith("<svg"):
                            wrong = f"position {g} {k} {pl}: got move {a['move']} of {a['count']}"
                else:
                    g = crng.choice(ids)
                    k = crng.randrange(lengths[g])
                    state["in_flight"] += 1
                    try:
                        resp = await client.post("/api/analyse", json={
                            "source": {"dataset": ds, "game": g, "move": k}, "agents": [agent],
                            "visits": args.visits, "top": 10})
                    finally:
                        state["in_flight"] -= 1
                    if resp.status_code != 200:
                        wrong = f"status {resp.status_code}: {resp.text[:200]}"
                    else:
                        sr = resp.json()["results"][0].get("search") or {}
                        v = [m["visits"] for m in sr.get("moves", [])]
                        if sr.get("visits") != args.visits or v != sorted(v, reverse=True) or sum(v) >= args.visits:
                            wrong = f"search of {g} {k}: visits {sr.get('visits')}, moves {v[:5]}"
            except httpx.HTTPError as e:
                wrong = f"{type(e).__name__}: {e}"
            records.append({"kind": kind, "ms": 1000 * (time.perf_counter() - t0), "during": during,
                            "wrong": wrong})

        async def client_loop(n: int) -> None:
            crng = random.Random(args.seed * 1000 + n)
            analyser = n < args.analysers
            while time.monotonic() < deadline and state["sent"] < args.requests:
                if analyser:
                    if state["analyses"] >= args.analyses:
                        return
                    state["analyses"] += 1
                    kind = "analyse"
                else:
                    kind = "table" if crng.random() < 2 / 3 else "position"
                state["sent"] += 1
                await one(kind, crng)
                if not analyser and args.think > 0:  # a user reads the page before the next click
                    await asyncio.sleep(crng.expovariate(1 / args.think))

        t0 = time.perf_counter()
        await asyncio.gather(*(client_loop(n) for n in range(args.clients)))
        wall = time.perf_counter() - t0
    return {"records": records, "wall_s": wall}


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path, help="A dataset folder written by gotk encode.")
    ap.add_argument("--agent", type=Path, help="An agent with a value head (default: an untrained resnet 6x64).")
    ap.add_argument("--url", help="A gotk serve already running on a loopback address (else one is started).")
    ap.add_argument("--clients", type=int, default=50, help="Concurrent clients [50].")
    ap.add_argument("--analysers", type=int, default=6, help="Clients that post searches [6].")
    ap.add_argument("--visits", type=int, default=800, help="Visits per search [800].")
    ap.add_argument("--seconds", type=float, default=120, help="Stop sending after this many seconds [120].")
    ap.add_argument("--requests", type=int, default=3000, help="At most this many requests in all [3000].")
    ap.add_argument("--analyses", type=int, default=40, help="At most this many searches [40].")
    ap.add_argument("--think", type=float, default=0.5,
                    help="Mean pause of a table/position client between requests, seconds (exponential) [0.5].")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", dest="json_path", help="Also write the results here.")
    args = ap.parse_args(argv)
    if not (args.dataset / "games.parquet").is_file():
        print(f"error: {args.dataset} is not a dataset folder (no games.parquet)", file=sys.stderr)
        return 2
    if not 1 <= args.clients <= 500 or not 0 <= args.analysers <= args.clients or args.seconds <= 0 \
            or not 1 <= args.requests <= 100_000:
        print("error: --clients 1..500, --analysers 0..clients, --seconds > 0, --requests 1..100000", file=sys.stderr)
        return 2
    if args.url and not loopback(args.url):
        print(f"error: --url must be a loopback address (127.0.0.1, ::1, localhost), not {args.url}", file=sys.stderr)
        return 2

    tmp = tempfile.TemporaryDirectory()
    proc = None
    try:
        agent = args.agent or default_agent(args.dataset, Path(tmp.name))
        url = args.url
        if url is None:
            proc, url = start_server(args.dataset, agent)
        out = asyncio.run(run_load(url, args.dataset, args))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        tmp.cleanup()

    recs = out["records"]
    rows = []
    groups = [("table", lambda r: r["kind"] == "table"),
              ("table, searches in flight", lambda r: r["kind"] == "table" and r["during"]),
              ("position", lambda r: r["kind"] == "position"),
              ("position, searches in flight", lambda r: r["kind"] == "position" and r["during"]),
              (f"analyse ({args.visits} visits)", lambda r: r["kind"] == "analyse")]
    for name, sel in groups:
        ms = [r["ms"] for r in recs if sel(r)]
        rows.append({"kind": name, "requests": len(ms), "wrong": sum(1 for r in recs if sel(r) and r["wrong"]),
                     "p50": round(pct(ms, 50), 1), "p95": round(pct(ms, 95), 1), "p99": round(pct(ms, 99), 1),
                     "max": round(max(ms), 1) if ms else float("nan")})
    print(format_table(rows, [("kind", "requests"), ("requests", "n"), ("wrong", "wrong"), ("p50", "p50 ms"),
                              ("p95", "p95 ms"), ("p99", "p99 ms"), ("max", "max ms")]))
    wrong = [r["wrong"] for r in recs if r["wrong"]]
    during = rows[1]
    ok = not wrong and during["requests"] > 0 and during["p99"] < GOAL_MS
    info = machine_info()
    print(f"\n{len(recs)} requests from {args.clients} clients ({args.analysers} searching) in {out['wall_s']:.1f} s; "
          f"table p99 while searches ran: {during['p99']} ms (goal < {GOAL_MS:.0f} ms): {'ok' if ok else 'MISSED'}; "
          f"{info['cpu_model']}, load {info['loadavg_at_start']}")
    for w in wrong[:10]:
        print(f"wrong: {w}", file=sys.stderr)
    if args.json_path:
        write_json({"machine": info, "args": {k: str(v) for k, v in vars(args).items()}, "wall_s": out["wall_s"],
                    "results": rows, "wrong": wrong[:100], "ok": ok}, args.json_path)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
