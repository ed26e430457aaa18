"""Three, four and six players on the star (RULES.md "Three, four and six players"), both engines.

Games played to their end in both engines, every position compared (moves, scores, end reason,
repetition count, hash); positions of played games rebuilt from their COMPACT121 text; and
hand-built positions for the end of the round and the result vector (one winner, shared wins,
anti-block, repetition, move limit, no legal move, the chain goal lock of a non-zero seat), each
checked on both engines; and the training-only distance adjudication of the move limit (a leader
alone, players within the margin sharing, an even split, its order against a goal filled in the
round and a third repetition).
"""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
from engine_helpers import scratch_hash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import run, run_json

from ccengine import _core
from ccengine._playout import greedy_pick
from ccengine.notation import format_compact121, parse_compact121, parse_position, start_position
from ccengine.players import GreedyPlayer, StochasticGreedyPlayer, greedy_candidates
from ccengine.reference import ReferenceState, rows_advanced
from ccengine.rules import Rules, preset
from hopzero.ccp import CCPEngine
from hopzero.play import play_terminal

STAR3, STAR4, STAR6 = preset("star3"), preset("star4"), preset("star6")
MULTI = [STAR3, STAR4, STAR6]
#: The training-only distance adjudication of the move limit (margins 3, the default, 1 and 0).
STAR3_DISTANCE = STAR3.replace(adjudicate="distance", name="star3-distance")
STAR4_DISTANCE = STAR4.replace(adjudicate="distance", distance_margin=1, name="star4-distance-1")
STAR6_DISTANCE = STAR6.replace(adjudicate="distance", distance_margin=0, name="star6-distance-0")
ENGINES = {"reference": ReferenceState, "cython": _core.State}
Move = tuple[int, int]


def assert_same(fast: _core.State, ref: ReferenceState) -> None:
    """Both engines hold the same position, moves, scores and end reason."""
    assert fast.board == ref.board
    assert (fast.to_move, fast.ply) == (ref.to_move, ref.ply)
    assert fast.legal_moves() == ref.legal_moves()
    assert (fast.is_terminal(), fast.scores(), fast.end_reason) == (ref.is_terminal(), ref.scores(), ref.end_reason)
    if ref.rules.repetition:
        assert fast.occurrences == ref.seen[ref.key()]
    assert fast.hash == scratch_hash(fast)


# ---------------------------------------------------------------------------------------------
# Perft, played games, rebuilt positions
# ---------------------------------------------------------------------------------------------


def _pick(rng: random.Random, rules: Rules, state, last: dict[int, Move], style: str) -> Move:
    """Mostly a move of largest forward distance (games reach the goals), or, in ``shuffle``
    games, often the mover's last move taken back (positions repeat)."""
    moves = state.legal_moves()
    back = last.get(state.to_move)
    if style == "shuffle" and back is not None and back[::-1] in moves and rng.random() < 0.7:
        return back[::-1]
    if rng.random() < 0.75:
        moves = greedy_candidates(rules, state.to_move, moves)
    return moves[rng.randrange(len(moves))]


def _positions_of_games(rules: Rules, seeds: range) -> list[tuple[tuple[int, ...], int, int]]:
    positions = []
    for seed in seeds:
        rng, state, last = random.Random(seed), _core.State(rules), {}
        while not state.is_terminal():
            positions.append((state.board, state.to_move, state.ply))
            move = _pick(rng, rules, state, last, "shuffle" if seed % 3 == 0 else "forward")
            last[state.to_move] = move
            state.play(move)
    return positions


