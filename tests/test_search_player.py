"""Search players behind the Player interface: specs, thinking, limits, history, networks."""

from __future__ import annotations

import numpy as np
import pytest

from ccengine import PieceTracker, encoding_for, new_state, parse_position, preset
from learner.players import make_player
from ccengine.players import PlayerSpecError
from ccengine.search_player import game_piece_history
from evaluator.arena import play_match


def random_game(rules, seed, plies):
    rng = np.random.default_rng(seed)
    state = new_state(rules)
    moves = []
    for _ in range(plies):
        if state.is_terminal():
            break
        legal = state.legal_moves()
        move = legal[int(rng.integers(len(legal)))]
        state.play(move)
        moves.append(move)
    return state, moves


@pytest.mark.parametrize("spec", ["mcts:sims=32", "mcts-rollout:sims=64", "mcts-rollout:sims=64,rollout=random",
                                  "mcts-rollout:sims=64,solver=1", "mcts-rollout:sims=64,opponent=greedy",
                                  "mcts-rollout:sims=64,opponent=auto"])
def test_search_players_play_legal_moves_and_explain_them(spec):
    rules = preset("cc49")
    state, _ = random_game(rules, 1, 12)
    player = make_player(spec, rules, seed=3)
    value, shares = player.analyze(state)
    assert -1.0 <= value <= 1.0
    assert abs(sum(p for _, p in shares) - 1.0) < 1e-6
    assert {m for m, _ in shares} <= set(state.legal_moves())
    move = player.select(state)
    share = dict(shares)
    assert share[move] == max(share.values())  # select reuses the analysed search: a most visited move
    assert move in state.legal_moves()


def test_nodes_and_movetime_limits():
    rules = preset("small-5-6")
    player = make_player("mcts-rollout:sims=400", rules, seed=0)
    state = new_state(rules)
    assert player.think(state, nodes=50).simulations == 50
    assert player.think(state).simulations == 400
    timed = player.think(state, movetime_ms=50)
    assert timed.simulations >= 64  # at least one chunk, however slow the machine


def test_stop_ends_a_search_between_chunks_and_is_not_cached():
    rules = preset("small-5-6")
    player = make_player("mcts-rollout:sims=400", rules, seed=0)
    state = new_state(rules)
    asked = []

    def stop() -> bool:
        asked.append(True)
        return len(asked) >= 2  # stop at the second question: two chunks of 64 searched

    cut = player.think(state, nodes=100_000, stop=stop)
    assert cut.simulations == 128 and len(asked) == 2
    full = player.think(state, nodes=100)  # an unstopped search with the same limits runs afresh
    assert full.simulations == 100
    assert player.think(state, nodes=100, stop=lambda: False) is full  # and is cached
    stopped_at_once = player.think(state, movetime_ms=86_400_000, stop=lambda: True)
    assert stopped_at_once.simulations == 64  # a day's movetime, stopped after the first chunk


@pytest.mark.parametrize("spec", ["mcts:sims=64,reuse=1", "mcts-rollout:sims=64,reuse=1"])
def test_reuse_searches_on_from_the_subtree_of_the_moves_played(spec):
    rules = preset("small-5-6")
    player = make_player(spec, rules, seed=0)
    state = new_state(rules)
    first = player.think(state)
    assert first.simulations == 64
    replies, visits, *_ = player._search.forest.node_edges(0, [first.move])  # the reply's subtrees
    reply = tuple(int(x) for x in replies[int(np.argmax(visits))])
    kept = int(visits.max())
    state.play(first.move)
    state.play(reply)
    second = player.think(state)
    assert second.simulations == 64 + kept and kept > 0  # the subtree two plies on, and 64 more
    # a position that does not follow the last search (no history back to it) starts afresh
    assert player.think(new_state(rules)).simulations == 64
    plain = make_player(spec.replace(",reuse=1", ""), rules, seed=0)
    plain.think(new_state(rules))
    assert plain.think(state).simulations == 64


def test_rollout_search_takes_a_win_in_one():
    rules = preset("small-4-3")
    pos = parse_position(rules, "...o/..xx/ox../o... x")  # (1,2) -> (0,2) fills the goal
    state = new_state(rules, pos)
    player = make_player("mcts-rollout:sims=200", rules, seed=0)
    assert player.select(state) == (6, 2)


