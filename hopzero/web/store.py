"""Kept games: one SQLite file in the data directory (``hopzero serve --data DIR``).

Each game is a row of ``games`` (its rules and start, its seats and settings, its result once
over), a row of ``moves`` per move played and a row of ``evals`` per position the analysis engine
judged. A move is written as it is played, in one transaction with its game's row, so a server
that stops (Ctrl-C, a crash, a power cut) loses at most the move being written; a new server
reads the games in progress and the finished ones from the file.

The file is in WAL mode (readers never wait for the writer) with ``synchronous=NORMAL``: a
commit is a write to the log, not an fsync, so recording a move costs well under a millisecond;
the log is synced at checkpoints. Only the server's event loop thread uses the connection.

Games nobody played in, and finished games, older than the retention period are deleted
(:meth:`Store.expire`, at start and every hour). JSON columns hold only what this module and
:mod:`hopzero.web.rooms` wrote; rows are read back through :meth:`Store.load`, which checks them.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .game import MoveRecord

__all__ = ["DB_FILE", "SCHEMA", "GameRow", "Store", "StoreError"]

#: The database file inside the data directory.
DB_FILE = "games.sqlite3"
#: The layout's version, in ``PRAGMA user_version``; a file of another version is refused.
SCHEMA = 1

_TABLES = """
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    preset TEXT NOT NULL,
    rules TEXT NOT NULL,
    start TEXT NOT NULL,
    seats TEXT NOT NULL,
    settings TEXT NOT NULL,
    creator TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    finished REAL,
    result TEXT,
    resigned INTEGER,
    line INTEGER NOT NULL DEFAULT 0,
    plies INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS games_by_finish ON games (finished, updated);