@pytest.mark.parametrize("rules", MULTI, ids=lambda r: r.name)
def test_played_games_agree_move_by_move(rules: Rules) -> None:
    reasons, locked, compared = set(), 0, 0
    for seed, style in enumerate(["forward", "shuffle", "forward"]):
        rng = random.Random(1000 * seed + rules.players)
        fast, ref, last = _core.State(rules), ReferenceState(rules), {}
        while True:
            assert_same(fast, ref)
            compared += 1
            if fast.is_terminal():
                reasons.add(fast.end_reason)
                assert sum(fast.scores()) == pytest.approx(1.0)
                break
            locked += any(fast.board[i] == fast.to_move for i in rules.geometry.goal(fast.to_move))
            move = _pick(rng, rules, fast, last, style)
            last[fast.to_move] = move
            fast.play(move)
            ref.play(move)
        for _ in range(5):  # undo takes back the end and the moves in both
            fast.undo()
            ref.undo()
            assert_same(fast, ref)
    assert compared >= 300 and locked >= 30, (compared, locked)
    assert reasons, reasons


@pytest.mark.parametrize("rules", MULTI, ids=lambda r: r.name)
def test_positions_rebuilt_from_text_agree(rules: Rules) -> None:
    """Positions of played games read back from COMPACT121 (no history): both engines agree, and
    then after one more move."""
    positions = _positions_of_games(rules, range(6))[::2][:400]
    assert len(positions) >= 300
    rng = random.Random(rules.players)
    for board, to_move, ply in positions:
        compact = "".join("." if v < 0 else str(v) for v in board)
        text = format_compact121(rules, parse_compact121(rules, f"{compact} {to_move} {ply}"))
        position = parse_position(rules, text)
        assert (position.board, position.to_move, position.ply) == (board, to_move, ply)
        fast, ref = _core.State(rules, board, to_move, ply), ReferenceState(rules, board, to_move, ply)
        assert_same(fast, ref)
        if not fast.is_terminal():
            move = rng.choice(fast.legal_moves())
            fast.play(move)
            ref.play(move)
            assert_same(fast, ref)


#: The multi-player presets and variants that switch a rule off (each changes moves or endings).
VARIANTS = [
    *MULTI,
    STAR3.replace(goal_lock=True, name="star3-destination-lock"),
    STAR4.replace(win_rule="all_own", name="star4-no-anti-block"),
    STAR6.replace(goal_lock=False, repetition=0, max_plies=90, name="star6-unlocked-90"),
    STAR4_DISTANCE,
]


@st.composite
def crowded_positions(draw, rules: Rules):
    """A random position: each player puts a random number of its pieces in its goal and the rest
    anywhere free, so that goals fill, lock pieces and block; a random side and ply."""
    geo = rules.geometry
    board = [-1] * geo.cells
    for player in draw(st.permutations(range(geo.players))):
        goal = [c for c in sorted(geo.goal(player)) if board[c] == -1]
        inside = draw(st.integers(0, min(len(goal), geo.k)))
        cells = draw(st.permutations(goal))[:inside]
        free = [c for c in range(geo.cells) if board[c] == -1 and c not in cells]
        cells += draw(st.permutations(free))[: geo.k - inside]
        for cell in cells:
            board[cell] = player
    to_move = draw(st.integers(0, geo.players - 1))
    ply = draw(st.one_of(st.integers(0, rules.max_plies - 1), st.just(rules.max_plies)))
    return tuple(board), to_move, ply


@pytest.mark.parametrize("rules", VARIANTS, ids=lambda r: r.name)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_positions_agree(rules: Rules, data) -> None:
    """Both engines on random crowded positions, then after each of a few moves and undos."""
    board, to_move, ply = data.draw(crowded_positions(rules))
    fast, ref = _core.State(rules, board, to_move, ply), ReferenceState(rules, board, to_move, ply)
    assert_same(fast, ref)
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    for _ in range(2 * rules.players):
        if fast.is_terminal():
            break
        move = rng.choice(fast.legal_moves())
        fast.play(move)
        ref.play(move)
        assert_same(fast, ref)
    while fast.ply > ply:
        fast.undo()
        ref.undo()
        assert_same(fast, ref)


# ---------------------------------------------------------------------------------------------
# The result vector API
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_result_is_two_player_only_and_scores_serve_every_count(engine: str) -> None:
    state = ENGINES[engine](STAR3)
    assert state.scores() is None and state.players == 3
    with pytest.raises(ValueError, match=r"result\(\) is the two-player \+1/0/-1; a game of 3 players has scores"):
        state.result()
    two = ENGINES[engine](preset("cc49"))
    assert two.result() is None and two.scores() is None and two.players == 2


