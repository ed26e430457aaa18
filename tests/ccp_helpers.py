"""Drive ``hopzero engine`` as a subprocess over its stdin/stdout, as a rating-list referee does."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

#: How long a reply may take before the test gives up on a hung engine. A guard against hanging
#: the suite, not a timing assertion: every reply expected here comes in well under a second.
REPLY_GUARD_S = 120


def hopzero() -> list[str]:
    """The installed ``hopzero`` console script beside this Python (or on PATH)."""
    exe = Path(sys.executable).with_name("hopzero")
    return [str(exe)] if exe.exists() else [shutil.which("hopzero") or "hopzero"]


class Engine:
    """A CCP engine subprocess with line-oriented request/response helpers (bytes in, text out)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*hopzero(), "engine", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, line: str | bytes) -> None:
        """Write one line (a newline is added); bytes go as they are, garbage included."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.proc.stdin.flush()

    def readline(self) -> str | None:
        """The next output line; None when the engine closed its output."""
        try:
            raw = self._lines.get(timeout=REPLY_GUARD_S)
        except queue.Empty:
            pytest.fail(f"no reply from the engine in {REPLY_GUARD_S} s")
        return raw.decode("utf-8", errors="replace").rstrip("\n") if raw else None

    def until(self, prefix: str) -> list[str]:
        """Lines read up to and including the first one starting with ``prefix``."""
        lines: list[str] = []
        while True:
            line = self.readline()
            assert line is not None, f"engine closed its output waiting for {prefix!r}; got {lines}; {self.stderr()}"
            lines.append(line)
            if line.startswith(prefix):
                return lines

    def stderr(self) -> str:
        """What the engine wrote on stderr, once it has exited."""
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", errors="replace")

    def close(self) -> int:
        self.send("quit")
        return self.proc.wait(timeout=REPLY_GUARD_S)


def cells_text(state) -> str:
    """A state's board as the protocol's ``<CELLS>``."""
    return "".join({-1: ".", 0: "0", 1: "1"}[v] for v in state.board)


@pytest.fixture
def engine():
    """A factory of engine subprocesses, each killed at the end of the test if still running."""
    started: list[Engine] = []

    def start(*args: str) -> Engine:
        e = Engine(*args)
        started.append(e)
        return e

    yield start
    for e in started:
        if e.proc.poll() is None:
            e.proc.kill()
        e.proc.wait()
