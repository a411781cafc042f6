"""GTP analysis for GUIs through the real ``gotk gtp`` subprocess: ``lz-analyze`` / ``kata-analyze`` stream
until the next command (the engine stays responsive), ``genmove_analyze``, bad arguments, the clock."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import tiny_agent_file

REPO = Path(__file__).resolve().parents[1]
LZ_INFO = re.compile(r"info move (?P<move>[A-HJ-T][0-9]{1,2}|pass) visits (?P<visits>[0-9]+) winrate (?P<win>[0-9]+) "
                     r"prior (?P<prior>[0-9]+) order (?P<order>[0-9]+) pv(?P<pv>( ([A-HJ-T][0-9]{1,2}|pass))+)")
KATA_INFO = re.compile(r"info move (?P<move>[A-HJ-T][0-9]{1,2}|pass) visits (?P<visits>[0-9]+) "
                       r"utility (?P<u>-?[0-9.]+) winrate (?P<win>[0-9.]+) prior (?P<prior>[0-9.]+) "
                       r"order (?P<order>[0-9]+) pv(?P<pv>( ([A-HJ-T][0-9]{1,2}|pass))+)")


class Engine:
    """A ``gotk gtp`` subprocess read line by line by a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "gotk", "gtp", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def line(self, timeout: float = 60) -> str:
        return self.lines.get(timeout=timeout)

    def answer(self, timeout: float = 60) -> list[str]:
        """Lines up to the blank line that ends an answer."""
        out = []
        while True:
            line = self.line(timeout)
            if line == "":
                if out:
                    return out
                continue
            out.append(line)

    def ask(self, command: str, timeout: float = 60) -> list[str]:
        self.send(command)
        return self.answer(timeout)

    def close(self) -> None:
        try:
            self.send("quit")
            self.proc.wait(timeout=30)
        except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def agent_path(tmp_path_factory) -> Path:
    return tiny_agent_file(tmp_path_factory.mktemp("analyze") / "tiny.gotk")


@pytest.fixture()
def engine(agent_path):
    e = Engine("--agent", str(agent_path), "--visits", "32", "--seed", "1")
    assert e.ask("boardsize 9") == ["="]
    yield e
    e.close()


def test_lz_analyze_streams_until_the_next_command(engine: Engine) -> None:
    engine.ask("play b E5")
    engine.send("lz-analyze 10")
    assert engine.line() == "="
    lines = [engine.line() for _ in range(3)]  # three intervals' worth of lines while nothing else is sent
    engine.send("name")
    for line in lines:
        infos = list(LZ_INFO.finditer(line))
        assert infos and line.startswith("info move "), line
        assert [int(m["order"]) for m in infos] == list(range(len(infos)))
        visits = [int(m["visits"]) for m in infos]
        assert visits == sorted(visits, reverse=True)
        for m in infos:
            assert 0 <= int(m["win"]) <= 10000 and 0 <= int(m["prior"]) <= 10000
            assert m["pv"].split()[0] == m["move"] and m["move"] != "E5"
    total = [sum(int(m["visits"]) for m in LZ_INFO.finditer(line)) for line in lines]
    assert total == sorted(total) and total[-1] > total[0]  # the search goes on between lines
    rest = engine.answer()  # the rest of the analysis, then its blank line
    assert all(LZ_INFO.match(line) for line in rest)
    assert engine.answer() == ["= gotk-resnet-puct32v"]  # the command that stopped it is answered


def test_kata_analyze_format_and_colour(engine: Engine) -> None:
    engine.send("kata-analyze w interval 5 minmoves 4 ownership true")
    assert engine.line() == "="
    line = engine.line()
    engine.send("")  # a raw newline stops it too
    infos = list(KATA_INFO.finditer(line))
    assert len(infos) >= 4, line
    for m in infos:
        assert 0 <= float(m["win"]) <= 1 and 0 <= float(m["prior"]) <= 1 and -1 <= float(m["u"]) <= 1
        assert float(m["win"]) == pytest.approx((float(m["u"]) + 1) / 2, abs=2e-6)
    assert "scoreLead" not in line and "scoreMean" not in line
    engine.answer()
    assert engine.ask("showboard")[-1].startswith("black to play")  # analysing for white changed nothing


