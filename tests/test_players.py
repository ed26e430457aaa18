"""Baseline players (RULES.md "Forward distance and the greedy players") and the SPEC registry."""

from collections import Counter

import numpy as np
import pytest

from ccengine import ReferenceState, parse_position, preset
from ccengine.players import (
    GreedyPlayer,
    Player,
    PlayerKind,
    PlayerRegistry,
    PlayerSpecError,
    RandomPlayer,
    StochasticGreedyPlayer,
    greedy_candidates,
)
from learner.players import PLAYERS, make_player, player_kinds

CC49 = preset("cc49")
N = CC49.n


def cell(r, c):
    return r * N + c


def psi(player, move):
    (s, e), diag = move, CC49.geometry.diag
    return (diag[s] - diag[e]) * (1 if player == 0 else -1)


class FakeState:
    """Just what a player reads: the side to move and the legal moves (in the engines' order)."""

    def __init__(self, to_move, moves):
        self.to_move = to_move
        self._moves = sorted(moves)

    def legal_moves(self):
        return list(self._moves)


def random_positions(count, seed=0):
    """Mid-game reference states of random cc49 games."""
    rng = np.random.default_rng(seed)
    states = []
    while len(states) < count:
        st = ReferenceState(CC49)
        for _ in range(int(rng.integers(8, 50))):
            if st.is_terminal():
                break
            moves = st.legal_moves()
            st.play(moves[int(rng.integers(len(moves)))])
        if not st.is_terminal():
            states.append(st)
    return states


# --- deterministic greedy -----------------------------------------------------------------


def test_greedy_plays_a_move_of_largest_psi_from_the_last_checker_on_real_positions():
    for i, st in enumerate(random_positions(25)):
        moves = st.legal_moves()
        move = GreedyPlayer(CC49, seed=i).select(st)
        assert move in moves
        best = max(psi(st.to_move, m) for m in moves)
        assert psi(st.to_move, move) == best
        diag = CC49.geometry.diag
        tied_starts = [diag[s] for s, e in moves if psi(st.to_move, (s, e)) == best]
        # Least advanced: player 0 the largest r - c, player 1 the smallest.
        want = max(tied_starts) if st.to_move == 0 else min(tied_starts)
        assert diag[move[0]] == want


