"""A local ``redis-server`` for a run that asks for the Redis backend without giving a URL.

It listens on loopback only, on a free port, with a password, its data in the run directory and
the append-only file on (``appendfsync everysec``: docs/REPLAY.md measures its cost), so a
restarted run finds its buffer again. Tests use the same class with persistence off.

What its directory holds (``RUN_DIR/redis``, mode 0700):

- ``password``: the server's password, random, mode 0600; made once, kept for the directory's life.
- ``lock``: locked (``flock``) by the server for as long as it lives, through a descriptor it
  inherits from the process that started it: a lock that is free means no server of ours serves
  the directory, and no second server is ever started on it.
- ``server.json``: the server's pid and port, and the pid of the driver that uses it.
- ``redis.log``, ``appendonlydir/``: Redis' own log and data.

A driver killed with SIGKILL leaves its server running (it is in its own session, so a Ctrl-C in
the terminal does not reach it either; the driver stops it when it ends). The next start on the
directory finds the lock taken, checks that the pid and port of ``server.json`` are a server of
this directory that answers to the password, and reuses it, data and all. A server whose driver
is still alive is refused: two drivers on one run directory would mix their runs.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from hopzero.ports import free_port
from learner.replay.redis_url import with_password

__all__ = ["LocalRedis", "RedisDirectoryBusy"]


class RedisDirectoryBusy(RuntimeError):
    """The directory is served by a server this process must not start, reuse or stop."""


def _process_start(pid: int) -> str | None:
    """An identity of process ``pid`` that a reused pid does not share (its start time in clock
    ticks, from /proc); None when no such process lives (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    return None if fields[0] == "Z" else fields[19]


class LocalRedis:
    """Start, reuse and stop the one ``redis-server`` of a directory, on 127.0.0.1."""

    def __init__(self, directory: str | os.PathLike[str], *, port: int | None = None, persistent: bool = True) -> None:
        self.directory = Path(directory).resolve()
        self.port = port
        self.persistent = persistent
        self.process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self.reused = False
        """Whether :meth:`start` found a server left by an earlier driver and took it over."""
        self._lock_fd: int | None = None

    @property
    def address(self) -> str:
        """The server's URL without its password (what may be shown and written down)."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def url(self) -> str:
        """The server's URL, password included: for a client in memory only (keep it out of
        files, command lines and logs: ``redact_url``)."""
        return with_password(self.address, self.password())

    # -- files ------------------------------------------------------------------------------------

    def password(self) -> str:
        """The directory's password, made (random, mode 0600) the first time it is asked for."""
        path = self.directory / "password"
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            os.chmod(path, 0o600)  # a copy with looser permissions is tightened, not trusted as is
            text = path.read_text().strip()
            if not text:
                raise RedisDirectoryBusy(f"{path} is empty: delete it and start again") from None
            return text
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(24) + "\n")
        return path.read_text().strip()

    def _state(self) -> dict[str, Any] | None:
        try:
            data = json.loads((self.directory / "server.json").read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _write_state(self) -> None:
        me = os.getpid()
        state = {"pid": self.pid, "port": self.port, "driver_pid": me, "driver_start": _process_start(me)}
        tmp = self.directory / ".server.json.tmp"
        tmp.write_text(json.dumps(state) + "\n")
        os.replace(tmp, self.directory / "server.json")

    # -- start ------------------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> str:
        """Start the directory's server, or reuse the one an earlier driver left; returns its URL.

        Raises :class:`RedisDirectoryBusy` when a live driver uses the directory's server, or
        when the lock is held but no server of ours answers.
        """
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server is not installed (Debian: apt-get install redis-server)")
        password = self.password()
        fd = os.open(self.directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            return self._reuse(timeout)
        self._lock_fd = fd
        (self.directory / "server.json").unlink(missing_ok=True)  # stale: its server is gone
        try:
            return self._spawn(binary, password, timeout)
        except BaseException:
            self.stop()
            raise

    def _spawn(self, binary: str, password: str, timeout: float) -> str:
        self.port = self.port or free_port()
        args = [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.directory),
                "--save", "", "--protected-mode", "yes", "--logfile", str(self.directory / "redis.log")]
        args += ["--appendonly", "yes", "--appendfsync", "everysec"] if self.persistent else ["--appendonly", "no"]
        args.append("-")  # the rest of the configuration (the password) from stdin: not on the command line
        assert self._lock_fd is not None
        # The lock's descriptor goes with the server, so the lock lives exactly as long as it does;
        # its own session keeps a terminal's Ctrl-C, meant for the driver, away from it.
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, pass_fds=(self._lock_fd,), start_new_session=True)
        assert self.process.stdin is not None
        self.process.stdin.write(f"requirepass {password}\n".encode())
        self.process.stdin.close()
        self.pid = self.process.pid
        self._write_state()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with status {self.process.returncode} on port {self.port} "
                                   f"(its log: {self.directory / 'redis.log'})")
            if self._answers(self.port, password) == self.pid:
                return self.url
            time.sleep(0.05)
        raise TimeoutError(f"redis-server on port {self.port} did not answer within {timeout:g} s")

    def _reuse(self, timeout: float) -> str:
        """Take over the server that holds the directory's lock, after checking it is ours."""
        deadline = time.monotonic() + timeout
        password = self.password()
        while True:
            state = self._state() or {}
            pid, port = state.get("pid"), state.get("port")
            driver, driver_start = state.get("driver_pid"), state.get("driver_start")
            if driver not in (None, os.getpid()) and driver_start and _process_start(int(driver)) == driver_start:
                raise RedisDirectoryBusy(
                    f"{self.directory} is served by redis-server pid {pid} for driver pid {driver}, which is still "
                    f"running: stop that driver first (two drivers on one run directory would mix their runs)"
                )
            if isinstance(pid, int) and isinstance(port, int) and self._answers(port, password) == pid:
                self.pid, self.port, self.reused = pid, port, True
                self._write_state()
                return self.url
            if time.monotonic() >= deadline:  # e.g. a server still starting, or one without server.json
                raise RedisDirectoryBusy(
                    f"{self.directory}/lock is held but no redis-server of this directory answers "
                    f"(server.json: pid {pid}, port {port}): stop the process that holds it "
                    f"(fuser {self.directory}/lock)"
                )
            time.sleep(0.2)

    def _answers(self, port: int, password: str) -> int | None:
        """The pid of the server on ``port`` if it is up, knows ``password`` and serves this directory."""
        import redis

        client = redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=1.0,
                             socket_connect_timeout=1.0)
        try:
            if not client.ping():
                return None
            directory = client.config_get("dir").get("dir")
            pid = int(client.info("server")["process_id"])
        except (redis.RedisError, OSError, KeyError, ValueError):
            return None
        finally:
            client.close()
        return pid if directory and Path(directory).resolve() == self.directory else None

    # -- stop -------------------------------------------------------------------------------------

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM: Redis writes its append-only file and exits; SIGKILL after
        ``timeout`` s) and release the directory."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        elif self.reused and self.pid is not None:
            self._stop_reused(self.pid, timeout)
        if self.pid is not None:
            (self.directory / "server.json").unlink(missing_ok=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
        self.process, self.pid, self.reused, self._lock_fd = None, None, False, None

    def _stop_reused(self, pid: int, timeout: float) -> None:
        """Stop a server that is not this process's child: it is gone when the lock is free."""
        started = _process_start(pid)
        if started is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            os.kill(pid, sig)
            deadline = time.monotonic() + timeout
            while _process_start(pid) == started and time.monotonic() < deadline:
                time.sleep(0.05)
            if _process_start(pid) != started:
                return