CREATE TABLE IF NOT EXISTS moves (
    game TEXT NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    ply INTEGER NOT NULL,
    s INTEGER NOT NULL,
    e INTEGER NOT NULL,
    path TEXT NOT NULL,
    seat INTEGER NOT NULL,
    by TEXT NOT NULL,
    wall REAL NOT NULL,
    PRIMARY KEY (game, ply)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS evals (
    game TEXT NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    ply INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (game, ply)
) WITHOUT ROWID;
"""


class StoreError(RuntimeError):
    """The data directory cannot be used (not writable, a database of another layout)."""


@dataclass
class GameRow:
    """A game as stored: everything but its moves and evaluations (see :mod:`hopzero.web.rooms`
    for what ``seats`` and ``settings`` hold)."""

    id: str
    preset: str
    rules: dict[str, Any]
    start: str
    seats: list[dict[str, Any]]
    settings: dict[str, Any]
    creator: str
    created: float
    updated: float
    finished: float | None = None
    result: dict[str, Any] | None = None
    resigned: int | None = None
    line: int = 0
    plies: int = 0
    version: int = 0
    moves: list[MoveRecord] = field(default_factory=list)
    evals: dict[int, dict[str, Any]] = field(default_factory=dict)


_COLUMNS = ("id", "preset", "rules", "start", "seats", "settings", "creator", "created", "updated", "finished",
            "result", "resigned", "line", "plies", "version")
_JSON = ("rules", "seats", "settings", "result")


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class Store:
    """The games of one data directory."""

    def __init__(self, data_dir: str | Path) -> None:
        self.path = Path(data_dir).expanduser() / DB_FILE
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA):
                raise StoreError(f"{self.path}: a games database of layout {version}; this hopzero reads {SCHEMA}")
            self.db.executescript(_TABLES)
            self.db.execute(f"PRAGMA user_version={SCHEMA}")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"--data {self.path.parent}: cannot use {self.path.name}: {exc}") from None

    def close(self) -> None:
        self.db.close()

    # -- writing ----------------------------------------------------------------------------------

    def _row_values(self, row: GameRow) -> list[Any]:
        return [_dump(getattr(row, c)) if c in _JSON else getattr(row, c) for c in _COLUMNS]

    def insert(self, row: GameRow) -> None:
        """A new game with its moves and evaluations (a game loaded from a file has some)."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute(f"INSERT INTO games ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                            self._row_values(row))
            self.db.executemany("INSERT INTO moves VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                [self._move_values(row.id, i, m) for i, m in enumerate(row.moves)])
            self.db.executemany("INSERT INTO evals VALUES (?, ?, ?)",
                                [(row.id, ply, _dump(data)) for ply, data in row.evals.items()])

    def update(self, row: GameRow) -> None:
        """The game's own row (seats, settings, result, ...), not its moves."""
        with self.db:
            self.db.execute(f"UPDATE games SET {', '.join(c + ' = ?' for c in _COLUMNS[1:])} WHERE id = ?",
                            self._row_values(row)[1:] + [row.id])

    @staticmethod
    def _move_values(game: str, ply: int, m: MoveRecord) -> tuple[Any, ...]:
        return (game, ply, m.move[0], m.move[1], _dump(list(m.path)), m.seat, m.by, m.wall)

    def add_move(self, row: GameRow, ply: int, move: MoveRecord) -> None:
        """Move ``ply`` (0-based) and the game's row after it, in one transaction."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("INSERT OR REPLACE INTO moves VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            self._move_values(row.id, ply, move))
            self.db.execute(f"UPDATE games SET {', '.join(c + ' = ?' for c in _COLUMNS[1:])} WHERE id = ?",
                            self._row_values(row)[1:] + [row.id])

    def rewrite(self, row: GameRow, *, keep_evals: bool) -> None:
        """The moves from ``row.plies`` on are gone (an undo, a new start) with the evaluations
        after it (all of them without ``keep_evals``: a new start position), and the game's row
        is ``row``."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("DELETE FROM moves WHERE game = ? AND ply >= ?", (row.id, row.plies))
            self.db.execute("DELETE FROM evals WHERE game = ? AND ply > ?", (row.id, row.plies if keep_evals else -1))
            self.db.execute(f"UPDATE games SET {', '.join(c + ' = ?' for c in _COLUMNS[1:])} WHERE id = ?",
                            self._row_values(row)[1:] + [row.id])

    def put_eval(self, game: str, ply: int, data: dict[str, Any]) -> None:
        """The evaluation of position ``ply`` (replacing an older one)."""
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO evals VALUES (?, ?, ?)", (game, ply, _dump(data)))

    def expire(self, before: float) -> int:
        """Delete finished games that ended, and games in progress nobody moved in, before
        ``before`` (Unix seconds); returns how many."""
        with self.db:
            cursor = self.db.execute(
                "DELETE FROM games WHERE (finished IS NOT NULL AND finished < ?) OR (finished IS NULL AND updated < ?)",
                (before, before))
        return int(cursor.rowcount)

    # -- reading ----------------------------------------------------------------------------------

    def load(self, game: str) -> GameRow | None:
        """The game ``game`` with its moves and evaluations; None when there is none."""
        found = self.db.execute(f"SELECT {', '.join(_COLUMNS)} FROM games WHERE id = ?", (game,)).fetchone()
        if found is None:
            return None
        values = {c: (json.loads(v) if c in _JSON and v is not None else v) for c, v in zip(_COLUMNS, found)}
        row = GameRow(**values)
        row.moves = [MoveRecord(move=(s, e), path=tuple(json.loads(path)), seat=seat, by=by, wall=wall)
                     for s, e, path, seat, by, wall in self.db.execute(
                         "SELECT s, e, path, seat, by, wall FROM moves WHERE game = ? ORDER BY ply", (game,))]
        row.evals = {ply: json.loads(data) for ply, data in self.db.execute(
            "SELECT ply, data FROM evals WHERE game = ?", (game,))}
        return row

    def evaluation(self, game: str, ply: int) -> dict[str, Any] | None:
        """The whole evaluation of position ``ply`` of ``game``; None when there is none."""
        found = self.db.execute("SELECT data FROM evals WHERE game = ? AND ply = ?", (game, ply)).fetchone()
        return None if found is None else json.loads(found[0])

    def summaries(self, *, ids: list[str] | None = None, finished: bool = False, limit: int = 50,
                  offset: int = 0) -> list[dict[str, Any]]:
        """Short descriptions of games, newest first: the games ``ids``, or the finished ones."""
        columns = "id, preset, seats, created, updated, finished, result, plies"
        if ids is not None:
            marks = ", ".join("?" * len(ids))
            rows = self.db.execute(f"SELECT {columns} FROM games WHERE id IN ({marks}) ORDER BY updated DESC",
                                   ids).fetchall()
        else:
            rows = self.db.execute(f"SELECT {columns} FROM games WHERE finished IS NOT NULL = ? "
                                   "ORDER BY updated DESC LIMIT ? OFFSET ?", (finished, limit, offset)).fetchall()
        return [{"id": i, "preset": p, "seats": json.loads(seats), "created": created, "updated": updated,
                 "finished": done, "result": None if result is None else json.loads(result), "plies": plies}
                for i, p, seats, created, updated, done, result, plies in rows]

    def counts(self) -> dict[str, int]:
        """Games in progress and finished."""
        playing, done = self.db.execute(
            "SELECT SUM(finished IS NULL), SUM(finished IS NOT NULL) FROM games").fetchone()
        return {"playing": int(playing or 0), "finished": int(done or 0)}