@pytest.mark.parametrize("player", [0, 1])
def test_greedy_tie_break_keeps_the_least_advanced_start_then_uniform(player):
    # Player 0's view: four moves of psi 2, two from a start on row r - c = 3 and two from row
    # r - c = 1, and a psi 1 move from further back (largest psi comes first).
    back, front, far = cell(5, 2), cell(2, 1), cell(6, 0)
    moves = [(back, cell(3, 2)), (back, cell(4, 3)), (front, cell(1, 2)), (front, cell(2, 3)), (far, cell(5, 0))]
    if player == 1:  # swapping r and c negates r - c: the same situation seen by player 1
        moves = [(cell(s % N, s // N), cell(e % N, e // N)) for s, e in moves]
        back = cell(2, 5)
    assert sorted(psi(player, m) for m in moves) == [1, 2, 2, 2, 2]
    state = FakeState(player, moves)
    candidates = greedy_candidates(CC49, player, state.legal_moves())
    assert sorted(candidates) == sorted(m for m in moves if m[0] == back and psi(player, m) == 2)
    assert len(candidates) == 2
    picks = Counter(GreedyPlayer(CC49, seed=seed).select(state) for seed in range(200))
    assert set(picks) == set(candidates)  # both tied moves get played ...
    assert min(picks.values()) > 60  # ... about equally often


def test_greedy_when_every_move_goes_backward_plays_the_least_backward():
    s = cell(1, 5)  # r - c = -4: player 0's piece deep in its goal
    moves = [(s, cell(2, 5)), (s, cell(3, 5)), (s, cell(1, 4)), (s, cell(3, 4))]  # psi -1, -2, -1, -3
    picks = {GreedyPlayer(CC49, seed=seed).select(FakeState(0, moves)) for seed in range(50)}
    assert picks == {(s, cell(2, 5)), (s, cell(1, 4))}


def test_players_pass_when_pass_is_the_only_move():
    for cls in (RandomPlayer, GreedyPlayer, StochasticGreedyPlayer):
        assert cls(CC49, seed=0).select(FakeState(1, [(-1, -1)])) == (-1, -1)


@pytest.mark.parametrize("name", ["cc49", "paper", "cc81", "small-4-3", "small-5-1", "small-6-6"])
def test_the_c_greedy_rule_picks_exactly_the_python_candidates(name):
    # The playouts and opponent=greedy use the C twin of greedy_candidates (_playout._greedy_pick):
    # on every position of a few games, its picks over many tie-break seeds are the candidates.
    from ccengine._core import State
    from ccengine._playout import greedy_pick

    rules = preset(name)
    rng = np.random.default_rng(7)
    positions = ties = 0
    for _ in range(4):
        state = State(rules)
        while not state.is_terminal() and state.ply < 400:
            moves = state.legal_moves()
            want = greedy_candidates(rules, state.to_move, moves)
            picks = {greedy_pick(state, seed) for seed in range(20 * len(want) + 20)}
            assert picks == set(want), (name, state.ply, tuple(state.board))
            positions += 1
            ties += len(want) > 1
            # Mostly greedy, so that games reach their endings (backward moves, passes).
            state.play(want[0] if rng.random() < 0.7 else moves[int(rng.integers(len(moves)))])
    assert positions > 40 and ties > 0
    with pytest.raises(ValueError, match="over"):
        greedy_pick(state, 0)


# --- stochastic greedy --------------------------------------------------------------------


def test_stochastic_greedy_draws_forward_moves_in_proportion_to_psi():
    s = cell(5, 1)  # r - c = 4
    moves = [(s, cell(4, 1)), (s, cell(3, 1)), (s, cell(2, 1)), (s, cell(4, 0)), (s, cell(6, 1))]  # 1, 2, 3, 0, -1
    player = StochasticGreedyPlayer(CC49, seed=12345)
    draws = 60_000
    counts = Counter(player.select(FakeState(0, moves)) for _ in range(draws))
    assert set(counts) == set(moves[:3])  # never psi <= 0 while a forward move exists
    for move, weight in zip(moves[:3], (1, 2, 3)):
        expected = draws * weight / 6
        sigma = (draws * (weight / 6) * (1 - weight / 6)) ** 0.5
        assert abs(counts[move] - expected) < 5 * sigma


def test_stochastic_greedy_without_forward_moves_is_uniform():
    s = cell(1, 5)
    moves = [(s, cell(2, 5)), (s, cell(1, 4)), (s, cell(3, 5))]  # psi -1, -1, -2 (player 0)
    player = StochasticGreedyPlayer(CC49, seed=7)
    counts = Counter(player.select(FakeState(0, moves)) for _ in range(6000))
    assert set(counts) == set(moves)
    assert all(abs(n - 2000) < 5 * (6000 * (1 / 3) * (2 / 3)) ** 0.5 for n in counts.values())


def test_stochastic_greedy_for_player_one_uses_its_own_direction():
    s = cell(1, 5)  # r - c = -4: for player 1, moving to larger r - c is forward
    moves = [(s, cell(2, 5)), (s, cell(1, 6)), (s, cell(0, 5))]  # psi for player 1: +1, -1, -1
    player = StochasticGreedyPlayer(CC49, seed=3)
    assert {player.select(FakeState(1, moves)) for _ in range(200)} == {(s, cell(2, 5))}


# --- seeds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [RandomPlayer, GreedyPlayer, StochasticGreedyPlayer])
def test_same_seed_same_moves_and_reset_restarts_the_stream(cls):
    states = random_positions(30, seed=5)
    one, two = cls(CC49, seed=99), cls(CC49, seed=99)
    first = [one.select(st) for st in states]
    assert [two.select(st) for st in states] == first
    player = cls(CC49, seed=np.random.SeedSequence(99))  # the same stream from a SeedSequence
    assert [player.select(st) for st in states] == first
    player.reset(99)
    assert [player.select(st) for st in states] == first
    if cls is not GreedyPlayer:  # greedy uses its stream only on ties
        other = cls(CC49, seed=100)
        assert [other.select(st) for st in states] != first


def test_select_does_not_change_the_state():
    st = random_positions(1, seed=9)[0]
    before = (st.board, st.to_move, st.ply)
    for cls in (RandomPlayer, GreedyPlayer, StochasticGreedyPlayer):
        cls(CC49, seed=0).select(st)
    assert (st.board, st.to_move, st.ply) == before


def test_greedy_on_a_text_position():
    # x on (4, 0) can step to (4, 1) (psi 1) or hop over o on (3, 0) to (2, 0) (psi 2).
    rules = preset("small-5-1")
    pos = parse_position(rules, "...../...../...../o..../x.... x 0")
    st = ReferenceState(rules, pos.board, pos.to_move, pos.ply)
    move = GreedyPlayer(rules, seed=0).select(st)
    assert move == (20, 10)


# --- registry -------------------------------------------------------------------------------


def test_builtin_specs_build_players_that_follow_the_protocol():
    for spec, cls in (("random", RandomPlayer), ("greedy", GreedyPlayer), ("greedy-stochastic", StochasticGreedyPlayer)):
        player = make_player(spec, CC49, seed=1)
        assert isinstance(player, cls)
        assert isinstance(player, Player)
        assert player.name == spec
    assert {"random", "greedy", "greedy-stochastic"} <= set(player_kinds())


def test_unknown_player_or_option_names_what_is_valid():
    with pytest.raises(PlayerSpecError, match=r"unknown player 'gredy'.*valid: .*greedy"):
        make_player("gredy", CC49)
    with pytest.raises(PlayerSpecError, match=r"unknown option 'sims' for player 'greedy'"):
        make_player("greedy:sims=3", CC49)


def test_a_registry_parses_a_spec_once_and_builds_its_player():
    made = []

    def factory(rules, seed, *, sims=10, model=None):
        made.append(dict(sims=sims, model=model))
        return RandomPlayer(rules, seed)

    plugins = PlayerRegistry([PlayerKind("test-plugin", factory, options={"sims": int, "model": str},
                                         required=frozenset({"model"}))])
    spec = plugins.parse("test-plugin:model=best.pt, sims=200")
    assert spec.kind.name == "test-plugin" and spec.options == {"model": "best.pt", "sims": 200} and not made
    player = spec.build(CC49, seed=0)
    assert made == [{"sims": 200, "model": "best.pt"}]
    assert player.name == "test-plugin:model=best.pt, sims=200"
    with pytest.raises(PlayerSpecError, match="sims='many'"):
        plugins.make("test-plugin:model=x,sims=many", CC49)
    with pytest.raises(PlayerSpecError, match="needs option.*model"):
        plugins.make("test-plugin:sims=3", CC49)
    with pytest.raises(PlayerSpecError, match="key=value"):
        plugins.make("test-plugin:model", CC49)
    with pytest.raises(PlayerSpecError, match="twice"):
        plugins.make("test-plugin:model=a,model=b", CC49)
    with pytest.raises(ValueError, match="player names repeat"):
        PlayerRegistry([PlayerKind("x", factory), PlayerKind("x", factory)])
    with pytest.raises(ValueError, match="required option"):
        PlayerKind("y", factory, required=frozenset({"model"}))


def test_every_player_kind_is_listed_in_one_registry():
    """The registry is written out in one place (learner.players): no import fills it by side effect."""
    assert list(player_kinds()) == ["random", "greedy", "greedy-stochastic", "alphabeta", "mcts-rollout", "mcts",
                                    "dqn"]
    assert player_kinds() == PLAYERS.kinds