def test_batch_api_plays_three_players() -> None:
    states = [_core.State(STAR3) for _ in range(4)]
    players = [GreedyPlayer(STAR3, seed) for seed in range(4)]
    moves_out = np.zeros((4, states[0].max_moves, 2), np.int16)
    counts = np.zeros(4, np.int32)
    scores = np.zeros((4, 3), np.float32)
    _core.batch_scores(states, scores)
    assert np.isnan(scores).all()
    while not all(s.is_terminal() for s in states):
        live = [s for s in states if not s.is_terminal()]
        _core.batch_legal_moves(live, moves_out[: len(live)], counts[: len(live)])
        assert [tuple(moves_out[0, i]) for i in range(counts[0])] == live[0].legal_moves()
        picks = [players[states.index(s)].select(s) for s in live]
        _core.batch_play(live, np.array(picks, np.int16))
    _core.batch_scores(states, scores)
    assert scores.tolist() == [list(np.float32(s.scores())) for s in states]
    assert np.allclose(scores.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="use batch_scores"):
        _core.batch_results(states, np.zeros(4, np.int8))
    with pytest.raises(ValueError, match="3 players"):
        _core.batch_scores(states, np.zeros((4, 2), np.float32))
    boards = np.zeros((4, 121), np.int8)
    _core.batch_boards(states, boards)
    rebuilt = _core.batch_new_states(STAR3, boards, to_move=[s.to_move for s in states], ply=[s.ply for s in states])
    assert [(s.board, s.hash, s.scores()) for s in rebuilt] == [(s.board, s.hash, s.scores()) for s in states]


def test_boards_name_only_seated_players() -> None:
    board = list(STAR3.geometry.start_board())
    board[60] = 3
    with pytest.raises(ValueError, match=r"board cell 60 holds 3; valid: -1 \(empty\), 0, 1, 2"):
        _core.State(STAR3, board)
    with pytest.raises(ValueError, match="to_move=3 must be a player, 0..2"):
        _core.State(STAR3, STAR3.geometry.start_board(), 3)


@pytest.mark.parametrize("rules", MULTI, ids=lambda r: r.name)
def test_greedy_players_advance_along_their_own_axis(rules: Rules) -> None:
    """Each seat's greedy move from the start gains along its own progress axis; a greedy game
    ends with a score vector."""
    geo = rules.geometry
    state = _core.State(rules)
    greedy, stochastic = GreedyPlayer(rules, 1), StochasticGreedyPlayer(rules, 2)
    for _ in range(rules.players):
        move = greedy.select(state)
        best = max(geo.forward_distance(state.to_move, m) for m in state.legal_moves())
        assert geo.forward_distance(state.to_move, move) == best >= 2  # hops out of the home
        assert geo.forward_distance(state.to_move, stochastic.select(state)) > 0
        assert move in greedy_candidates(rules, state.to_move, state.legal_moves())
        state.play(move)
    while not state.is_terminal():
        # the compiled greedy rule (playouts, the search's greedy opponent) reads the same axis
        assert greedy_pick(state, state.ply) in greedy_candidates(rules, state.to_move, state.legal_moves())
        state.play(greedy.select(state))
    assert sum(state.scores()) == pytest.approx(1.0) and state.end_reason in ("all_home", "anti_block")


# ---------------------------------------------------------------------------------------------
# Hand-built positions
# ---------------------------------------------------------------------------------------------


def _distance(rules: Rules, a: int, b: int) -> int:
    (qa, ra), (qb, rb) = rules.geometry.coords[a], rules.geometry.coords[b]
    return (abs(qa - qb) + abs(ra - rb) + abs(qa + ra - qb - rb)) // 2


