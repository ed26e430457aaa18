"""The pure-Python reference engine: RULES.md written as plainly as possible.

It is the test oracle for the Cython engine (``ccengine._core``), so clarity wins over speed
everywhere here. Both engines expose the same ``State`` interface: ``board``, ``to_move``,
``ply``, ``legal_moves()``, ``play(move)``, ``undo()``, ``is_terminal()``, ``result()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rules import DIRECTIONS, PASS, Geometry, Rules

__all__ = ["IllegalMoveError", "ReferenceState", "legal_moves", "move_path", "perft", "piece_destinations"]

Move = tuple[int, int]


class IllegalMoveError(ValueError):
    """A move that is not legal in the current state (the state is left unchanged)."""


# ---------------------------------------------------------------------------------------------
# Move generation
# ---------------------------------------------------------------------------------------------


def _hop_landings(rules: Rules, board: list[int], x: int) -> list[int]:
    """Cells reachable from ``x`` by one hop on ``board`` (the moving piece already lifted)."""
    geo = rules.geometry
    landings = []
    for d in range(len(DIRECTIONS)):
        if rules.hops == "adjacent":
            over, land = geo.offset(x, d, 1), geo.offset(x, d, 2)
            if over >= 0 and land >= 0 and board[over] != -1 and board[land] == -1:
                landings.append(land)
            continue
        # Mirror hop: the first occupied cell at distance k, then k empty cells beyond it.
        k = 1
        while geo.offset(x, d, k) >= 0 and board[geo.offset(x, d, k)] == -1:
            k += 1
        if geo.offset(x, d, k) < 0:
            continue  # the ray left the board without meeting a piece
        beyond = [geo.offset(x, d, j) for j in range(k + 1, 2 * k + 1)]
        if all(cell >= 0 and board[cell] == -1 for cell in beyond):
            landings.append(beyond[-1])
    return landings


def piece_destinations(rules: Rules, board: tuple[int, ...] | list[int], s: int) -> list[int]:
    """Sorted destinations of the piece on ``s``: its steps and the closure of its hops."""
    geo = rules.geometry
    lifted = list(board)
    player = lifted[s]
    lifted[s] = -1  # while a piece hops, its start cell counts as empty
    reached: set[int] = set()
    frontier = [s]
    while frontier:
        x = frontier.pop()
        for y in _hop_landings(rules, lifted, x):
            if y not in reached:
                reached.add(y)
                frontier.append(y)
    for y in geo.step[s]:
        if y >= 0 and board[y] == -1:
            reached.add(y)
    reached.discard(s)
    if rules.goal_lock and s in geo.goal(player):
        reached &= geo.goal(player)
    return sorted(reached)


def move_path(rules: Rules, board: tuple[int, ...] | list[int], move: Move) -> list[int]:
    """The cells a legal move visits, ``[s, ..., e]``: a step, or a shortest chain of hops.

    A move is only its two ends; this recovers one witness path for display and for protocols
    that print hop chains. Raises ``IllegalMoveError`` when ``e`` is not reachable from ``s``.
    """
    s, e = move
    if e in rules.geometry.step[s] and board[e] == -1:
        return [s, e]
    lifted = list(board)
    lifted[s] = -1
    parent = {s: s}
    frontier = [s]
    while frontier and e not in parent:
        nxt = []
        for x in frontier:
            for y in _hop_landings(rules, lifted, x):
                if y not in parent:
                    parent[y] = x
                    nxt.append(y)
        frontier = nxt
    if e not in parent or e == s:
        raise IllegalMoveError(f"no step or hop chain leads from cell {s} to cell {e}")
    path = [e]
    while path[-1] != s:
        path.append(parent[path[-1]])
    return path[::-1]


def legal_moves(rules: Rules, board: tuple[int, ...] | list[int], player: int) -> list[Move]:
    """All legal moves of ``player``, sorted by ``(s, e)``; ``[PASS]`` when it has none."""
    moves = [(s, e) for s in range(rules.cells) if board[s] == player for e in piece_destinations(rules, board, s)]
    return moves or [PASS]


# ---------------------------------------------------------------------------------------------
# End of game
# ---------------------------------------------------------------------------------------------


def _goal_count(geo: Geometry, board: tuple[int, ...] | list[int], player: int) -> int:
    return sum(1 for i in geo.goal(player) if board[i] == player)


def _has_won(rules: Rules, board: tuple[int, ...] | list[int], player: int) -> bool:
    goal = rules.geometry.goal(player)
    if rules.win_rule == "all_own":
        return all(board[i] == player for i in goal)
    return all(board[i] != -1 for i in goal) and any(board[i] == player for i in goal)


def winner_after_move(rules: Rules, board: tuple[int, ...] | list[int], mover: int) -> int | None:
    """The winning player after ``mover`` moved (the mover is checked first), or None."""
    for p in (mover, 1 - mover):
        if _has_won(rules, board, p):
            return p
    return None


def adjudicate(rules: Rules, board: tuple[int, ...] | list[int]) -> int:
    """Result of a game cut off without a winner: a draw, or by distance advanced."""
    if rules.adjudicate == "none":
        return 0
    geo = rules.geometry
    start = geo.start_board()
    advance = [0, 0]
    for p in (0, 1):
        now = sum(geo.advance(p, i) for i in range(rules.cells) if board[i] == p)
        then = sum(geo.advance(p, i) for i in range(rules.cells) if start[i] == p)
        advance[p] = now - then
    diff = advance[0] - advance[1]
    if diff > rules.distance_margin:
        return 1
    if diff < -rules.distance_margin:
        return -1
    return 0


# ---------------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Snapshot:
    board: tuple[int, ...]
    to_move: int
    ply: int
    goal_best: tuple[int, int]
    progress_ply: int
    result: int | None


class ReferenceState:
    """A game in progress: board, side to move, ply count and progress tracking.

    ``goal_best[p]`` is the most pieces player p has had in its goal so far and
    ``progress_ply`` the ply at which either side last raised its ``goal_best``; they drive
    ``progress_limit``. A state built from a position starts them from that position.
    """

    def __init__(self, rules: Rules, board: tuple[int, ...] | list[int] | None = None, to_move: int = 0, ply: int = 0):
        self.rules = rules
        geo = rules.geometry
        self.board: tuple[int, ...] = tuple(board) if board is not None else geo.start_board()
        self.to_move = to_move
        self.ply = ply
        self.goal_best = (_goal_count(geo, self.board, 0), _goal_count(geo, self.board, 1))
        self.progress_ply = ply
        self._result: int | None = None
        self._history: list[_Snapshot] = []
        # A given position is judged as if the player not to move had just moved.
        won = winner_after_move(rules, self.board, 1 - to_move)
        if won is not None:
            self._result = 1 if won == 0 else -1
        elif ply >= rules.max_plies:
            self._result = adjudicate(rules, self.board)

    def copy(self) -> ReferenceState:
        """An independent copy (history included)."""
        other = ReferenceState.__new__(ReferenceState)
        other.__dict__.update(self.__dict__)
        other._history = list(self._history)
        return other

    def legal_moves(self) -> list[Move]:
        """Legal moves sorted by ``(s, e)``; ``[PASS]`` when none; ``[]`` once the game is over."""
        if self._result is not None:
            return []
        return legal_moves(self.rules, self.board, self.to_move)

    def is_terminal(self) -> bool:
        """Whether the game is over."""
        return self._result is not None

    def result(self) -> int | None:
        """``+1 / 0 / -1`` from player 0's side once the game is over, else None."""
        return self._result

    def play(self, move: Move) -> None:
        """Play a legal move (or ``PASS`` when it is the only one); raises ``IllegalMoveError``."""
        move = (int(move[0]), int(move[1]))
        if move not in self.legal_moves():
            raise IllegalMoveError(f"move {list(move)} is not legal for player {self.to_move} here")
        self._history.append(
            _Snapshot(self.board, self.to_move, self.ply, self.goal_best, self.progress_ply, self._result)
        )
        mover = self.to_move
        board = list(self.board)
        if move != PASS:
            s, e = move
            board[s], board[e] = -1, mover
        self.board = tuple(board)
        self.ply += 1
        self.to_move = 1 - mover
        count = _goal_count(self.rules.geometry, self.board, mover)
        if count > self.goal_best[mover]:
            best = list(self.goal_best)
            best[mover] = count
            self.goal_best = (best[0], best[1])
            self.progress_ply = self.ply
        won = winner_after_move(self.rules, self.board, mover)
        if won is not None:
            self._result = 1 if won == 0 else -1
        elif self.ply >= self.rules.max_plies:
            self._result = adjudicate(self.rules, self.board)
        elif self.rules.progress_limit and self.ply - self.progress_ply >= self.rules.progress_limit:
            self._result = adjudicate(self.rules, self.board)

    def undo(self) -> None:
        """Take back the last move played on this state."""
        if not self._history:
            raise IllegalMoveError("no move to undo")
        snap = self._history.pop()
        self.board, self.to_move, self.ply = snap.board, snap.to_move, snap.ply
        self.goal_best, self.progress_ply, self._result = snap.goal_best, snap.progress_ply, snap.result


def perft(state: ReferenceState, depth: int) -> int:
    """Leaves of the legal-move tree of ``depth`` plies; a terminal position is a leaf."""
    if depth == 0 or state.is_terminal():
        return 1
    total = 0
    for move in state.legal_moves():
        state.play(move)
        total += perft(state, depth - 1)
        state.undo()
    return total