def test_genmove_analyze_plays_the_move(engine: Engine) -> None:
    answer = engine.ask("7 genmove_analyze b 1")
    assert answer[0] == "=7"
    assert answer[-1].startswith("play ") and len(answer) >= 3
    assert all(KATA_INFO.match(a) is None and LZ_INFO.match(a) for a in answer[1:-1])
    move = answer[-1].split()[1]
    board = "\n".join(engine.ask("showboard"))
    assert "white to play" in board
    assert engine.ask(f"play w {move}")[0].startswith("?") or move == "pass"  # the point is taken
    answer = engine.ask("kata-genmove_analyze w")
    assert answer[-1].startswith("play ") and KATA_INFO.match(answer[-2])


def test_bad_analysis_arguments_answer_errors_and_the_engine_goes_on(engine: Engine) -> None:
    for command, message in (("lz-analyze 10 allow b D4 1", "allow is not supported"),
                             ("lz-analyze 10 foo 3", "unknown key"),
                             ("lz-analyze b -5", "syntax error"),
                             ("lz-analyze 10 interval", "no value"),
                             ("kata-analyze 99999999999", "syntax error"),
                             ("kata-analyze 10 minmoves -1", "syntax error"),
                             ("kata-analyze 10 ownership maybe", "true or false"),
                             ("lz-genmove_analyze x 10 maxmoves zz", "syntax error")):
        answer = engine.ask(f"3 {command}")
        assert answer[0].startswith("?3 ") and message in answer[0], (command, answer)
    assert engine.ask("name") == ["= gotk-resnet-puct32v"]
    commands = engine.ask("list_commands")
    assert {"lz-analyze", "kata-analyze", "genmove_analyze", "lz-genmove_analyze"} <= set(commands[1:])
    assert engine.ask("known_command kata-analyze") == ["= true"]


def test_clock_is_honoured(agent_path: Path) -> None:
    """--seconds 30 per move, but a byo-yomi of 1 s per stone: every genmove answers within the period."""
    e = Engine("--agent", str(agent_path), "--seconds", "30", "--seed", "1")
    try:
        assert e.ask("boardsize 9") == ["="]
        assert e.ask("time_settings 0 1 1") == ["="]
        e.ask("genmove b", timeout=120)  # the first move pays for start-up work
        for _ in range(3):
            assert e.ask("time_left w 1 1") == ["="]
            t = time.monotonic()
            answer = e.ask("genmove w")
            assert answer[0].startswith("= ")
            assert time.monotonic() - t < 1.0, "a move took longer than the byo-yomi period"
        assert e.ask("time_settings 1 x 0")[0].startswith("? syntax error")
        assert e.ask("time_left b -3 0")[0].startswith("?")
        assert e.ask("time_settings 0 5 0") == ["="]  # no time limit: --seconds alone
    finally:
        e.close()


def test_analysis_needs_a_search_and_a_searching_opponent_plays_a_match(agent_path: Path) -> None:
    from gotk.nets import load_agent
    from gotk.play.analyze import AnalyzingGtpEngine
    from gotk.play.match import Match, MatchConfig
    from gotk.play.players import PolicyPlayer, RandomPlayer

    engine = AnalyzingGtpEngine(PolicyPlayer(load_agent(agent_path)))
    for command in ("lz-analyze 10", "kata-analyze b 10", "genmove_analyze b 10"):
        answer = engine.handle(command)
        assert answer.startswith("? analysis needs a search"), answer
    assert engine.handle("genmove b").startswith("= ")  # and it still plays its policy
    argv = [sys.executable, "-m", "gotk", "gtp", "--agent", str(agent_path), "--visits", "8", "--seed", "2"]
    results = Match(RandomPlayer(seed=0), argv, MatchConfig(size=9, games=1, max_moves=12, timeout=120)).run()
    assert results[0].reason in ("max_moves", "two_passes", "opponent_resigned"), results[0]
    assert results[0].moves >= 1


def lizzie_command(agent: Path) -> list[str]:
    """The engine command line ``docs/gtp.md`` gives for Lizzie, with the test's agent and this interpreter."""
    doc = (REPO / "docs" / "gtp.md").read_text()
    section = doc[doc.index("### Adding gotk to Lizzie"):]
    line = re.search(r"^/path/to/gotk/\.venv/bin/gotk (gtp .*)$", section, re.M)
    assert line, "docs/gtp.md lost its Lizzie engine command"
    args = line[1].split()
    assert "/path/to/agent.gotk" in args
    return [str(agent) if a == "/path/to/agent.gotk" else a for a in args]