def _board(rules: Rules, placed: dict[int, list[int]], near: tuple[int, ...] = ()) -> tuple[int, ...]:
    """A board with ``placed[p]``'s cells for player p; each player's other pieces parked on the
    central hexagon, as far from the cells ``near`` as can be (so that they neither fill a goal
    nor open a path near what the test looks at)."""
    geo = rules.geometry
    board = [-1] * geo.cells
    for player, cells in placed.items():
        for cell in cells:
            assert board[cell] == -1
            board[cell] = player
    free = [c for c in range(geo.cells) if geo.point[c] == -1 and board[c] == -1 and c not in near]
    free.sort(key=lambda c: (-min((_distance(rules, c, x) for x in near), default=0), c))
    spots = iter(free)
    for player in range(geo.players):
        for _ in range(geo.k - board.count(player)):
            board[next(spots)] = player
    return tuple(board)


def _almost_home(rules: Rules, player: int) -> tuple[list[int], Move]:
    """Player's pieces: nine in its goal, the tenth next to the free goal cell; and the move that
    fills the goal."""
    geo = rules.geometry
    goal = sorted(geo.goal(player))
    for hole in goal:
        outside = [c for c in geo.step[hole] if c >= 0 and geo.point[c] == -1]
        if outside:
            return [c for c in goal if c != hole] + [outside[0]], (outside[0], hole)
    raise AssertionError("every goal touches the hexagon")


def _parked_move(rules: Rules, state, keep: frozenset[int] = frozenset()) -> Move:
    """A legal move of a parked piece (from the hexagon) that touches none of the cells ``keep``."""
    geo = rules.geometry
    return next(m for m in state.legal_moves() if geo.point[m[0]] == -1 and m[0] not in keep and m[1] not in keep)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_goal_filled_mid_round_wins_after_the_later_seats_move(engine: str) -> None:
    cells, fill = _almost_home(STAR3, 1)
    state = ENGINES[engine](STAR3, _board(STAR3, {1: cells}, near=tuple(cells)), 1, 100)
    state.play(fill)
    assert not state.is_terminal() and state.to_move == 2 and state.legal_moves()  # seat 2 still moves
    state.play(_parked_move(STAR3, state))
    assert (state.scores(), state.end_reason, state.ply) == ((0.0, 1.0, 0.0), "all_home", 102)
    assert state.legal_moves() == []
    state.undo()
    assert not state.is_terminal() and state.scores() is None


@pytest.mark.parametrize("engine", ENGINES)
def test_two_goals_filled_in_one_round_share_the_win(engine: str) -> None:
    cells1, fill1 = _almost_home(STAR3, 1)
    cells2, fill2 = _almost_home(STAR3, 2)
    board = _board(STAR3, {1: cells1, 2: cells2}, near=tuple(cells1 + cells2))
    state = ENGINES[engine](STAR3, board, 1, 301)
    state.play(fill1)
    assert not state.is_terminal()
    state.play(fill2)
    assert (state.scores(), state.end_reason) == ((0.0, 0.5, 0.5), "all_home")


@pytest.mark.parametrize("engine", ENGINES)
def test_player_zero_filling_waits_for_the_whole_round(engine: str) -> None:
    cells, fill = _almost_home(STAR6, 0)
    state = ENGINES[engine](STAR6, _board(STAR6, {0: cells}, near=tuple(cells)), 0, 60)
    state.play(fill)
    for _ in range(5):
        assert not state.is_terminal()
        state.play(_parked_move(STAR6, state, STAR6.geometry.goal(0)))
    assert (state.scores(), state.end_reason, state.to_move) == ((1.0, 0.0, 0.0, 0.0, 0.0, 0.0), "all_home", 0)


def _blocked_goal(rules: Rules) -> tuple[dict[int, list[int]], int, Move, Move]:
    """Player 0's goal with eight own pieces, player 2's blocker on an edge cell and one free
    edge cell that player 0's tenth piece can step to; returns the placement, the blocker's cell,
    player 0's filling move and the blocker's way out."""
    geo = rules.geometry
    goal = sorted(geo.goal(0))
    edge = [(g, c) for g in goal for c in geo.step[g] if c >= 0 and geo.point[c] == -1]
    (hole, entry), (blocker, exit_) = edge[0], next(e for e in edge if e[0] != edge[0][0] and e[1] != edge[0][1])
    own = [g for g in goal if g not in (hole, blocker)] + [entry]
    return {0: own, 2: [blocker]}, blocker, (entry, hole), (blocker, exit_)


