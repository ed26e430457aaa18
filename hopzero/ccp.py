"""The engine side of CCP, the Chinese Checkers text protocol over stdin/stdout.

CCP is the protocol of the public Chinese Checkers engine rating list (CCERL); its reference is
``docs/benchmark/CCP_PROTOCOL.md`` in the JumpStar engine's repository. Our subset and its
mapping onto the rhombus boards and the 121-hole star (``COMPACT121`` cells, hop chains as
witness paths ``s-a-b-e``) are documented in docs/PROTOCOL.md. A referee owns legality and
clocks; the engine answers what it is asked and never crashes on bad input: an unknown command, a
malformed position or number, or a line that is not short printable ASCII gets an
``info string error ...`` line (echoing at most a short excerpt of it) and changes nothing.

stdin is read on its own thread, so that ``stop`` (and ``quit``) reach a search in progress: a
search runs in chunks of simulations and asks between chunks whether to stop.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, TextIO

from ccengine import PASS, Rules, preset
from ccengine.engines import new_state
from ccengine.notation import NotationError, Position, excerpt, parse_int, parse_move_path, parse_ply
from ccengine.players import Player, SeedLike
from learner.players import make_player
from ccengine.reference import is_witness_path, move_path

from . import __version__

__all__ = ["DEFAULT_MAX_MOVETIME_MS", "DEFAULT_MAX_NODES", "MAX_LINE_BYTES", "CCPEngine", "Limits", "serve"]

Move = tuple[int, int]
COMMANDS = ("ccp", "protocol", "isready", "setoption", "newgame", "position", "go", "stop", "analyze", "quit")

#: The longest line read (a ``position cells`` line on the 121-cell star is about 150 bytes; a
#: ``position startpos moves ...`` line of a whole 240-ply star game in ``s-e`` form about 2000).
MAX_LINE_BYTES = 4096
#: Default caps on one search, ``hopzero engine --max-nodes`` / ``--max-movetime-ms``: 100,000
#: simulations hold about 60 MB of tree on cc49 (seconds with rollouts, minutes with a network on
#: a CPU); a minute a move is generous for a rating list.
DEFAULT_MAX_NODES = 100_000
DEFAULT_MAX_MOVETIME_MS = 60_000
#: The most that ``--max-nodes`` may be: the search counts simulations in a 32-bit C int.
NODES_CEILING = 2**31 - 1
#: The most that ``--max-movetime-ms`` may be: one day.
MOVETIME_CEILING_MS = 86_400_000
#: Commands held while a search runs, to be handled after its ``bestmove``.
MAX_WAITING = 64
_STOPPERS = ("stop", "quit")


class ProtocolError(ValueError):
    """A command the engine cannot act on; reported as ``info string error ...``."""


@dataclass(frozen=True)
class Limits:
    """The operator's caps on one search; a ``go`` asking for more is searched at the cap."""

    max_nodes: int = DEFAULT_MAX_NODES
    """Most simulations of one ``go nodes`` (``--max-nodes``)."""
    max_movetime_ms: int = DEFAULT_MAX_MOVETIME_MS
    """Longest ``go movetime`` in milliseconds (``--max-movetime-ms``)."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_nodes <= NODES_CEILING:
            raise ValueError(f"max_nodes={self.max_nodes} must be in 1..{NODES_CEILING}")
        if not 1 <= self.max_movetime_ms <= MOVETIME_CEILING_MS:
            raise ValueError(f"max_movetime_ms={self.max_movetime_ms} must be in 1..{MOVETIME_CEILING_MS}")


def _outcome(state: Any) -> str:
    """How a finished game ended, for messages: its result vector, ``scores 0,1,0``."""
    return "scores " + ",".join(f"{x:g}" for x in state.scores())


class CCPEngine:
    """One engine session: the current position, the player that thinks, the game so far.

    ``handle(line)`` returns the reply lines for one command. The engine keeps one game state
    and plays the moves between consecutive positions onto it when it can recognise them (up to
    one move of every player: its own and the other players' replies), so players that read
    history (the network's input holds the last three states) see the real game, and the star's
    repetition rule counts the game's own positions; any other position starts a fresh game.
    ``position ... moves ...`` gives the game outright: the base position and the moves from it,
    each checked. Whatever its history says about the end of the game, ``go`` answers a legal
    move wherever the position itself has one (a referee judges the position, not our history).
    """

    def __init__(self, rules: Rules, player_spec: str, seed: SeedLike = None, limits: Limits = Limits()) -> None:
        self.rules = rules
        self.player_spec = player_spec
        self.limits = limits
        self.player: Player = make_player(player_spec, rules, seed)
        self.state: Any = new_state(rules)
        self.finished = False

    # -- commands -------------------------------------------------------------------------------

    def handle(self, line: str, stop: Callable[[], bool] | None = None) -> list[str]:
        """Reply lines for one input line; ``stop`` is asked between chunks of a ``go`` search
        and ends it early when it answers True. A bad line gets one error line and changes nothing."""
        words = line.split()
        if not words:
            return [f"info string error empty line; valid commands: {' '.join(COMMANDS)}"]
        command, args = words[0], words[1:]
        handler: Callable[..., list[str]] | None = getattr(self, f"_cmd_{command}", None)
        if handler is None:
            return [f"info string error unknown command {excerpt(command)}; valid: {' '.join(COMMANDS)}"]
        try:
            return handler(args, stop) if command == "go" else handler(args)
        except (ProtocolError, NotationError) as exc:
            return [f"info string error {exc}"]

    def _cmd_ccp(self, args: list[str]) -> list[str]:
        return [
            f"id name hopzero {__version__} ({self.player_spec})",
            "id author hopzero",
            f"info string preset {self.rules.name} cells {self.rules.cells} pieces {self.rules.k}",
            "ccpok",
        ]

    def _cmd_protocol(self, args: list[str]) -> list[str]:
        return ["protocol ccp"]

    def _cmd_isready(self, args: list[str]) -> list[str]:
        return ["readyok"]

    def _cmd_setoption(self, args: list[str]) -> list[str]:
        return [f"info string option {excerpt(' '.join(args))} ignored: hopzero takes its options from --player"]

    def _cmd_stop(self, args: list[str]) -> list[str]:
        return []  # no search is running (a stop during a search is taken by the search's poll)

    def _cmd_newgame(self, args: list[str]) -> list[str]:
        self._new_game(new_state(self.rules))
        return []

    def _cmd_quit(self, args: list[str]) -> list[str]:
        self.finished = True
        return []

    def _cmd_position(self, args: list[str]) -> list[str]:
        usage = ("position must be 'position startpos [moves M ...]' or "
                 "'position cells <CELLS> player <P> ply <N> [moves M ...]'")
        cut = args.index("moves") if "moves" in args else len(args)
        head, moves = args[:cut], args[cut + 1 :]
        if head == ["startpos"]:
            base = None
        elif len(head) == 6 and head[0] == "cells" and head[2] == "player" and head[4] == "ply":
            base = self._parse_cells(head[1], head[3], head[5])
        else:
            raise ProtocolError(usage)
        if not moves:  # 'moves' with none after it is the position itself
            if base is None:
                self._cmd_newgame([])
            else:
                self._follow(base)
            return []
        line = None if base is None else self._line_to(base)
        if line is not None:  # the moves since a position of our game (how N players fit one line)
            game = self.state.copy()
            for m in line:
                game.play(m)
            self.state = self._play_moves(game, moves)  # raises before anything changes
            return []
        game = self._play_moves(new_state(self.rules, base), moves)
        continues = self._line_to(self._position_of(game)) is not None
        if continues:
            self.state = game  # the referee's game, with the history it gave
        else:
            self._new_game(game)
        return []

    def _cmd_go(self, args: list[str], stop: Callable[[], bool] | None = None) -> list[str]:
        limits, notes = self._parse_go(args)
        over, belief = self._playable()
        if over is not None:
            return [f"info string error the game is over ({over})", "bestmove pass"]
        notes += belief
        moves = self.state.legal_moves()
        if moves == [PASS]:
            return [*notes, "bestmove pass"]
        start = time.perf_counter()
        move = self._think(stop=stop, **limits)
        elapsed_ms = int((time.perf_counter() - start) * 1000)
        path = move_path(self.rules, self.state.board, move)
        return [*notes, f"info time {elapsed_ms}", "bestmove " + "-".join(map(str, path))]

    def _cmd_analyze(self, args: list[str]) -> list[str]:
        if len(args) != 2 or args[0] != "topk":
            raise ProtocolError("analyze takes 'topk <K>' with K >= 1")
        # more than every legal move is the same as every legal move
        k = parse_int(args[1], "analyze topk", minimum=1, maximum=2**63 - 1)
        over, belief = self._playable()
        if over is not None:
            raise ProtocolError(f"the game is over ({over})")
        value, policy = self._analyze()
        top = sorted(policy, key=lambda mp: -mp[1])[:k]
        moves = [{"move": "-".join(map(str, move_path(self.rules, self.state.board, m))), "policy": round(p, 6)}
                 for m, p in top if m != PASS]
        return [*belief, "analysis " + json.dumps({"value": round(value, 6), "moves": moves}, separators=(",", ":"))]

    # -- helpers --------------------------------------------------------------------------------

    def _parse_cells(self, cells: str, player: str, ply: str) -> Position:
        n, players = self.rules.cells, self.rules.players
        digits = "".join(map(str, range(players)))
        if len(cells) != n:
            raise ProtocolError(f"position cells has {len(cells)} characters, the {self.rules.name} board has {n}")
        valid = "valid cell characters: '.' and the player digits " + ", ".join(digits)
        for i, ch in enumerate(cells):
            if ch in "0123456789" and ch not in digits:
                raise ProtocolError(f"position cells has a piece of player {ch} on cell {i}, "
                                    f"but {self.rules.name} has {players} players; {valid}")
            if ch != "." and ch not in digits:
                raise ProtocolError(f"position cells contains {excerpt(ch)} on cell {i}; {valid}")
        board = tuple(-1 if ch == "." else int(ch) for ch in cells)
        for p in range(players):
            if board.count(p) != self.rules.k:
                raise ProtocolError(f"position has {board.count(p)} pieces of player {p}, needs {self.rules.k}")
        if len(player) != 1 or player not in digits:
            raise ProtocolError(f"player {excerpt(player)} is unknown; valid: {' or '.join(digits)}")
        return Position(board, int(player), parse_ply(self.rules, ply, "ply"))

    def _playable(self) -> tuple[str | None, list[str]]:
        """Make the game one that goes on wherever its position does. Returns how the game ended
        when the position itself is over (else None), and the ``info string`` lines to send first.

        A game that is over only by its history (the star's third repetition) while its
        position, judged alone, has legal moves goes on as a new game from that position: a
        referee that judges positions (CCERL's) plays on, and a missing answer is a forfeit.
        What the engine believed is said in an ``info string`` before the answer.
        """
        if not self.state.is_terminal():
            return None, []
        cold = new_state(self.rules, self._position_of(self.state))
        if cold.is_terminal():
            return _outcome(cold), []
        belief = (f"info string the game is over in this engine's history ({self.state.end_reason}, "
                  f"{_outcome(self.state)}); the position has legal moves: playing on from it")
        self._new_game(cold)
        return None, [belief]

    def _new_game(self, state: Any) -> None:
        """Start a new game at ``state``: the player forgets the old one."""
        self.state = state
        self.player.reset()

    def _play_moves(self, state: Any, moves: list[str]) -> Any:
        """``state`` after ``moves`` (each ``s-e`` or a witness path), every one checked first.

        A move after an end that only the game's history makes (a repetition) is played from the
        position as a new game, as :meth:`_playable` goes on; after an end the position shows
        (a win, the ply limit) it is refused."""
        for number, text in enumerate(moves, 1):
            path = parse_move_path(self.rules, text)
            where = f"move {number} {excerpt(text)} (ply {state.ply}, player {state.to_move})"
            if state.is_terminal():
                cold = new_state(self.rules, self._position_of(state))
                if cold.is_terminal():
                    raise ProtocolError(f"{where}: the game is already over ({_outcome(cold)})")
                state = cold
            move = (path[0], path[-1])
            if move not in state.legal_moves():
                raise ProtocolError(f"{where} is not legal: {self._why_illegal(state, move)}")
            if len(path) > 2 and not is_witness_path(self.rules, state.board, path):
                legs = f"a chain of legal single hops from {path[0]} to {path[-1]}"
                raise ProtocolError(f"{where}: its path is not {legs}")
            state.play(move)
        return state

    def _why_illegal(self, state: Any, move: Move) -> str:
        s, e = move
        if move == PASS:
            if self.rules.is_star:
                return "the star has no pass (a side with no legal move ends the game)"
            return "a pass is legal only when the side to move has no other move"
        if state.board[s] == -1:
            return f"cell {s} is empty"
        if state.board[s] != state.to_move:
            return f"the piece on cell {s} is player {state.board[s]}'s"
        if state.board[e] != -1:
            return f"cell {e} is occupied"
        return f"no step or chain of hops the rules allow leads from {s} to {e}"

    def _follow(self, position: Position) -> None:
        """Move the game state to ``position``, playing the recognised moves onto it."""
        line = self._line_to(position)
        if line is None:  # not reachable: a new game from here
            self._new_game(new_state(self.rules, position))
            return
        for m in line:
            self.state.play(m)

    def _line_to(self, position: Position) -> list[Move] | None:
        """The legal moves that take the game to ``position``, at most one of each player (our
        move and the N-1 replies of a game of N); None when ``position`` is not such a continuation.

        Pieces are never taken, so each player's pieces change only by that player's own move:
        the cells a player left and reached name its move (none changed: a pass), and the ply
        count says how many moved. One look at the boards finds the line, for any N.
        """
        state = self.state
        count = position.ply - state.ply
        if not 0 <= count <= state.players:
            return None
        moved: dict[int, Move] = {}
        for p in range(state.players):
            left = [i for i, (a, b) in enumerate(zip(state.board, position.board)) if a == p != b]
            reached = [i for i, (a, b) in enumerate(zip(state.board, position.board)) if b == p != a]
            if len(left) != len(reached) or len(left) > 1:
                return None
            if left:
                moved[p] = (left[0], reached[0])
        line: list[Move] = []
        try:
            for _ in range(count):
                move = moved.pop(state.to_move, PASS)
                if move not in state.legal_moves():
                    return None
                state.play(move)
                line.append(move)
            found = not moved and self._matches(state, position)
        finally:
            for _ in line:
                state.undo()
        return line if found else None

    @staticmethod
    def _position_of(state: Any) -> Position:
        return Position(tuple(state.board), state.to_move, state.ply)

    @staticmethod
    def _matches(state: Any, position: Position) -> bool:
        return tuple(state.board) == position.board and state.to_move == position.to_move and state.ply == position.ply

    def _parse_go(self, args: list[str]) -> tuple[dict[str, int], list[str]]:
        """The search limits of ``go`` args, capped by :attr:`limits`, and a note per cap applied."""
        limits: dict[str, int] = {}
        notes: list[str] = []
        caps = {"nodes": (1, self.limits.max_nodes, "--max-nodes"),
                "movetime": (0, self.limits.max_movetime_ms, "--max-movetime-ms")}
        if len(args) % 2 or any(key not in caps for key in args[::2]):
            raise ProtocolError("go takes 'nodes <N>' (N >= 1) and/or 'movetime <MS>' (MS >= 0)")
        for key, text in zip(args[::2], args[1::2]):
            minimum, cap, flag = caps[key]
            value = parse_int(text, f"go {key}", minimum=minimum, maximum=2**63 - 1)
            if value > cap:
                notes.append(f"info string go {key} {value} capped at {cap} (hopzero engine {flag})")
                value = cap
            limits[key] = value
        return limits, notes

    def _think(
        self, nodes: int | None = None, movetime: int | None = None, stop: Callable[[], bool] | None = None
    ) -> Move:
        think = getattr(self.player, "select_with_limits", None)
        if think is not None:
            return think(self.state, nodes=nodes, movetime_ms=movetime, stop=stop)
        return self.player.select(self.state)

    def _analyze(self) -> tuple[float, list[tuple[Move, float]]]:
        analyze = getattr(self.player, "analyze", None)
        if analyze is None:
            raise ProtocolError(f"player {self.player_spec!r} cannot analyze")
        return analyze(self.state)


# ---------------------------------------------------------------------------------------------
# Reading stdin
# ---------------------------------------------------------------------------------------------

_EOF = None  # what the reader queues at the end of input


def decode_line(raw: bytes) -> str:
    """The text of one input line: printable ASCII (tabs allowed, CRLF endings too).

    Raises :class:`ProtocolError` naming the first offending byte, so that binary garbage or
    invalid UTF-8 is one error line and never a command.
    """
    body = raw.removesuffix(b"\n").removesuffix(b"\r")
    for column, byte in enumerate(body):
        where = f"byte 0x{byte:02x} at column {column}"
        if byte >= 0x80:
            raise ProtocolError(f"line is not ASCII ({where}); CCP commands are ASCII text")
        if (byte < 0x20 and byte != 0x09) or byte == 0x7F:
            raise ProtocolError(f"line has a control character ({where}); CCP commands are printable ASCII")
    return body.decode("ascii")


class _LineReader:
    """Reads stdin on a daemon thread into a small queue: decoded lines, a ``ProtocolError`` for
    a line that is not a command, ``_EOF`` at the end.

    It reads the raw file (no buffered object whose lock a daemon thread could hold at exit) and
    splits lines itself, keeping at most :data:`MAX_LINE_BYTES` of a line: a longer one is
    skipped to its end and reported. The queue is bounded, so a flood waits in the pipe.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._read = getattr(stream, "raw", stream).read
        self.queue: queue.Queue[str | ProtocolError | None] = queue.Queue(maxsize=MAX_WAITING)
        threading.Thread(target=self._run, name="ccp-stdin", daemon=True).start()

    def _run(self) -> None:
        buf = bytearray()
        skipped = 0  # bytes of an over-long line dropped so far (0: not inside one)
        while True:
            chunk = self._read(1 << 16)
            if not chunk:
                if skipped or buf:
                    self._put(bytes(buf), skipped)
                self.queue.put(_EOF)
                return
            buf += chunk
            while (end := buf.find(b"\n")) >= 0:
                self._put(bytes(buf[:end]), skipped)
                skipped = 0
                del buf[: end + 1]
            if len(buf) > MAX_LINE_BYTES:
                skipped += len(buf)
                buf.clear()

    def _put(self, line: bytes, skipped: int) -> None:
        if skipped or len(line) > MAX_LINE_BYTES:
            size = skipped + len(line)
            self.queue.put(ProtocolError(f"line too long ({size} bytes, at most {MAX_LINE_BYTES}); it was skipped"))
            return
        try:
            self.queue.put(decode_line(line))
        except ProtocolError as exc:
            self.queue.put(exc)


def _word(item: str | ProtocolError | None) -> str:
    """The command word of a queued item ('' for garbage and the end of input)."""
    words = item.split(maxsplit=1) if isinstance(item, str) else []
    return words[0] if words else ""


class _Session:
    """The protocol loop: one command at a time, and during a ``go`` search a poll of stdin
    between chunks that takes ``stop``/``quit`` at once, answers ``isready`` when nothing is waiting
    before it, and holds the other commands (at most :data:`MAX_WAITING`) for after ``bestmove``."""

    def __init__(self, engine: CCPEngine, stdin: BinaryIO, stdout: TextIO) -> None:
        self.engine = engine
        self.reader = _LineReader(stdin)
        self.out = stdout
        self.waiting: deque[str | ProtocolError | None] = deque()
        self.stopping = False

    def run(self) -> int:
        while not self.engine.finished:
            item = self.waiting.popleft() if self.waiting else self.reader.queue.get()
            if item is _EOF:
                break
            if isinstance(item, ProtocolError):
                self._write([f"info string error {item}"])
                continue
            self.stopping = False
            self._write(self.engine.handle(item, stop=self._poll))
        return 0

    def _write(self, lines: list[str]) -> None:
        for line in lines:
            self.out.write(line + "\n")
        self.out.flush()

    def _poll(self) -> bool:
        """Whether the running search should stop: takes in what stdin has sent meanwhile."""
        for _ in range(MAX_WAITING):  # what the reader's queue holds; a flood waits for the next poll
            try:
                self._arrived(self.reader.queue.get_nowait())
            except queue.Empty:
                break
        # the end of input: nobody is left to wait for more than the current chunk's answer
        if any(item is _EOF for item in self.waiting):
            self.stopping = True
        # a stop/quit before the next waiting go is meant for this search
        for item in list(self.waiting):
            word = _word(item)
            if word == "go":
                break
            if word in _STOPPERS:
                self.waiting.remove(item)
                self.stopping = True
                self.engine.finished = self.engine.finished or word == "quit"
        while self.waiting and _word(self.waiting[0]) == "isready":
            self.waiting.popleft()
            self._write(["readyok"])
        return self.stopping

    def _arrived(self, item: str | ProtocolError | None) -> None:
        """Hold a line that came during a search; beyond :data:`MAX_WAITING` drop it with an error
        line, except the end of input and a stop/quit meant for the running search."""
        for_this_search = _word(item) in _STOPPERS and not any(_word(w) == "go" for w in self.waiting)
        if len(self.waiting) >= MAX_WAITING and item is not _EOF and not for_this_search:
            shown = excerpt(item if isinstance(item, str) else str(item))
            self._write([f"info string error {MAX_WAITING} commands already wait for the search; dropped {shown}"])
            return
        self.waiting.append(item)


def serve(
    rules: Rules | str,
    player_spec: str,
    seed: SeedLike,
    stdin: BinaryIO,
    stdout: TextIO,
    limits: Limits = Limits(),
) -> int:
    """Run the protocol loop on byte-stream ``stdin`` until ``quit`` or end of input; returns
    the exit status."""
    engine = CCPEngine(preset(rules) if isinstance(rules, str) else rules, player_spec, seed, limits)
    return _Session(engine, stdin, stdout).run()