def replay_lizzie(agent: Path, ponder_seconds: float) -> list[int]:
    """The commands Lizzie 0.7.4 sends (recorded through a proxy) against the documented command line: checks
    Lizzie's version rule, the ``lz-analyze`` lines, that the ponder's root visits keep growing for
    ``ponder_seconds`` (checked over six equal windows), that the blank line stops it, and the game commands."""
    args = lizzie_command(agent)
    e = Engine(*args[1:])
    try:
        name = e.ask("name", timeout=120)
        assert name[0].startswith("= gotk")
        version = e.ask("version")[0].removeprefix("= ")
        assert int(version.split(".")[1]) >= 15, f"Lizzie refuses version {version!r}"  # Lizzie's own test
        assert e.ask("boardsize 19") == ["="]
        assert e.ask("komi 7.5") == ["="]
        e.send("lz-analyze 10")
        assert e.line(timeout=120) == "="
        totals: list[int] = []
        t0 = time.monotonic()
        marks = [t0 + ponder_seconds * (k + 1) / 6 for k in range(6)]
        while marks:
            line = e.line()
            infos = list(LZ_INFO.finditer(line))
            assert infos and line.startswith("info move "), line
            assert " ".join(m[0] for m in infos) == line  # nothing but info records
            assert [int(m["order"]) for m in infos] == list(range(len(infos)))
            if time.monotonic() >= marks[0]:
                marks.pop(0)
                totals.append(sum(int(m["visits"]) for m in infos))
        assert all(b > a for a, b in zip(totals, totals[1:], strict=False)), f"visits stopped growing: {totals}"
        e.send("")  # Lizzie stops pondering with an empty line
        deadline = time.monotonic() + 10
        rest = e.answer()
        assert time.monotonic() < deadline and all(LZ_INFO.match(r) for r in rest)
        assert e.ask("play B Q16") == ["="]
        assert e.ask("undo") == ["="]
        assert e.ask("time_settings 0 2 1") == ["="]
        t = time.monotonic()
        move = e.ask("genmove W")
        assert re.fullmatch(r"= ([A-HJ-T]([1-9]|1[0-9])|pass)", move[0]), move
        assert time.monotonic() - t < 4.0, "genmove ignored the 2 s byo-yomi"
    finally:
        e.close()
    return totals


@pytest.fixture(scope="module")
def agent19(tmp_path_factory) -> Path:
    return tiny_agent_file(tmp_path_factory.mktemp("lizzie") / "tiny19.gotk", size=19)


def test_lizzie_session(agent19: Path) -> None:
    """What Lizzie does, for 6 s of pondering."""
    replay_lizzie(agent19, 6.0)


@pytest.mark.slow
def test_lizzie_session_ponders_30_seconds(agent19: Path) -> None:
    """What Lizzie does, pondering 30 s: past the 11-12k visits at which a tree that never folded stopped."""
    replay_lizzie(agent19, 30.0)


def test_the_reader_stops_at_quit_and_the_engine_exits_with_stdin_still_open(agent_path: Path) -> None:
    # a reader left blocked in a read of stdin can abort the interpreter's shutdown: it must stop at quit
    from gotk.play.analyze import AnalyzingGtpEngine
    from gotk.play.players import RandomPlayer

    pulled: list[str] = []

    def lines():
        for raw in ("boardsize 9", "7 quit", "name", "version"):
            pulled.append(raw)
            yield raw

    out: list[str] = []
    AnalyzingGtpEngine(RandomPlayer(seed=1), size=9).serve(lines(), out.append, lambda: None)
    assert pulled == ["boardsize 9", "7 quit"]
    assert "".join(out) == "=\n\n=7\n\n"
    # the real process: quit answered and a clean exit while the controller keeps the pipe open
    proc = subprocess.Popen([sys.executable, "-m", "gotk", "gtp", "--agent", str(agent_path), "--visits", "8"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdin.write(b"boardsize 9\nquit\n")
    proc.stdin.flush()
    try:
        rc = proc.wait(timeout=60)
        assert rc == 0
        assert proc.stdout.read() == b"=\n\n=\n\n"
        assert b"Fatal" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.stdin.close()
        proc.wait()
