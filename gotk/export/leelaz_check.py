"""Check an exported Leela Zero weights file against Leela Zero itself: the same positions through ``leelaz`` (its
GTP ``heatmap``) and through gotk's forward pass of the agent the file came from.

``leelaz --cpu-only -w FILE --gtp --noponder -t 1 --playouts 1`` (never ``-q``: it silences the heatmap) is set up
position by position with GTP ``play`` commands; ``heatmap 0`` evaluates the network once under the identity
symmetry (no random symmetry, no cache) and prints, on **stderr** (Leela Zero's ``myprintf``), 19 lines of 19
``%3d`` values (the top row first, column A first: gotk's orientation), each ``int(policy * 1000)`` of an empty point
(0 on a stone), then ``pass: N`` (``int(pass policy * 1000)``) and ``winrate: F`` (``%f``: ``(1 + tanh(v)) / 2`` for
the side to move); its GTP answer on stdout is an empty ``=``.

The print resolution is 1/1000 (values truncated, not rounded): a point agrees when gotk's probability ``p`` has
``printed <= 1000 p < printed + 1`` (with :data:`TOLERANCE` for float32 arithmetic at the boundary).
"""

from __future__ import annotations

import math
import os
import queue
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gotk import coords

SIZE = 19
N = SIZE * SIZE
LEELAZ_PATHS = ("/usr/games/leelaz",)
TOLERANCE = 0.01  # per mille (1e-5 in probability): float32 (Winograd) against float32 (PyTorch) at a bracket edge


def find_leelaz() -> str | None:
    """The ``leelaz`` executable: on ``PATH`` or at Debian's ``/usr/games/leelaz``; None if there is none."""
    found = shutil.which("leelaz")
    if found:
        return found
    for p in LEELAZ_PATHS:
        if os.access(p, os.X_OK):
            return p
    return None


class LeelazError(RuntimeError):
    """``leelaz`` failed: it exited, refused a command, or printed what this module cannot read."""


@dataclass
class Heatmap:
    """One ``heatmap`` answer: ``permille`` (362,) ints in gotk order (pass last; 0 on stones) and the winrate."""

    permille: np.ndarray
    winrate: float


class Leelaz:
    """A ``leelaz`` GTP process on a weights file. ``with Leelaz(weights) as lz: lz.play("b", "Q16"); lz.heatmap()``."""

    def __init__(self, weights: str | os.PathLike, exe: str | None = None, timeout: float = 120.0,
                 limits: tuple[str, ...] = ("--playouts", "1")) -> None:
        """``limits``: the search's options (default ``--playouts 1``: enough for ``heatmap``; a search
        benchmark gives e.g. ``("--visits", "400", "--timemanage", "off")``)."""
        exe = exe or find_leelaz()
        if exe is None:
            raise LeelazError("leelaz not found (Debian: apt-get install leela-zero)")
        self.timeout = timeout
        self.args = [exe, "--cpu-only", "-w", str(weights), "--gtp", "--noponder", "-t", "1", *limits]
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        self._err: queue.Queue[str | None] = queue.Queue()
        self._err_tail: list[str] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        self.command("name")  # waits for the network to load (or fails with its stderr)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._err.put(line.rstrip("\n"))
        self._err.put(None)

    def _stderr_lines(self) -> list[str]:
        """Every stderr line already read (drained from the queue)."""
        lines = []
        while True:
            try:
                line = self._err.get_nowait()
            except queue.Empty:
                return lines
            if line is not None:
                lines.append(line)

    def command(self, cmd: str) -> str:
        """Send one GTP command; its answer's text (after ``=``). Raises :class:`LeelazError` on ``?`` or an exit."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(cmd + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError as e:
            raise LeelazError(f"leelaz exited: {' | '.join(self._stderr_lines()[-5:])}") from e
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise LeelazError(f"leelaz exited on {cmd!r}: {' | '.join(self._stderr_lines()[-5:])}")
            line = line.rstrip("\n")
            if not line and lines:
                break
            if line:
                lines.append(line)
        answer = "\n".join(lines)
        if answer.startswith("?"):
            raise LeelazError(f"leelaz refused {cmd!r}: {answer[1:].strip()}")
        return answer[1:].strip()

    def play(self, color: str, vertex: str) -> None:
        self.command(f"play {color} {vertex}")

    def heatmap(self) -> Heatmap:
        """``heatmap 0``: the raw network output of the position under the identity symmetry."""
        self._stderr_lines()  # drop what came before
        self.command("heatmap 0")
        got: list[str] = []
        while not (got and got[-1].startswith("winrate:")):
            try:
                line = self._err.get(timeout=self.timeout)
            except queue.Empty as e:
                raise LeelazError(f"no heatmap on stderr: {got[-3:]}") from e
            if line is None:
                raise LeelazError("leelaz exited during heatmap")
            got.append(line)
        try:
            rows = [[int(v) for v in line.split()] for line in got[-2 - SIZE:-2]]
            pass_value = int(got[-2].split(":")[1])
            winrate = float(got[-1].split(":")[1])
        except (ValueError, IndexError) as e:
            raise LeelazError(f"unreadable heatmap: {got[-2 - SIZE:]}") from e
        if len(rows) != SIZE or any(len(r) != SIZE for r in rows) or not got[-2].startswith("pass:"):
            raise LeelazError(f"unreadable heatmap: {got[-2 - SIZE:]}")
        permille = np.append(np.asarray(rows, dtype=np.int64).ravel(), pass_value)  # printed top row first: gotk order
        return Heatmap(permille, winrate)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.command("quit")
            except LeelazError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Leelaz:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class CheckReport:
    """What :func:`check_against_leelaz` measured over its positions."""

    positions: int = 0
    games: int = 0
    top_agree: int = 0  # gotk's most probable move (empty point or pass) has leelaz's largest printed value
    top_ties: int = 0  # positions where leelaz printed its largest value at several moves
    points: int = 0  # empty points and passes compared
    points_outside: int = 0  # gotk's probability outside the printed value's 1/1000 bracket (± TOLERANCE)
    max_abs_diff: float = 0.0  # max |p_gotk - printed / 1000| over the points compared
    max_bracket_excess: float = 0.0  # max distance (per mille) of 1000 p_gotk outside [printed, printed + 1)
    max_winrate_diff: float = 0.0  # percentage points
    mean_winrate_diff: float = 0.0
    max_top_prob: float = 0.0  # how far from uniform the network is (its most confident move)
    mean_top_prob: float = 0.0
    failures: list = field(default_factory=list)

    @property
    def top_agreement(self) -> float:
        return self.top_agree / self.positions if self.positions else math.nan

    def as_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "failures"}
        d["top_agreement"] = self.top_agreement
        d["failures"] = self.failures[:10]
        return d


def compare(probs: np.ndarray, value: float, heat: Heatmap, board: np.ndarray) -> dict:
    """One position: gotk's probabilities ``probs`` (362, gotk order) and value (the side to move's, [-1, 1])
    against leelaz's ``heat`` over the empty points of ``board`` and pass."""
    mask = np.append(board == 0, True)
    printed = heat.permille[mask]
    p = probs[mask]
    scaled = 1000.0 * p
    excess = np.maximum(printed - scaled, scaled - (printed + 1))
    top = int(np.argmax(p))
    return {
        "points": int(mask.sum()),
        "outside": int(np.count_nonzero(excess > TOLERANCE)),
        "max_abs_diff": float(np.max(np.abs(p - printed / 1000.0))),
        "max_excess": float(max(0.0, excess.max())),
        "top_agree": bool(printed[top] == printed.max()),
        "tie": bool(np.count_nonzero(printed == printed.max()) > 1),
        "winrate_diff": 100.0 * abs((1.0 + value) / 2.0 - heat.winrate),
        "top_prob": float(p.max()),
    }


