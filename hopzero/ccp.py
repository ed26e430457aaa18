"""The engine side of CCP, the Chinese Checkers text protocol over stdin/stdout.

CCP is the protocol of the public Chinese Checkers engine rating list (CCERL); its reference is
``docs/benchmark/CCP_PROTOCOL.md`` in the JumpStar engine's repository. Our subset and its
mapping onto the rhombus boards are documented in docs/PROTOCOL.md. A referee owns legality and
clocks; the engine answers what it is asked and never crashes on bad input: an unknown command or
a malformed position gets an ``info string error ...`` line and changes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ccengine import PASS, Rules, preset
from ccengine.engines import new_state
from ccengine.notation import Position
from ccengine.players import Player, SeedLike, make_player
from ccengine.reference import move_path

from . import __version__

__all__ = ["CCPEngine", "serve"]

Move = tuple[int, int]
_CELL_OF = {".": -1, "0": 0, "1": 1}
COMMANDS = ("ccp", "protocol", "isready", "setoption", "newgame", "position", "go", "stop", "analyze", "quit")


class ProtocolError(ValueError):
    """A command the engine cannot act on; reported as ``info string error ...``."""


class CCPEngine:
    """One engine session: the current position, the player that thinks, the game so far.

    ``handle(line)`` returns the reply lines for one command. The engine keeps one game state
    and plays the moves between consecutive positions onto it when it can recognise them (our
    ``bestmove``, then the opponent's reply), so players that read history (the network's input
    holds the last three states) see the real game; any other position starts a fresh game.
    """

    def __init__(self, rules: Rules, player_spec: str, seed: SeedLike = None) -> None:
        self.rules = rules
        self.player_spec = player_spec
        self.player: Player = make_player(player_spec, rules, seed)
        self.state: Any = new_state(rules)
        self._last_bestmove: Move | None = None
        self.finished = False

    # -- commands -------------------------------------------------------------------------------

    def handle(self, line: str) -> list[str]:
        """Reply lines for one input line (empty lines and unknown commands included)."""
        words = line.split()
        if not words:
            return []
        command, args = words[0], words[1:]
        handler: Callable[[list[str]], list[str]] | None = getattr(self, f"_cmd_{command}", None)
        if handler is None:
            return [f"info string error unknown command {command!r}; valid: {' '.join(COMMANDS)}"]
        try:
            return handler(args)
        except ProtocolError as exc:
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
        return [f"info string option {' '.join(args)!r} ignored: hopzero takes its options from --player"]

    def _cmd_stop(self, args: list[str]) -> list[str]:
        return []  # searches are synchronous: by the time "stop" is read there is nothing to stop

    def _cmd_newgame(self, args: list[str]) -> list[str]:
        self.state = new_state(self.rules)
        self._last_bestmove = None
        self.player.reset()
        return []

    def _cmd_quit(self, args: list[str]) -> list[str]:
        self.finished = True
        return []

    def _cmd_position(self, args: list[str]) -> list[str]:
        if args == ["startpos"]:
            self._cmd_newgame([])
            return []
        if len(args) != 6 or args[0] != "cells" or args[2] != "player" or args[4] != "ply":
            raise ProtocolError("position must be 'position startpos' or 'position cells <CELLS> player <0|1> ply <N>'")
        position = self._parse_cells(args[1], args[3], args[5])
        self._follow(position)
        return []

    def _cmd_go(self, args: list[str]) -> list[str]:
        limits = self._parse_go(args)
        if self.state.is_terminal():
            return [f"info string error the game is over (result {self.state.result():+d})", "bestmove pass"]
        moves = self.state.legal_moves()
        if moves == [PASS]:
            return ["bestmove pass"]
        start = time.perf_counter()
        move = self._think(**limits)
        elapsed_ms = int((time.perf_counter() - start) * 1000)
        self._last_bestmove = move
        path = move_path(self.rules, self.state.board, move)
        return [f"info time {elapsed_ms}", "bestmove " + "-".join(map(str, path))]

    def _cmd_analyze(self, args: list[str]) -> list[str]:
        if len(args) != 2 or args[0] != "topk" or not args[1].isdigit() or int(args[1]) < 1:
            raise ProtocolError("analyze takes 'topk <K>' with K >= 1")
        if self.state.is_terminal():
            raise ProtocolError(f"the game is over (result {self.state.result():+d})")
        value, policy = self._analyze()
        top = sorted(policy, key=lambda mp: -mp[1])[: int(args[1])]
        moves = [{"move": "-".join(map(str, move_path(self.rules, self.state.board, m))), "policy": round(p, 6)}
                 for m, p in top if m != PASS]
        return ["analysis " + json.dumps({"value": round(value, 6), "moves": moves}, separators=(",", ":"))]

    # -- helpers --------------------------------------------------------------------------------

    def _parse_cells(self, cells: str, player: str, ply: str) -> Position:
        n = self.rules.cells
        if len(cells) != n:
            raise ProtocolError(f"position cells has {len(cells)} characters, the {self.rules.name} board has {n}")
        bad = sorted(set(cells) - set(_CELL_OF))
        if bad:
            raise ProtocolError(f"position cells contains {bad}; valid cell characters: '.', '0', '1'")
        board = tuple(_CELL_OF[ch] for ch in cells)
        for p in (0, 1):
            if board.count(p) != self.rules.k:
                raise ProtocolError(f"position has {board.count(p)} pieces of player {p}, needs {self.rules.k}")
        if player not in ("0", "1"):
            raise ProtocolError(f"player {player!r} must be 0 or 1")
        if not ply.isdigit():
            raise ProtocolError(f"ply {ply!r} must be a non-negative integer")
        return Position(board, int(player), int(ply))

    def _follow(self, position: Position) -> None:
        """Move the game state to ``position``, playing the recognised moves onto it."""
        state = self.state
        if self._matches(state, position):
            return
        candidates: Iterable[list[Move]] = ([m] for m in state.legal_moves())
        if self._last_bestmove is not None and self._last_bestmove in state.legal_moves():
            ours = self._last_bestmove
            state.play(ours)
            replies = [[ours, m] for m in state.legal_moves()]
            state.undo()
            candidates = [*replies, *candidates]
        for line in candidates:
            for m in line:
                state.play(m)
            if self._matches(state, position):
                return
            for _ in line:
                state.undo()
        self.state = new_state(self.rules, position)  # not reachable: a new game from here
        self.player.reset()
        self._last_bestmove = None

    @staticmethod
    def _matches(state: Any, position: Position) -> bool:
        return tuple(state.board) == position.board and state.to_move == position.to_move and state.ply == position.ply

    def _parse_go(self, args: list[str]) -> dict[str, int]:
        limits: dict[str, int] = {}
        i = 0
        while i < len(args):
            key = args[i]
            if key not in ("nodes", "movetime") or i + 1 >= len(args) or not args[i + 1].isdigit():
                raise ProtocolError("go takes 'nodes <N>' and/or 'movetime <MS>' with non-negative integers")
            limits[key] = int(args[i + 1])
            i += 2
        return limits

    def _think(self, nodes: int | None = None, movetime: int | None = None) -> Move:
        think = getattr(self.player, "select_with_limits", None)
        if think is not None:
            return think(self.state, nodes=nodes, movetime_ms=movetime)
        return self.player.select(self.state)

    def _analyze(self) -> tuple[float, list[tuple[Move, float]]]:
        analyze = getattr(self.player, "analyze", None)
        if analyze is None:
            raise ProtocolError(f"player {self.player_spec!r} cannot analyze")
        return analyze(self.state)


def serve(rules: Rules | str, player_spec: str, seed: SeedLike, stdin: TextIO, stdout: TextIO) -> int:
    """Run the protocol loop until ``quit`` or end of input; returns the exit status."""
    engine = CCPEngine(preset(rules) if isinstance(rules, str) else rules, player_spec, seed)
    for line in stdin:
        for reply in engine.handle(line):
            stdout.write(reply + "\n")
        stdout.flush()
        if engine.finished:
            break
    return 0
