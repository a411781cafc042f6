"""A client for any GTP engine run as a subprocess: one command at a time, answers read with a deadline,
an exit, a broken pipe or a silence turned into typed faults (the match records them and goes on)."""

from __future__ import annotations

import collections
import queue
import re
import subprocess
import threading
import time


class OpponentFault(Exception):
    """The opponent failed; ``reason`` is the recorded game-end reason."""

    reason = "opponent_error"


class OpponentCrashed(OpponentFault):
    reason = "opponent_crashed"


class OpponentTimeout(OpponentFault):
    reason = "opponent_timeout"


class GtpFailure(Exception):
    """The opponent answered ``? message``."""


class GtpClient:
    """A GTP engine subprocess with a per-command timeout (a reader thread feeds a queue)."""

    def __init__(self, argv: list[str], timeout: float = 30.0, cwd: str | None = None) -> None:
        self.argv = list(argv)
        self.timeout = timeout
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._lines: queue.Queue[str | None] = queue.Queue()
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, cwd=cwd)
        except OSError as e:
            raise OpponentCrashed(f"cannot start {self.argv!r}: {e}") from e
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            self._lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        self._lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in iter(self.proc.stderr.readline, b""):
            self.stderr_tail.append(raw.decode("utf-8", "replace").rstrip())

    def _why(self) -> str:
        tail = " | ".join(list(self.stderr_tail)[-3:])
        code = self.proc.poll()
        return f"exit code {code}" + (f"; stderr: {tail}" if tail else "")

    def send(self, command: str, timeout: float | None = None) -> str:
        """Send one command; return the answer's text after ``=``. Raises :class:`GtpFailure` for ``?``,
        :class:`OpponentCrashed` / :class:`OpponentTimeout` when the engine dies or is silent."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((command + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise OpponentCrashed(f"{command!r}: cannot write ({self._why()})") from None
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        lines: list[str] = []
        while True:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise queue.Empty
                line = self._lines.get(timeout=left)
            except queue.Empty:
                self.kill()
                raise OpponentTimeout(f"{command!r}: no answer in {self.timeout:g} s") from None
            if line is None:
                self._lines.put(None)  # keep reporting EOF
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:  # closed its stdout but lives on
                    self.proc.kill()
                    self.proc.wait()
                raise OpponentCrashed(f"{command!r}: engine exited ({self._why()})")
            if not lines:
                if line.strip() == "" or line[:1] not in "=?":
                    continue  # noise before an answer
                lines.append(line)
            elif line.strip() == "":
                break
            else:
                lines.append(line)
        head = lines[0]
        text = "\n".join([re.sub(r"^[=?][0-9]*\s?", "", head)] + lines[1:]).strip()
        if head.startswith("?"):
            raise GtpFailure(text or "failed")
        return text

    def kill(self) -> None:
        """Stop the engine at once (it is hung)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close()

    def close(self) -> None:
        """Ask the engine to quit, then kill it if it lingers."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


__all__ = ["GtpClient", "GtpFailure", "OpponentCrashed", "OpponentFault", "OpponentTimeout"]