def test_game_history_tracks_piece_ids_like_a_record():
    rules = preset("cc49")
    state, moves = random_game(rules, 7, 30)
    tracker = PieceTracker(rules)
    for move in moves:
        tracker.play(move)
    expected = tracker.piece_lists(3)
    assert np.array_equal(game_piece_history(rules, state, 3), expected)


def test_same_seed_same_moves():
    rules = preset("small-5-6")
    result = [play_match(rules, "mcts-rollout:sims=60", "greedy", games=4, seed=11) for _ in range(2)]
    assert result[0].a_results == result[1].a_results


def test_bad_specs_are_one_line_errors():
    rules = preset("cc49")
    for spec, message in [
        ("mcts:sims=0", "positive"),
        ("mcts-rollout:rollout=clever", "valid"),
        ("mcts-rollout:opponent=clever", "valid: any"),
        ("mcts-rollout:solver=1,opponent=greedy", "cannot be combined"),
        ("mcts:model=/no/such/file.pt", "no such file"),
        ("mcts:model=shipped,sims=10", "shipped"),
    ]:
        with pytest.raises(PlayerSpecError, match=message):
            make_player(spec, preset("cc81") if "shipped" in spec else rules, seed=0)


# -- with a network ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_nets(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from learner.model import NetConfig, PolicyValueNet, save_net

    torch.manual_seed(0)
    rules = preset("cc49")
    paths = {}
    for name in ("paper", "general"):
        enc = encoding_for(rules, name)
        net = PolicyValueNet(NetConfig.for_rules(rules, enc.in_planes, "tiny"))
        path = tmp_path_factory.mktemp("nets") / f"{name}.pt"
        save_net(net, path, input={"encoding": name, "history": enc.history, "preset": rules.name})
        paths[name] = path
    return paths


@pytest.mark.parametrize("encoding", ["paper", "general"])
def test_network_player_in_a_match(tiny_nets, encoding):
    rules = preset("cc49")
    result = play_match(rules, f"mcts:model={tiny_nets[encoding]},sims=16", "random", games=2, seed=0)
    assert result.a_wins + result.b_wins + result.draws == 2


@pytest.mark.parametrize("encoding", ["paper", "general"])
def test_search_indices_reach_the_network_in_the_encodings_frame(tiny_nets, encoding):
    """The search hands out absolute indices; the network must get the encoding's own (rotated
    for player 1 under ``general``), the same frame the training targets use."""
    from learner.network_evaluator import load_network_evaluator

    rules = preset("cc49")
    evaluator = load_network_evaluator(rules, tiny_nets[encoding])
    for plies in (8, 9):  # player 0, then player 1 to move
        state, moves = random_game(rules, 5, plies)
        tracker = PieceTracker(rules)
        for move in moves:
            tracker.play(move)
        legal = np.array(state.legal_moves())
        absolute = tracker.move_indices(legal)  # what the search hands out
        framed = evaluator.network_frame(absolute[None, :], np.array([state.to_move]))[0]
        expected = evaluator.encoding.move_indices(tracker.current, legal, state.to_move)
        assert np.array_equal(framed, expected)


def test_network_player_searches_with_the_c_its_model_was_trained_with(tiny_nets, tmp_path):
    from learner.model import load_net, save_net

    rules = preset("cc49")
    assert make_player(f"mcts:model={tiny_nets['general']}", rules, seed=0).config.c_puct == 3.5  # file names none
    trained = tmp_path / "c1.pt"
    save_net(load_net(tiny_nets["general"]), trained, input={"encoding": "general", "history": 3, "c_puct": 1.0})
    assert make_player(f"mcts:model={trained}", rules, seed=0).config.c_puct == 1.0
    assert make_player(f"mcts:model={trained},c=2", rules, seed=0).config.c_puct == 2.0  # asked for


@pytest.mark.parametrize(("name", "c_puct"), [("cc49", 1.0), ("paper", 1.0), ("star2", 1.0)])
def test_the_shipped_models_play_out_of_the_box(name, c_puct):
    torch = pytest.importorskip("torch")
    from learner.model_files import shipped_model_path

    rules = preset(name)
    data = torch.load(shipped_model_path(rules), map_location="cpu", weights_only=True)
    assert data["input"]["preset"] == name, f"the file shipped as {name}.pt was trained on another game"
    assert make_player("mcts:model=shipped", rules, seed=0).config.c_puct == c_puct  # as it was trained
    result = play_match(rules, "mcts:model=shipped,sims=8", "greedy", games=2, seed=0)
    assert result.games == 2