def _gotk_outputs(model, planes: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    import torch

    with torch.no_grad():
        x = torch.as_tensor(np.stack(planes)).float()
        logits, value = model(x)
    probs = torch.softmax(logits.double(), dim=1).numpy()
    return probs, value.double().numpy()


def check_against_leelaz(model, encoder, weights: str | os.PathLike, records, positions: int = 200,
                         every: int = 5, exe: str | None = None) -> CheckReport:
    """Play ``records`` (19x19 games without setup stones; others are passed over) into ``leelaz`` on ``weights``
    and into a gotk :class:`~gotk.game.state.GameState` move by move, and compare ``heatmap 0`` with ``model``'s
    forward pass (eval mode, float32) of ``encoder``'s planes every ``every`` moves (first at move 0), until
    ``positions`` positions are compared. A game stops at a move either side refuses."""
    from gotk.errors import IllegalMoveError
    from gotk.game.state import GameState, Rules

    model = model.float().eval()
    report = CheckReport()
    wr_sum = top_sum = 0.0
    pending: list[tuple[np.ndarray, Heatmap, np.ndarray]] = []
    with Leelaz(weights, exe) as lz:
        for rec in records:
            if report.positions + len(pending) >= positions:
                break
            if rec.size != SIZE or rec.setup_black or rec.setup_white or rec.num_moves == 0:
                continue
            lz.command("clear_board")
            lz.command("komi 7.5")
            state = GameState(SIZE, Rules())
            report.games += 1
            for i, (color, point) in enumerate(zip(rec.colors.tolist(), rec.points.tolist(), strict=True)):
                if i % every == 0:
                    pending.append((encoder.encode(state), lz.heatmap(), state.board.copy()))
                    if report.positions + len(pending) >= positions:
                        break
                try:
                    state.play(point, color)
                    lz.play("bw"[color - 1], "pass" if point == N else coords.to_gtp(point, SIZE))
                except (IllegalMoveError, LeelazError) as e:
                    report.failures.append(f"game {report.games} move {i + 1}: {e}")
                    break
    for k in range(0, len(pending), 64):
        chunk = pending[k:k + 64]
        probs, values = _gotk_outputs(model, [c[0] for c in chunk])
        for (_, heat, board), pr, v in zip(chunk, probs, values, strict=True):
            c = compare(pr, float(v), heat, board)
            report.positions += 1
            report.points += c["points"]
            report.points_outside += c["outside"]
            report.max_abs_diff = max(report.max_abs_diff, c["max_abs_diff"])
            report.max_bracket_excess = max(report.max_bracket_excess, c["max_excess"])
            report.top_agree += c["top_agree"]
            report.top_ties += c["tie"]
            report.max_winrate_diff = max(report.max_winrate_diff, c["winrate_diff"])
            report.max_top_prob = max(report.max_top_prob, c["top_prob"])
            wr_sum += c["winrate_diff"]
            top_sum += c["top_prob"]
    if report.positions:
        report.mean_winrate_diff = wr_sum / report.positions
        report.mean_top_prob = top_sum / report.positions
    return report


def check_agent(agent_path: str | os.PathLike, weights: str | os.PathLike, records, positions: int = 200,
                every: int = 5, exe: str | None = None) -> CheckReport:
    """:func:`check_against_leelaz` of an agent file and the weights file exported from it."""
    from gotk.nets.agent import load_agent

    agent = load_agent(Path(agent_path))
    return check_against_leelaz(agent.model, agent.encoder, weights, records, positions, every, exe)