@pytest.mark.parametrize("engine", ENGINES)
def test_anti_block_wins_at_the_end_of_the_round(engine: str) -> None:
    placed, blocker, fill, _ = _blocked_goal(STAR4)
    state = ENGINES[engine](STAR4, _board(STAR4, placed, near=tuple(placed[0] + placed[2])), 0, 40)
    state.play(fill)
    for _ in range(3):
        assert not state.is_terminal()
        state.play(_parked_move(STAR4, state, STAR4.geometry.goal(0)))
    assert state.board[blocker] == 2
    assert (state.scores(), state.end_reason) == ((1.0, 0.0, 0.0, 0.0), "anti_block")


@pytest.mark.parametrize("engine", ENGINES)
def test_an_anti_block_undone_before_the_round_ends_does_not_win(engine: str) -> None:
    placed, _, fill, way_out = _blocked_goal(STAR4)
    state = ENGINES[engine](STAR4, _board(STAR4, placed, near=tuple(placed[0] + placed[2])), 0, 40)
    state.play(fill)
    goal = STAR4.geometry.goal(0) | {way_out[1]}
    state.play(_parked_move(STAR4, state, goal))
    state.play(way_out)  # player 2's blocker leaves player 0's goal: it is no longer full
    state.play(_parked_move(STAR4, state, goal))
    assert not state.is_terminal() and state.to_move == 0


def _shuffle(rules: Rules, board: tuple[int, ...] | None = None) -> list[Move]:
    """One round of steps onto the hexagon, one per player, then one round back: ``board`` (the
    start by default) again."""
    geo = rules.geometry
    board = geo.start_board() if board is None else board
    out: list[Move] = []
    used: set[int] = set()
    for player in range(geo.players):
        move = next((s, e) for s in range(geo.cells) if board[s] == player for e in geo.step[s]
                    if e >= 0 and board[e] == -1 and geo.point[e] == -1 and not {s, e} & used)
        used |= set(move)
        out.append(move)
    return out + [m[::-1] for m in out]


@pytest.mark.parametrize("engine", ENGINES)
def test_third_repetition_draws_and_splits_the_score(engine: str) -> None:
    state = ENGINES[engine](STAR3)
    moves = _shuffle(STAR3) * 2
    for move in moves:
        assert not state.is_terminal()
        state.play(move)
    assert (state.scores(), state.end_reason, state.ply) == ((1 / 3, 1 / 3, 1 / 3), "repetition", 12)
    state.undo()
    assert not state.is_terminal()


@pytest.mark.parametrize("engine", ENGINES)
def test_the_move_limit_draws_and_a_filled_goal_still_wins_there(engine: str) -> None:
    state = ENGINES[engine](STAR3, _board(STAR3, {}), 2, 599)
    state.play(_parked_move(STAR3, state))
    assert (state.scores(), state.end_reason, state.ply) == ((1 / 3, 1 / 3, 1 / 3), "max_plies", 600)
    cells, fill = _almost_home(STAR3, 2)
    state = ENGINES[engine](STAR3, _board(STAR3, {2: cells}, near=tuple(cells)), 2, 599)
    state.play(fill)
    assert (state.scores(), state.end_reason) == ((0.0, 0.0, 1.0), "all_home")


# ---------------------------------------------------------------------------------------------
# Distance adjudication of the move limit (the training-only adjudicate="distance")
# ---------------------------------------------------------------------------------------------


