"""The pure-Python reference engine: RULES.md written as plainly as possible.

It is the test oracle for the Cython engine (``ccengine._core``), so clarity wins over speed
everywhere here. Both engines expose the same ``State`` interface: ``board``, ``to_move``,
``ply``, ``legal_moves()``, ``play(move)``, ``undo()``, ``is_terminal()``, ``result()`` (two
players), ``scores()`` and ``end_reason`` (any number of players).

It plays the rhombus and the 121-hole star (``board="star"``, presets ``star2``, ``star3``,
``star4``, ``star6``): the move rules are written once over a board geometry; the star's end of
the game is its own function, :func:`star_end` for two players and :func:`star_end_multi` for
three or more, in the order RULES.md gives.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .rules import PASS, Geometry, Rules, StarGeometry

__all__ = [
    "IllegalMoveError",
    "ReferenceState",
    "distance_winners",
    "is_witness_path",
    "legal_moves",
    "move_path",
    "perft",
    "piece_destinations",
    "result_scores",
    "rows_advanced",
    "shared_scores",
    "star_end",
    "star_end_multi",
]

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
    for d in range(len(geo.step[x])):
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


def _allowed_landings(rules: Rules, board: tuple[int, ...] | list[int], x: int, goal: frozenset[int]) -> list[int]:
    """Hop landings from ``x`` that the chain goal lock allows: from a goal cell, goal cells only.

    ``goal`` is the moving piece's goal. A piece is locked exactly when it stands in its goal,
    since once in, no landing may leave it; without ``goal_lock="chain"`` every landing is allowed.
    """
    landings = _hop_landings(rules, board, x)
    if rules.goal_lock == "chain" and x in goal:
        return [y for y in landings if y in goal]
    return landings


def _steps(rules: Rules, board: tuple[int, ...] | list[int], s: int, goal: frozenset[int]) -> list[int]:
    """Empty neighbours of ``s`` that the piece may step to (the chain lock applies to steps too)."""
    steps = [y for y in rules.geometry.step[s] if y >= 0 and board[y] == -1]
    if rules.goal_lock == "chain" and s in goal:
        return [y for y in steps if y in goal]
    return steps


def piece_destinations(rules: Rules, board: tuple[int, ...] | list[int], s: int) -> list[int]:
    """Sorted destinations of the piece on ``s``: its steps and the closure of its hops."""
    geo = rules.geometry
    lifted = list(board)
    player = lifted[s]
    goal = geo.goal(player)
    lifted[s] = -1  # while a piece hops, its start cell counts as empty
    reached: set[int] = set()
    frontier = [s]
    while frontier:
        x = frontier.pop()
        for y in _allowed_landings(rules, lifted, x, goal):
            if y not in reached:
                reached.add(y)
                frontier.append(y)
    reached.update(_steps(rules, board, s, goal))
    reached.discard(s)
    if rules.goal_lock is True and s in goal:
        reached &= goal  # the rhombus's lock restricts only the destination
    return sorted(reached)


def move_path(rules: Rules, board: tuple[int, ...] | list[int], move: Move) -> list[int]:
    """The cells a legal move visits, ``[s, ..., e]``: a step, or a shortest chain of hops.

    A move is only its two ends; this recovers one witness path for display and for protocols
    that print hop chains. Raises ``IllegalMoveError`` when ``e`` is not reachable from ``s``.
    """
    s, e = move
    goal = rules.geometry.goal(board[s]) if 0 <= board[s] < rules.geometry.players else frozenset()
    if e in _steps(rules, board, s, goal):
        return [s, e]
    lifted = list(board)
    lifted[s] = -1
    parent = {s: s}
    frontier = [s]
    while frontier and e not in parent:
        nxt = []
        for x in frontier:
            for y in _allowed_landings(rules, lifted, x, goal):
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


def is_witness_path(rules: Rules, board: tuple[int, ...] | list[int], path: tuple[int, ...] | list[int]) -> bool:
    """Whether ``path`` (``[s, ..., e]``) is a way to play the move ``(s, e)`` on ``board``.

    It is one step, or a chain of hops, each leg a hop from the previous landing that the goal
    lock allows, that visits no cell twice (OpenSpiel's rule too: a loop adds nothing to a move).
    This is how a referee checks a hop chain an engine reports as ``s-a-b-e``.
    """
    if len(path) < 2 or len(set(path)) != len(path) or not 0 <= board[path[0]] < rules.geometry.players:
        return False
    s, e = path[0], path[-1]
    if e not in piece_destinations(rules, board, s):
        return False  # the destination itself must be legal (the rhombus's destination lock)
    goal = rules.geometry.goal(board[s])
    if len(path) == 2 and e in _steps(rules, board, s, goal):
        return True
    lifted = list(board)
    lifted[s] = -1
    return all(y in _allowed_landings(rules, lifted, x, goal) for x, y in zip(path, path[1:]))


def legal_moves(rules: Rules, board: tuple[int, ...] | list[int], player: int) -> list[Move]:
    """All legal moves of ``player``, sorted by ``(s, e)``.

    With none: ``[PASS]`` on the rhombus, ``[]`` on the star (which has no pass: the game ends).
    """
    moves = [(s, e) for s in range(rules.cells) if board[s] == player for e in piece_destinations(rules, board, s)]
    if moves or rules.is_star:  # the rules differ: the star has no pass
        return moves
    return [PASS]


# ---------------------------------------------------------------------------------------------
# End of game
# ---------------------------------------------------------------------------------------------


def _goal_count(geo: Geometry | StarGeometry, board: tuple[int, ...] | list[int], player: int) -> int:
    return sum(1 for i in geo.goal(player) if board[i] == player)


def _has_won(rules: Rules, board: tuple[int, ...] | list[int], player: int) -> bool:
    goal = rules.geometry.goal(player)
    if rules.win_rule == "all_own":
        return all(board[i] == player for i in goal)
    return all(board[i] != -1 for i in goal) and any(board[i] == player for i in goal)


def winner_after_move(rules: Rules, board: tuple[int, ...] | list[int], mover: int) -> int | None:
    """The winning player after ``mover`` moved (the mover is checked first), or None."""
    for p in (mover, *(q for q in range(rules.geometry.players) if q != mover)):
        if _has_won(rules, board, p):
            return p
    return None


def rows_advanced(rules: Rules, board: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Each player's rows advanced in total since the start position: the sum of its pieces'
    ``advance`` (along its own progress axis) now, less the same sum at the start."""
    geo = rules.geometry
    start = geo.start_board()
    return tuple(
        sum(geo.advance(p, i) for i in range(rules.cells) if board[i] == p)
        - sum(geo.advance(p, i) for i in range(rules.cells) if start[i] == p)
        for p in range(geo.players)
    )


def distance_winners(rules: Rules, board: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """The players a game cut off without a winner is scored to by distance (``adjudicate``):
    those within ``distance_margin`` rows of the most advanced, or ``()`` (a draw) when that is
    everyone. Two players: the leader alone when it leads by more than the margin, else a draw."""
    advanced = rows_advanced(rules, board)
    lead = max(advanced)
    near = tuple(p for p, rows in enumerate(advanced) if lead - rows <= rules.distance_margin)
    return () if len(near) == len(advanced) else near


def adjudicate(rules: Rules, board: tuple[int, ...] | list[int]) -> int:
    """Two-player result (+1 / 0 / -1) of a game cut off without a winner: a draw, or by distance."""
    if rules.adjudicate == "none":
        return 0
    winners = distance_winners(rules, board)
    return 1 if winners == (0,) else -1 if winners == (1,) else 0


def _all_home(geo: Geometry | StarGeometry, board: tuple[int, ...] | list[int], player: int) -> bool:
    return all(board[i] == player for i in geo.goal(player))


def _goal_blocked(geo: Geometry | StarGeometry, board: tuple[int, ...] | list[int], player: int) -> bool:
    """Anti-block: the player's goal is full, with at least one own and one other piece in it."""
    owners = {board[i] for i in geo.goal(player)}
    return -1 not in owners and player in owners and len(owners) > 1


def _finishes_at_once(rules: Rules, board: tuple[int, ...] | list[int], player: int) -> bool:
    """Whether one legal move of ``player`` brings all its pieces into its goal."""
    for s, e in legal_moves(rules, board, player):
        after = list(board)
        after[s], after[e] = -1, player
        if _all_home(rules.geometry, after, player):
            return True
    return False


def shared_scores(winners: list[int] | tuple[int, ...], players: int) -> tuple[float, ...]:
    """The score vector of a finished game: the ``winners`` share 1, or all share it (a draw) when
    there are none."""
    if not winners:
        return (1.0 / players,) * players
    return tuple(1.0 / len(winners) if p in winners else 0.0 for p in range(players))


def result_scores(result: int) -> tuple[float, float]:
    """The two-player result ``+1 / 0 / -1`` (player 0's side) as a score vector."""
    return (1.0, 0.0) if result > 0 else (0.0, 1.0) if result < 0 else (0.5, 0.5)


def _filled(rules: Rules, board: tuple[int, ...] | list[int], player: int) -> bool:
    """Whether ``player`` has filled its goal: all its pieces home, or anti-block (``win_rule`` filled)."""
    geo = rules.geometry
    return _all_home(geo, board, player) or (rules.win_rule == "filled" and _goal_blocked(geo, board, player))


def star_end_multi(
    rules: Rules, board: tuple[int, ...] | list[int], to_move: int, ply: int, occurrences: int
) -> tuple[tuple[float, ...], str] | None:
    """The end of a star game of three or more players after a move: ``(scores, reason)``, or None.

    RULES.md "Three, four and six players", with docs/RULES.md's decisions where it is silent:

    - at the end of a round (player 0 is to move: the last seat has just moved), the players whose
      goal is filled (all pieces home, or anti-block) share the win; ``reason`` is ``anti_block``
      when a winner's goal holds another player's piece, else ``all_home``;
    - otherwise the draws, in star2's order: the ``repetition``-th occurrence of the position
      (``occurrences`` counts this one), ``max_plies``, the side to move has no legal move (the
      star has no pass); each splits 1 equally and names itself as the reason, but ``max_plies``
      under the training-only ``adjudicate="distance"`` gives the point to the players
      :func:`distance_winners` names;
    - unless a goal is already filled in this round when one of them strikes: the round cannot be
      finished, and the players with a filled goal share the win as if it had.
    """
    players = rules.geometry.players
    filled = [p for p in range(players) if _filled(rules, board, p)]

    def win() -> tuple[tuple[float, ...], str]:
        blocked = any(not _all_home(rules.geometry, board, p) for p in filled)
        return shared_scores(filled, players), "anti_block" if blocked else "all_home"

    if filled and to_move == 0:
        return win()
    if rules.repetition and occurrences >= rules.repetition:
        reason = "repetition"
    elif ply >= rules.max_plies:
        reason = "max_plies"
    elif not legal_moves(rules, board, to_move):
        reason = "no_move"
    else:
        return None
    if filled:
        return win()
    if reason == "max_plies" and rules.adjudicate == "distance":  # training games only
        return shared_scores(distance_winners(rules, board), players), reason
    return shared_scores((), players), reason


def star_end(
    rules: Rules, board: tuple[int, ...] | list[int], to_move: int, ply: int, occurrences: int
) -> tuple[int, str] | None:
    """The end of a two-player star game after a move: ``(result, reason)``, or None to go on.

    RULES.md "preset star2", its order: both players home (draw, ``both_home``); player 0 home
    (player 0 wins, ``all_home``, unless ``equal_turn`` and player 1, to move, can finish at
    once: ``equal_turn`` draw); player 1 home (``all_home``); anti-block with ``win_rule`` filled,
    player 0 first (``anti_block``); the ``repetition``-th occurrence of the position
    (``occurrences`` counts this one; draw, ``repetition``); ``max_plies`` (draw, or scored by
    distance under the training-only ``adjudicate``); the side to move
    has no legal move (draw, ``no_move``). ``result`` is +1 / 0 / -1 from player 0's side.
    """
    geo = rules.geometry
    home = (_all_home(geo, board, 0), _all_home(geo, board, 1))
    if home[0] and home[1]:
        return 0, "both_home"
    if home[0]:
        if rules.equal_turn and to_move == 1 and _finishes_at_once(rules, board, 1):
            return 0, "equal_turn"
        return 1, "all_home"
    if home[1]:
        return -1, "all_home"
    if rules.win_rule == "filled":
        for p in (0, 1):
            if _goal_blocked(geo, board, p):
                return (1 if p == 0 else -1), "anti_block"
    if rules.repetition and occurrences >= rules.repetition:
        return 0, "repetition"
    if ply >= rules.max_plies:
        return adjudicate(rules, board), "max_plies"
    if not legal_moves(rules, board, to_move):
        return 0, "no_move"
    return None


# ---------------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Snapshot:
    board: tuple[int, ...]
    to_move: int
    ply: int
    goal_best: tuple[int, ...]
    progress_ply: int
    result: int | None
    scores: tuple[float, ...] | None
    reason: str | None


#: A position's identity for the repetition rule: the board and the player to move.
PositionKey = tuple[tuple[int, ...], int]


class ReferenceState:
    """A game in progress: board, side to move, ply count and what the end of the game needs.

    ``goal_best[p]`` is the most pieces player p has had in its goal so far and
    ``progress_ply`` the ply at which either side last raised its ``goal_best``; they drive
    ``progress_limit``. ``seen`` counts the occurrences of each position key ``(board, to_move)``
    in this game when ``rules.repetition`` is on (else it stays empty): the repetition rule's
    history. A state built from a position starts all of them from that position (seen once).
    ``end_reason`` names why a finished game ended (``goal``, ``max_plies``, ``progress_limit`` on
    the rhombus; :func:`star_end`'s and :func:`star_end_multi`'s reasons on the star).
    """

    def __init__(self, rules: Rules, board: tuple[int, ...] | list[int] | None = None, to_move: int = 0, ply: int = 0):
        self.rules = rules
        geo = rules.geometry
        self.board: tuple[int, ...] = tuple(board) if board is not None else geo.start_board()
        self.to_move = to_move
        self.ply = ply
        self.goal_best = tuple(_goal_count(geo, self.board, p) for p in range(geo.players))
        self.progress_ply = ply
        self._result: int | None = None  # two players: +1 / 0 / -1
        self._scores: tuple[float, ...] | None = None
        self.end_reason: str | None = None
        self._history: list[_Snapshot] = []
        self.seen: Counter[PositionKey] = Counter()
        self._count_position(+1)
        self._judge((to_move - 1) % geo.players)  # a given position: as if the player before had just moved

    def copy(self) -> ReferenceState:
        """An independent copy (history included)."""
        other = ReferenceState.__new__(ReferenceState)
        other.__dict__.update(self.__dict__)
        other._history = list(self._history)
        other.seen = Counter(self.seen)
        return other

    def key(self) -> PositionKey:
        """The repetition rule's identity of this position: ``(board, to_move)``."""
        return self.board, self.to_move

    def legal_moves(self) -> list[Move]:
        """Legal moves sorted by ``(s, e)``; ``[PASS]`` when none; ``[]`` once the game is over."""
        if self._scores is not None:
            return []
        return legal_moves(self.rules, self.board, self.to_move)

    def is_terminal(self) -> bool:
        """Whether the game is over."""
        return self._scores is not None

    @property
    def players(self) -> int:
        """The number of players."""
        return self.rules.geometry.players

    def result(self) -> int | None:
        """``+1 / 0 / -1`` from player 0's side once the game is over, else None (two players only;
        :meth:`scores` is the result of any number of players)."""
        if self.players != 2:  # +1 / 0 / -1 is the two-player form of the result
            raise ValueError(
                f"result() is the two-player +1/0/-1; a game of {self.rules.geometry.players} players "
                "has scores() (one entry per player)"
            )
        return self._result

    def scores(self) -> tuple[float, ...] | None:
        """The result as a vector, one entry per player summing to 1 (the winners share 1, a draw
        splits it equally), once the game is over; None while it goes on."""
        return self._scores

    def _end(self, result: int | tuple[float, ...], reason: str) -> None:
        """End the game: a two-player result (+1 / 0 / -1) or a score vector, and its reason."""
        if isinstance(result, tuple):
            self._scores = result
        else:
            self._result, self._scores = result, result_scores(result)
        self.end_reason = reason

    def play(self, move: Move) -> None:
        """Play a legal move (or ``PASS`` when it is the only one); raises ``IllegalMoveError``."""
        move = (int(move[0]), int(move[1]))
        if move not in self.legal_moves():
            raise IllegalMoveError(f"move {list(move)} is not legal for player {self.to_move} here")
        self._history.append(
            _Snapshot(
                self.board,
                self.to_move,
                self.ply,
                self.goal_best,
                self.progress_ply,
                self._result,
                self._scores,
                self.end_reason,
            )
        )
        mover = self.to_move
        board = list(self.board)
        if move != PASS:
            s, e = move
            board[s], board[e] = -1, mover
        self.board = tuple(board)
        self.ply += 1
        self.to_move = (mover + 1) % self.rules.geometry.players
        self._count_position(+1)
        count = _goal_count(self.rules.geometry, self.board, mover)
        if count > self.goal_best[mover]:
            self.goal_best = tuple(count if p == mover else best for p, best in enumerate(self.goal_best))
            self.progress_ply = self.ply
        self._judge(mover)

    def undo(self) -> None:
        """Take back the last move played on this state."""
        if not self._history:
            raise IllegalMoveError("no move to undo")
        self._count_position(-1)
        snap = self._history.pop()
        self.board, self.to_move, self.ply = snap.board, snap.to_move, snap.ply
        self.goal_best, self.progress_ply, self._result = snap.goal_best, snap.progress_ply, snap.result
        self._scores, self.end_reason = snap.scores, snap.reason

    def _count_position(self, delta: int) -> None:
        """Count the current position in (``+1``) or out of (``-1``) the repetition history."""
        if not self.rules.repetition:
            return
        key = self.key()
        self.seen[key] += delta
        if self.seen[key] == 0:
            del self.seen[key]

    def _judge(self, mover: int) -> None:
        """End the game if it is over now that ``mover`` has moved. The end of the game differs by
        board (RULES.md): the rhombus's goal, move and progress limits; the star's checks in order."""
        rules = self.rules
        if rules.is_star:
            # star2 is CCERL's two-player game (its own order, equal turns); more players finish the round
            judge = star_end if self.players == 2 else star_end_multi
            end = judge(rules, self.board, self.to_move, self.ply, self.seen[self.key()])
            if end is not None:
                self._end(*end)
            return
        won = winner_after_move(rules, self.board, mover)
        if won is not None:
            self._end(1 if won == 0 else -1, "goal")
        elif self.ply >= rules.max_plies:
            self._end(adjudicate(rules, self.board), "max_plies")
        elif rules.progress_limit and self.ply - self.progress_ply >= rules.progress_limit:
            self._end(adjudicate(rules, self.board), "progress_limit")


def perft(state: ReferenceState, depth: int) -> int:
    """Leaves of the legal-move tree of ``depth`` plies; a terminal position is a leaf."""
    if depth == 0 or state.is_terminal():
        return 1
    if depth == 1:
        return len(state.legal_moves())  # each child is a leaf, terminal or not
    total = 0
    for move in state.legal_moves():
        state.play(move)
        total += perft(state, depth - 1)
        state.undo()
    return total