def _advanced(rules: Rules, gains: tuple[int, ...]) -> tuple[int, ...]:
    """The start with each player p's pieces moved forward onto the hexagon (front row first, at
    most 5 rows each) until they have advanced ``gains[p]`` rows in total."""
    geo = rules.geometry
    board = list(geo.start_board())
    for player, gain in enumerate(gains):
        for piece in sorted(geo.home[player], key=lambda c: (-geo.advance(player, c), c)):
            rows = min(gain, 5)
            if rows == 0:
                break
            to = geo.advance(player, piece) + rows
            cell = next(c for c in range(geo.cells) if geo.point[c] == -1 and board[c] == -1
                        and geo.advance(player, c) == to)
            board[piece], board[cell] = -1, player
            gain -= rows
    assert rows_advanced(rules, board) == gains  # what the rule reads
    return tuple(board)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("rules", "gains", "scores"),
    [
        (STAR3_DISTANCE, (10, 6, 0), (1.0, 0.0, 0.0)),       # ahead of all by more than 3: alone
        (STAR3_DISTANCE, (6, 13, 10), (0.0, 0.5, 0.5)),      # 3 behind the leader is not more: shared
        (STAR3_DISTANCE, (9, 11, 8), (1 / 3, 1 / 3, 1 / 3)),  # all within 3 of the leader: a draw
        (STAR3, (10, 6, 0), (1 / 3, 1 / 3, 1 / 3)),          # the preset's own rules: a draw
        (STAR4_DISTANCE, (2, 7, 8, 8), (0.0, 1 / 3, 1 / 3, 1 / 3)),
        (STAR6_DISTANCE, (4, 0, 9, 9, 2, 8), (0.0, 0.0, 0.5, 0.5, 0.0, 0.0)),
        (STAR6_DISTANCE, (5, 5, 5, 5, 5, 5), (1 / 6,) * 6),
    ],
    ids=["leader", "two-share", "all-within", "no-adjudication", "star4-three-share", "star6-tie", "star6-even"],
)
def test_the_move_limit_is_adjudicated_by_distance(
    engine: str, rules: Rules, gains: tuple[int, ...], scores: tuple[float, ...]
) -> None:
    """A position at the move limit (judged as the end of the last round): the players within
    ``distance_margin`` rows of the leader share the point, the leader alone when it is ahead of
    all by more, everyone (a draw) when all are within it."""
    state = ENGINES[engine](rules, _advanced(rules, gains), 0, rules.max_plies)
    assert (state.scores(), state.end_reason) == (scores, "max_plies")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_last_move_counts_and_a_filled_goal_still_wins(engine: str) -> None:
    """Adjudication judges the board after the last move of the game; a goal filled in the last
    round wins as without adjudication."""
    geo = STAR3.geometry
    state = ENGINES[engine](STAR3_DISTANCE, _advanced(STAR3_DISTANCE, (10, 6, 6)), 2, 599)  # player 0 leads by 4
    step = next(m for m in state.legal_moves() if m[1] in geo.step[m[0]] and geo.forward_distance(2, m) == 1)
    state.play(step)  # player 2 comes within 3 rows of player 0
    assert (state.scores(), state.end_reason, state.ply) == ((0.5, 0.0, 0.5), "max_plies", 600)
    state.undo()
    assert not state.is_terminal()
    cells, fill = _almost_home(STAR3, 2)
    state = ENGINES[engine](STAR3_DISTANCE, _board(STAR3, {2: cells}, near=tuple(cells)), 2, 599)
    state.play(fill)
    assert (state.scores(), state.end_reason) == ((0.0, 0.0, 1.0), "all_home")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("rules", [preset("star2").replace(adjudicate="distance"), STAR3_DISTANCE],
                         ids=["star2", "star3"])
def test_a_third_repetition_on_the_last_ply_is_a_draw_not_adjudicated(engine: str, rules: Rules) -> None:
    """The repetition draw comes before the move limit (RULES.md), adjudicated or not: in
    ``State.play`` as in the search."""
    board = _advanced(rules, (10,) + (0,) * (rules.players - 1))
    moves = _shuffle(rules, board) * 2
    state = ENGINES[engine](rules, board, 0, rules.max_plies - len(moves))
    for move in moves:
        assert not state.is_terminal()
        state.play(move)
    draw = (1 / rules.players,) * rules.players
    assert (state.board, state.ply, state.scores(), state.end_reason) == (board, rules.max_plies, draw, "repetition")
    fresh = ENGINES[engine](rules, board, 0, rules.max_plies)  # the same position seen once: adjudicated
    assert (fresh.scores(), fresh.end_reason) == ((1.0,) + (0.0,) * (rules.players - 1), "max_plies")


@pytest.mark.parametrize("rules", [STAR3_DISTANCE, STAR6_DISTANCE], ids=lambda r: r.name)
def test_adjudicated_games_agree_move_by_move(rules: Rules) -> None:
    """Shortened games under distance adjudication played to the move limit in both engines."""
    rules = rules.replace(max_plies=rules.players * 15)  # before the goals fill
    outcomes = set()
    for seed in range(3):
        rng, fast, ref, last = random.Random(seed), _core.State(rules), ReferenceState(rules), {}
        while not fast.is_terminal():
            assert_same(fast, ref)
            move = _pick(rng, rules, fast, last, "forward")
            last[fast.to_move] = move
            fast.play(move)
            ref.play(move)
        assert_same(fast, ref)
        outcomes.add((fast.end_reason, fast.scores()))
    assert all(reason == "max_plies" for reason, _ in outcomes) and len(outcomes) >= 2, outcomes


def _walled_in(rules: Rules, player: int, extra: dict[int, list[int]]) -> tuple[int, ...]:
    """``player``'s pieces packed in its home, and every cell they could step or hop to taken."""
    geo = rules.geometry
    home = geo.home[player]
    wall = set()
    for cell in home:
        for d, near in enumerate(geo.step[cell]):
            if near >= 0 and near not in home:
                wall.add(near)
                if geo.offset(cell, d, 2) >= 0:
                    wall.add(geo.offset(cell, d, 2))
    others = [p for p in range(geo.players) if p != player and p not in extra]
    placed = {player: sorted(home), **extra}
    wall_cells = sorted(wall)
    for i, cell in enumerate(wall_cells):
        placed.setdefault(others[i % len(others)], []).append(cell)
    return _board(rules, placed, near=tuple(wall_cells))


@pytest.mark.parametrize("engine", ENGINES)
def test_no_legal_move_draws_unless_a_goal_is_filled_in_the_round(engine: str) -> None:
    """Player 1, walled in at home mid-round: a draw; with player 0's goal already filled in
    this round, the round cannot be finished and player 0 wins (docs/RULES.md)."""
    board = _walled_in(STAR6, 1, {})
    assert ReferenceState(STAR6.replace(repetition=0), board, 2, 1).legal_moves()  # others can move
    state = ENGINES[engine](STAR6, board, 1, 1)
    assert (state.scores(), state.end_reason) == ((1 / 6,) * 6, "no_move")
    board = _walled_in(STAR6, 1, {0: sorted(STAR6.geometry.goal(0))})
    state = ENGINES[engine](STAR6, board, 1, 1)
    assert (state.scores(), state.end_reason) == ((1.0, 0.0, 0.0, 0.0, 0.0, 0.0), "all_home")


def _chain_through_goal(rules: Rules, player: int) -> tuple[int, int, int, int, int]:
    """Cells ``x, over1, g, over2, y``: a hop from x (outside the player's goal) over over1 lands
    on goal cell g, and a hop from g over over2 lands on y outside the goal."""
    geo = rules.geometry
    goal = geo.goal(player)
    for g in sorted(goal):
        for d1 in range(6):
            x, over1 = geo.offset(g, d1, 2), geo.offset(g, d1, 1)
            for d2 in range(6):
                over2, y = geo.offset(g, d2, 1), geo.offset(g, d2, 2)
                cells = (x, over1, g, over2, y)
                if min(cells) >= 0 and len(set(cells)) == 5 and x not in goal and y not in goal and over1 not in goal:
                    return cells
    raise AssertionError("no chain through the goal")


@pytest.mark.parametrize("engine", ENGINES)
def test_chain_goal_lock_of_a_later_seat(engine: str) -> None:
    """Player 2 of star3 (goal: the north-east point): a chain that enters its goal stops there,
    and a piece in its goal lands only on goal cells; without the lock both moves exist."""
    x, over1, g, over2, y = _chain_through_goal(STAR3, 2)
    board = _board(STAR3, {2: [x], 0: [over1, over2]}, near=(x, over1, g, over2, y))
    unlocked = STAR3.replace(goal_lock=False, name="star3-unlocked")
    state = ENGINES[engine](STAR3, board, 2, 2)
    assert (x, g) in state.legal_moves() and (x, y) not in state.legal_moves()
    assert (x, y) in ENGINES[engine](unlocked, board, 2, 2).legal_moves()
    inside = _board(STAR3, {2: [g], 0: [over2]}, near=(g, over2, y))
    assert (g, y) not in ENGINES[engine](STAR3, inside, 2, 2).legal_moves()
    assert (g, y) in ENGINES[engine](unlocked, inside, 2, 2).legal_moves()


# ---------------------------------------------------------------------------------------------
# The terminal game and the engine protocol
# ---------------------------------------------------------------------------------------------


def test_a_whole_star3_game_in_the_terminal() -> None:
    """A person as player 1 types greedy moves; two greedy computers play seats 0 and 2."""
    out = io.StringIO()
    greedy = GreedyPlayer(STAR3, 0)
    typed: list[Move] = []

    def replay() -> _core.State:
        """The game the terminal showed: the computers' moves and the person's, in turn."""
        shown = iter(line.split()[2] for line in out.getvalue().splitlines() if line.startswith("computer plays "))
        mine, state = iter(typed), _core.State(STAR3)
        while not state.is_terminal():
            try:
                move = next(mine) if state.to_move == 1 else tuple(int(c) for c in next(shown).split("-"))
            except StopIteration:
                break
            state.play((move[0], move[-1]))
        return state

    def read(prompt: str) -> str:
        state = replay()
        assert state.to_move == 1
        typed.append(greedy.select(state))
        return f"{typed[-1][0]}-{typed[-1][1]}"

    scores = play_terminal(STAR3, "greedy", human_side=1, seed=4, read=read, out=out)
    text = out.getvalue()
    assert "you play o (south-east point, player 1 of 3)" in text and "to move (2)" in text
    assert isinstance(scores, tuple) and sum(scores) == pytest.approx(1.0)
    assert replay().scores() == scores
    assert any(end in text for end in ("You win!", " win (", "You share the win", "The game is a draw"))


def test_a_person_who_resigns_scores_nothing() -> None:
    out = io.StringIO()
    resigned = play_terminal(STAR4, "random", human_side=2, seed=1, read=lambda p: "quit", out=out)
    assert resigned == (1 / 3, 1 / 3, 0.0, 1 / 3)
    with pytest.raises(ValueError, match=r"seats players 0\.\.3"):
        play_terminal(STAR4, "random", human_side=4, read=lambda p: "quit", out=out)


def test_the_engine_protocol_names_the_seats_of_its_game() -> None:
    engine = CCPEngine(STAR6, "greedy", seed=0)
    cells = format_compact121(STAR6, start_position(STAR6)).split()[0]
    assert engine.handle(f"position cells {cells} player 6 ply 0") == [
        "info string error player '6' is unknown; valid: 0 or 1 or 2 or 3 or 4 or 5"
    ]
    three = CCPEngine(STAR3, "greedy", seed=0)
    assert "but star3 has 3 players" in three.handle(f"position cells {cells} player 0 ply 0")[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["match", "--preset", "star4", "--a", "greedy", "--b", "random"], "star4 seats 4 players, 2 SPECs were given"),
        (["play", "--preset", "star3", "--side", "3"], "seats players 0..2"),
    ],
)
def test_commands_refuse_what_they_cannot_play_in_one_line(args: list[str], words: str) -> None:
    proc = run(*args, check=False)
    assert proc.returncode == 2 and words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_perft_command_counts_three_players() -> None:
    assert run_json("perft", "--preset", "star3", "--depth", "3") == {"preset": "star3", "perft": [14, 196, 2744]}
