"""One conformance suite, run over every preset: what each board must do, checked the same way.

Every test function below is one property, parametrized over :data:`PRESETS` (every fixed preset
of ``ccengine.rules`` and a few members of the ``small-N-k`` family):

- text: positions (the rhombus's rows, the star's COMPACT121) and moves (cell indices, the
  human notation, the protocol's witness paths) survive a write and a read; bad position text
  is refused with one short line;
- perft: the compiled engine counts what the pure-Python reference counts, from the start and
  from positions of a played game, and what ``ccengine.perft_data`` and docs/perft.json record;
- symmetry: the reflection about the mover's axis maps legal moves to legal moves, results to
  results (seats permuted where it moves them), and the encoded planes and policy the way the
  training window reflects them (star4 has no reflection that keeps its seating);
- encodings: the planes and policy of every encoding the board allows, a tiny network on them,
  and the policy index of every legal move of a game, both ways;
- players: a whole game by every player kind a SPEC names, in every seat, ending in a result
  vector that sums to 1;
- records: a game record made by a real worker survives the wire format and names legal moves;
- the engine protocol: a game's first moves through ``hopzero engine``'s protocol handler;
- web geometry: one distinct point per cell, neighbours one step apart, a home and a goal per seat.

The suite reaches the rest of hopzero only through the helpers in the first section, so that a
change of a public API (a renamed runner, a record field) is mended in one place.
"""

from __future__ import annotations

import json
import math
import random
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch_helpers import one_thread  # noqa: F401 (autouse fixture)

from ccengine import PASS, PRESET_NAMES, Position, Rules, RulesError, preset
from ccengine.encoding import (
    ENCODINGS,
    PieceTracker,
    encoding_for,
    index_moves,
    plane_cells,
    plane_side,
    policy_indices,
    seat_frame,
)
from ccengine.engines import new_state
from ccengine.notation import (
    NotationError,
    format_compact121,
    format_position,
    parse_compact121,
    parse_move,
    parse_move_path,
    parse_position,
    start_position,
)
from ccengine.perft_data import STAR_START_PERFT, START_PERFT
from ccengine.players import greedy_candidates
from ccengine.reference import move_path
from ccengine.reference import perft as reference_perft
from ccengine.render import cell_name, format_move, parse_cell, parse_human_move
from learner.players import make_player, player_kinds
from ccengine.symmetry import (
    reflect_moves,
    reflect_pieces,
    reflect_planes,
    reflect_policy,
    reflect_position,
    reflect_table,
    seat_reflection,
)

Move = tuple[int, int]

# =============================================================================================
# Helpers: everything the suite takes from the rest of hopzero
# =============================================================================================

#: The members of the ``small-N-k`` family the suite plays (the family has nine; these span its
#: sides and piece counts: one piece, three, six).
SMALL_MEMBERS = ("small-4-1", "small-5-3", "small-6-6")


def conformance_presets() -> list[str]:
    """Every fixed preset name the code lists, with the ``small-N-k`` family standing for
    :data:`SMALL_MEMBERS` (a name :func:`preset` refuses is a family pattern)."""
    names: list[str] = []
    for name in PRESET_NAMES:
        try:
            preset(name)
        except RulesError:
            names += [member for member in SMALL_MEMBERS if member not in names]
        else:
            names.append(name)
    return names


PRESETS = conformance_presets()

#: Longest game the suite plays on the star, in rounds (each player moves once a round): the
#: star's games last hundreds of plies, and what is checked does not need the whole of them.
STAR_ROUNDS = 30


def short_rules(rules: Rules) -> Rules:
    """The rules with the move limit lowered on the star to :data:`STAR_ROUNDS` rounds."""
    if not rules.is_star:
        return rules
    return rules.replace(max_plies=min(rules.max_plies, STAR_ROUNDS * rules.players))


def game_state(rules: Rules, position: Position | None = None) -> Any:
    """A state of the compiled engine (the start when ``position`` is None)."""
    return new_state(rules, position)


def reference_state(rules: Rules, position: Position | None = None) -> Any:
    """A state of the pure-Python reference engine."""
    return new_state(rules, position, engine="reference")


def position_of(state: Any) -> Position:
    """A state's position (board, side to move, ply), without its history."""
    return Position(tuple(state.board), state.to_move, state.ply)


def result_vector(state: Any) -> tuple[float, ...] | None:
    """The result of a finished game, one share per seat (None while it goes on)."""
    return state.scores()


def game_moves(rules: Rules, seed: int) -> list[Move]:
    """The moves of a whole game of mostly greedy moves (so that pieces reach the goals and the
    goal rules act) and some random ones."""
    rng = random.Random(seed)
    state = game_state(rules)
    moves: list[Move] = []
    while not state.is_terminal():
        legal = state.legal_moves()
        if rng.random() < 0.7:
            legal = greedy_candidates(rules, state.to_move, legal)
        move = legal[rng.randrange(len(legal))]
        state.play(move)
        moves.append(move)
    return moves


def game_positions(rules: Rules, seed: int) -> list[Position]:
    """Every position of a :func:`game_moves` game, the start and the end included."""
    state = game_state(rules)
    positions = [position_of(state)]
    for move in game_moves(rules, seed):
        state.play(move)
        positions.append(position_of(state))
    return positions


def random_position(rules: Rules, rng: random.Random) -> Position:
    """Each player's pieces on distinct cells drawn from the whole board, any side, any ply."""
    cells = rng.sample(range(rules.cells), rules.players * rules.k)
    board = [-1] * rules.cells
    for i, cell in enumerate(cells):
        board[cell] = i // rules.k
    return Position(tuple(board), rng.randrange(rules.players), rng.randrange(rules.max_plies))


def position_text(rules: Rules, position: Position) -> str:
    """A position as the board's text (rows on the rhombus, COMPACT121 on the star)."""
    return format_position(rules, position)


def read_position_text(rules: Rules, text: str) -> Position:
    """The reader of :func:`position_text` (raises ``NotationError``)."""
    return parse_position(rules, text)


def recorded_start_perft(name: str) -> tuple[int, ...] | None:
    """perft(1..D) of a preset's start as ``ccengine.perft_data`` records it (None: not recorded)."""
    return {**START_PERFT, **STAR_START_PERFT}.get(name)


DOCS_PERFT = Path(__file__).resolve().parents[1] / "docs" / "perft.json"


@cache
def documented_perft() -> dict[str, Any]:
    """docs/perft.json: per preset, both engines' perft of the start (empty when the file is absent)."""
    return json.loads(DOCS_PERFT.read_text()) if DOCS_PERFT.exists() else {}


def allowed_encodings(rules: Rules) -> list[str]:
    """The encodings the board has (``encoding_for`` refuses the others)."""
    allowed = []
    for name in ENCODINGS:
        try:
            encoding_for(rules, name)
        except ValueError:
            continue
        allowed.append(name)
    return allowed


def window_reflection(rules: Rules, planes: np.ndarray, history: int) -> np.ndarray:
    """Reflect one position's planes the way the training window augments a sample: the seats'
    occupancy planes are permuted by ``seat_reflection`` first (for two players no seat moves)."""
    planes = planes.copy()
    perm = seat_reflection(rules)
    assert perm is not None, f"{rules.name} has no reflection that keeps its seating"
    players = rules.players
    order = np.arange(planes.shape[0])
    order[: players * history] = (np.arange(history)[:, None] * players + perm[None, :]).reshape(-1)
    return reflect_planes(planes[order][None], rules)[0]


def tiny_network(rules: Rules, encoding: str) -> Any:
    """An untrained ``tiny`` network for the board and encoding (seeded: the same weights each time)."""
    from learner.model import NetConfig, PolicyValueNet

    torch.manual_seed(0)
    return PolicyValueNet(NetConfig.for_rules(rules, encoding_for(rules, encoding).in_planes, "tiny")).eval()


def save_tiny_network(rules: Rules, encoding: str, algo: str, path: Path) -> Path:
    """:func:`tiny_network` as a network file that ``mcts:model=`` (``algo`` ``alphazero``) or
    ``dqn:model=`` (``algo`` ``dqn``) plays."""
    from learner.model import save_net

    enc = encoding_for(rules, encoding)
    save_net(tiny_network(rules, encoding), path, input={"encoding": encoding, "history": enc.history, "algo": algo})
    return path


def project_player_kinds() -> list[str]:
    """The player kinds a SPEC can name (``learner.players`` lists every one)."""
    return sorted(player_kinds())


#: The SPECs that play each player kind in the suite: cheap settings (depth 1, a few
#: simulations). ``{net:E}`` / ``{dqn:E}`` stand for a tiny network file of encoding ``E``
#: (a policy-value network for ``mcts``, a Q network for ``dqn``), one per encoding the board has.
SPECS_BY_KIND: dict[str, tuple[str, ...]] = {
    "random": ("random",),
    "greedy": ("greedy",),
    "greedy-stochastic": ("greedy-stochastic",),
    "alphabeta": ("alphabeta:depth=1",),
    "mcts-rollout": ("mcts-rollout:sims=4",),
    "mcts": ("mcts:sims=4", "mcts:model={net:paper},sims=4", "mcts:model={net:general},sims=4"),
    "dqn": ("dqn:model={dqn:paper}", "dqn:model={dqn:general}"),
}


def spec_templates() -> list[str]:
    """Every SPEC template of :data:`SPECS_BY_KIND`."""
    return [spec for specs in SPECS_BY_KIND.values() for spec in specs]


def spec_encoding(template: str) -> str | None:
    """The encoding a template's network file has (None: no network)."""
    for tag in ("net", "dqn"):
        for name in ENCODINGS:
            if f"{{{tag}:{name}}}" in template:
                return name
    return None


def build_players(template: str, rules: Rules, seed: int, folder: Path) -> list[Any]:
    """One player of a SPEC template per seat (network files written into ``folder``)."""
    spec = template
    for tag, algo in (("net", "alphazero"), ("dqn", "dqn")):
        for name in ENCODINGS:
            key = f"{{{tag}:{name}}}"
            if key in spec:
                path = save_tiny_network(rules, name, algo, folder / f"{rules.name}-{algo}-{name}.pt")
                spec = spec.replace(key, str(path))
    return [make_player(spec, rules, seed + seat) for seat in range(rules.players)]


def play_game(rules: Rules, players: list[Any], seed: int) -> Any:
    """A game between ``players`` (one per seat) from the start to its end; every move is checked
    legal and every ``select`` to leave the state as it was. Returns the finished state."""
    for seat, player in enumerate(players):
        player.reset(seed + seat)
    state = game_state(rules)
    while not state.is_terminal():
        before = (position_of(state), state.hash)
        move = tuple(players[state.to_move].select(state))
        assert (position_of(state), state.hash) == before, f"{players[state.to_move].name} changed the state"
        assert move in state.legal_moves(), f"{players[state.to_move].name} played {move} at ply {state.ply}"
        state.play(move)
    return state


def worker_record(rules: Rules, seed: int) -> Any:
    """A game record made by the stage-1 worker (greedy self-play), the first decisive game of
    a few seeds."""
    from actors.heuristic import HeuristicWorker

    worker = HeuristicWorker(rules, run_id="conformance", config_hash="0" * 16, actor="conformance-0", seed=seed,
                             keep_fraction=0.5, return_unkept=True)
    for game in range(40):
        record = worker.play_game("random_moves" if game % 2 else "normal", seed + game)
        if record is not None:
            return record
    raise AssertionError(f"no decisive greedy game on {rules.name} in 40 tries")


def record_round_trip(record: Any, codec: str) -> Any:
    """A record written in the wire format and read back (fully checked on the way in)."""
    from learner.records import decode_record, encode_record

    return decode_record(encode_record(record, codec=codec))


def record_rules(record: Any) -> Rules:
    """The rules a record says its game was played under."""
    return Rules.from_dict(record.rules)


def record_result(record: Any, players: int) -> tuple[float, ...]:
    """A record's game result as a vector by seat."""
    assert len(record.scores) == players
    return tuple(float(x) for x in record.scores)


def protocol_engine(rules: Rules, spec: str, seed: int) -> Any:
    """The engine protocol's handler, as ``hopzero engine --preset P --player SPEC`` runs it."""
    from hopzero.ccp import CCPEngine

    return CCPEngine(rules, spec, seed=seed)


def engine_command_rules(name: str) -> Rules:
    """The rules ``hopzero engine --preset NAME`` plays (its command line read as the CLI reads it)."""
    from hopzero.cli import build_parser

    return build_parser().parse_args(["engine", "--preset", name]).preset


def protocol_cells(position: Position) -> str:
    """A board as the protocol's ``<CELLS>``: ``.`` or the owner's digit, cell by cell."""
    return "".join("." if v < 0 else str(v) for v in position.board)


def cells_command(position: Position) -> str:
    """The protocol's ``position cells <CELLS> player <P> ply <N>`` of a position."""
    return f"position cells {protocol_cells(position)} player {position.to_move} ply {position.ply}"


def web_points(rules: Rules) -> list[tuple[float, float]]:
    """Where the browser draws each cell (``hopzero.web.geometry.cell_points``)."""
    from hopzero.web.geometry import cell_points

    return cell_points(rules)


def home_cells(rules: Rules, seat: int) -> frozenset[int]:
    """The cells where ``seat`` starts."""
    return frozenset(rules.geometry.home[seat])


def goal_cells(rules: Rules, seat: int) -> frozenset[int]:
    """The cells ``seat`` must fill."""
    return frozenset(rules.geometry.goal(seat))


def mover_reflection(rules: Rules, mover: int) -> tuple[np.ndarray, list[int]] | None:
    """The board's reflection about the axis through ``mover``'s seat: ``(cells, seats)``, the
    image of each cell and the seat whose home each seat's home is mapped onto; None when the
    reflection maps a home onto no home (the seating is not symmetric about that axis).

    The encodings turn the board so that the mover sits at the top (``seat_frame``); there the
    reflection is ``reflect_table``, and back in the board's own cells it is the mirror about the
    mover's axis. For two players it is ``reflect_table`` itself for both sides.
    """
    frame = seat_frame(rules, mover)
    cells = np.argsort(frame)[reflect_table(rules)[frame]]
    homes = [home_cells(rules, seat) for seat in range(rules.players)]
    seats = []
    for home in homes:
        image = frozenset(int(cells[c]) for c in home)
        if image not in homes:
            return None
        seats.append(homes.index(image))
    return cells, seats


def reflect_position_about(rules: Rules, position: Position, cells: np.ndarray, seats: list[int]) -> Position:
    """The position with every piece on its reflected cell, owned by the reflected seat."""
    board = [-1] * rules.cells
    for cell, owner in enumerate(position.board):
        if owner >= 0:
            board[int(cells[cell])] = seats[owner]
    return Position(tuple(board), position.to_move, position.ply)


def reflect_piece_lists(pieces: np.ndarray, cells: np.ndarray, seats: list[int]) -> np.ndarray:
    """Piece lists ``[H, P, k]`` of the reflected position: each piece keeps its ID, moves to its
    reflected cell and to its reflected seat's row (-1, a missing state, stays -1)."""
    out = np.full_like(pieces, -1)
    for seat, image in enumerate(seats):
        rows = pieces[:, seat]
        out[:, image] = np.where(rows >= 0, cells[np.maximum(rows, 0)], -1)
    return out


# =============================================================================================
# Text: positions and moves
# =============================================================================================


@pytest.mark.parametrize("name", PRESETS)
def test_position_and_move_text_round_trip(name: str) -> None:
    """The start, every position of a game and random positions, written and read back; every
    legal move of the game's positions in each move notation."""
    rules = preset(name)
    rng = random.Random(name)
    positions = game_positions(rules, seed=1)
    assert len(positions) > 10
    extremes = [Position(positions[0].board, rules.players - 1, rules.max_plies)]
    for position in [start_position(rules), *positions, *extremes, *(random_position(rules, rng) for _ in range(20))]:
        text = position_text(rules, position)
        assert read_position_text(rules, text) == position
        assert position_text(rules, read_position_text(rules, text)) == text
        if rules.is_star:  # the star's text is COMPACT121, one character per cell
            assert text == format_compact121(rules, position) and parse_compact121(rules, text) == position
            assert text.split()[0] == protocol_cells(position)
    if not rules.is_star:
        with pytest.raises(NotationError, match="for the star"):
            parse_compact121(rules, "0" * 121 + " 0")

    names = [cell_name(rules, cell) for cell in range(rules.cells)]
    assert len(set(names)) == rules.cells
    assert [parse_cell(rules, text) for text in names] == list(range(rules.cells))
    assert [parse_cell(rules, str(cell)) for cell in range(rules.cells)] == list(range(rules.cells))
    for position in positions[:: max(1, len(positions) // 12)]:
        state = game_state(rules, position)
        for move in state.legal_moves():
            assert parse_move(rules, list(move)) == move and parse_move(rules, f"{move[0]}-{move[1]}") == move
            for style in ("human", "index"):
                assert parse_human_move(rules, format_move(rules, move, style)) == move
            path = move_path(rules, position.board, move)
            assert (path[0], path[-1]) == move and parse_move_path(rules, "-".join(map(str, path))) == tuple(path)


@pytest.mark.parametrize("name", PRESETS)
def test_bad_position_text_is_refused_in_one_short_line(name: str) -> None:
    """A ply past the move limit (no game gets there), numbers no engine holds, huge or
    malformed text: each a ``NotationError`` of one short line."""
    rules = preset(name)
    start = position_text(rules, start_position(rules))
    board_and_side = start.rsplit(" ", 1)[0]
    bad = [
        f"{board_and_side} {rules.max_plies + 1}",
        f"{board_and_side} {'9' * 30}",
        f"{board_and_side} {'9' * 5000}",
        "x" * 1_000_000,
        start.replace(start[0], "." if start[0] != "." else start[-3], 1),  # one piece too few or many
    ]
    for text in bad:
        with pytest.raises(NotationError) as info:
            read_position_text(rules, text)
        message = str(info.value)
        assert len(message) < 300 and "\n" not in message, f"{name}: {message[:200]}..."


# =============================================================================================
# Perft: the compiled engine against the reference and the recorded numbers
# =============================================================================================

#: Deepest perft the pure-Python reference computes here from the start (and from a played
#: position, one less): well under a second on every board.
REFERENCE_DEPTH = 3


@pytest.mark.parametrize("name", PRESETS)
def test_perft_agrees_with_the_reference_and_the_record(name: str) -> None:
    rules = preset(name)
    recorded = recorded_start_perft(name)
    assert recorded is not None, f"record perft of {name}'s start in ccengine/perft_data.py"
    compiled = tuple(game_state(rules).perft(depth) for depth in range(1, len(recorded) + 1))
    assert compiled == recorded
    reference = tuple(reference_perft(reference_state(rules), d) for d in range(1, REFERENCE_DEPTH + 1))
    assert reference == compiled[:REFERENCE_DEPTH]
    documented = documented_perft().get(name)
    if documented is not None:
        assert tuple(documented["cython"]) == tuple(documented["reference"]) == recorded[: documented["depth"]]
    positions = game_positions(rules, seed=2)
    for position in positions[:: max(1, len(positions) // 4)]:
        fast, slow = game_state(rules, position), reference_state(rules, position)
        assert fast.legal_moves() == slow.legal_moves()
        assert fast.perft(REFERENCE_DEPTH - 1) == reference_perft(slow, REFERENCE_DEPTH - 1), position


def test_every_recorded_start_perft_holds() -> None:
    """The whole table of ``ccengine.perft_data`` (the ``small-N-k`` members the suite does not
    play included), by the compiled engine to its recorded depth and the reference to
    :data:`REFERENCE_DEPTH`; docs/perft.json agrees with it wherever it has the preset."""
    table = {**START_PERFT, **STAR_START_PERFT}
    for name, recorded in table.items():
        rules = preset(name)
        assert tuple(game_state(rules).perft(d) for d in range(1, len(recorded) + 1)) == recorded, name
        depth = min(REFERENCE_DEPTH, len(recorded))
        assert tuple(reference_perft(reference_state(rules), d) for d in range(1, depth + 1)) == recorded[:depth], name
    for name, documented in documented_perft().items():
        assert tuple(documented["cython"]) == tuple(documented["reference"]) == table[name][: documented["depth"]]


# =============================================================================================
# Symmetry
# =============================================================================================


@pytest.mark.parametrize("name", PRESETS)
def test_reflection_maps_games_moves_results_planes_and_policy(name: str) -> None:
    """Positions of a game and random positions, and each one's reflection about the mover's
    axis: the reflected legal moves are the reflection's legal moves, the results match seat for
    seat, and the reflection's planes and policy are the window's reflection of the original's.
    Two players: the game replayed with the reflected moves stays legal and ends the same way."""
    rules = preset(name)
    table = reflect_table(rules)
    assert (table[table] == np.arange(rules.cells)).all()
    assert table.tolist() == [rules.geometry.reflect(cell) for cell in range(rules.cells)]
    start = start_position(rules)
    perm = seat_reflection(rules)
    encodings = [encoding_for(rules, e) for e in allowed_encodings(rules)]
    rng = np.random.default_rng(0)
    for enc in encodings:
        planes, policy = rng.random((2, *enc.input_shape)), rng.random((2, enc.policy_size))
        np.testing.assert_array_equal(reflect_planes(reflect_planes(planes, rules), rules), planes)
        np.testing.assert_array_equal(reflect_policy(rules, reflect_policy(rules, policy)), policy)

    symmetric = [mover_reflection(rules, mover) is not None for mover in range(rules.players)]
    if not all(symmetric):
        # star4: no mirror keeps its seating, and the window does not augment it
        assert rules.players > 2 and perm is None and not any(symmetric)
        return
    for mover in range(rules.players):
        cells, seats = mover_reflection(rules, mover)
        assert seats[mover] == mover
        # the window's seat permutation, in the mover's frame, is the geometry's (two players: none moves)
        assert [(seats[(mover + i) % rules.players] - mover) % rules.players for i in range(rules.players)] == \
            perm.tolist()
        if rules.players == 2:  # both sides see the board's own reflection
            assert (cells == table).all()
        assert reflect_position_about(rules, start, cells, seats).board == start.board

    moves = game_moves(rules, seed=3)
    sample = random.Random(name)
    checked = 0
    tracker, state = PieceTracker(rules), game_state(rules)
    for ply in range(len(moves) + 1):
        if ply % 3 == 0 or ply == len(moves):
            _check_reflection(rules, position_of(state), tracker, encodings)
            checked += 1
        if ply < len(moves):
            tracker.play(moves[ply])
            state.play(moves[ply])
    for _ in range(30):
        position = random_position(rules, sample)
        _check_reflection(rules, position, PieceTracker(rules, position.board, position.to_move), encodings)
    assert checked > 5

    if rules.players == 2:  # with more, the mirror reverses the order of play: no game is its image
        a, b = game_state(rules), game_state(rules)
        for move in moves:
            a.play(move)
            b.play(tuple(int(c) for c in table[list(move)]) if move != PASS else PASS)  # raises if illegal
            assert b.board == reflect_position_about(rules, position_of(a), table, [0, 1]).board
        assert (b.end_reason, result_vector(b)) == (a.end_reason, result_vector(a))


def _check_reflection(rules: Rules, position: Position, tracker: PieceTracker, encodings: list[Any]) -> None:
    mover = position.to_move
    cells, seats = mover_reflection(rules, mover)
    mirror = reflect_position_about(rules, position, cells, seats)
    two = rules.players == 2  # the library's own reflection of positions, moves and pieces is this one
    assert not two or reflect_position(rules, position) == mirror and reflect_position(rules, mirror) == position
    state, image = game_state(rules, position), game_state(rules, mirror)
    assert state.is_terminal() == image.is_terminal() and state.end_reason == image.end_reason
    if state.is_terminal():
        scores = result_vector(state)
        assert result_vector(image) == tuple(scores[seats.index(s)] for s in range(rules.players))
        return
    moves = state.legal_moves()
    reflected = [m if m == PASS else (int(cells[m[0]]), int(cells[m[1]])) for m in moves]
    assert sorted(reflected) == sorted(image.legal_moves())
    assert not two or [tuple(m) for m in reflect_moves(rules, moves).tolist()] == reflected
    for enc in encodings:
        pieces = tracker.piece_lists(enc.history)
        mirrored = reflect_piece_lists(pieces, cells, seats)
        assert not two or (reflect_pieces(rules, pieces) == mirrored).all()
        np.testing.assert_array_equal(enc.encode_one(mirrored, mover),
                                      window_reflection(rules, enc.encode_one(pieces, mover), enc.history))
        real = [m for m in moves if m != PASS]
        if not real:
            continue
        index = enc.move_indices(pieces[0], real, mover)
        image_index = enc.move_indices(mirrored[0], [m for m in reflected if m != PASS], mover)
        policy = np.zeros(enc.policy_size)
        policy[index] = np.arange(1, len(real) + 1)
        np.testing.assert_array_equal(reflect_policy(rules, policy)[image_index], policy[index])


# =============================================================================================
# Encodings
# =============================================================================================


@pytest.mark.parametrize("name", PRESETS)
def test_encodings_planes_policy_and_network_shapes(name: str) -> None:
    """Each encoding the board has: planes of its input shape (nothing off the board), a policy
    of ``k * cells``, a tiny network that takes the planes and gives the policy and one value per
    seat (one for two players), and the policy index of every legal move of a game read back to
    the move, in the encoding's frame and in the absolute one records use."""
    rules = preset(name)
    names = allowed_encodings(rules)
    if rules.is_star:
        assert names == ["general"]
        with pytest.raises(ValueError, match="general encoding only"):
            encoding_for(rules, "paper")
    else:
        assert names == list(ENCODINGS)
    side = plane_side(rules)
    off_board = np.setdiff1d(np.arange(side * side), plane_cells(rules))
    moves = game_moves(rules, seed=4)
    for enc_name in names:
        enc = encoding_for(rules, enc_name)
        assert enc.input_shape == (enc.in_planes, side, side) and enc.policy_size == rules.k * rules.cells
        tracker, state = PieceTracker(rules), game_state(rules)
        batch, movers = [], []
        for move in [*moves, None]:
            planes = enc.encode_tracker(tracker)
            assert planes.shape == enc.input_shape and planes.dtype == np.float32
            assert not planes.reshape(enc.in_planes, -1)[:, off_board].any()
            batch.append(tracker.piece_lists(enc.history))
            movers.append(tracker.to_move)
            legal = [m for m in state.legal_moves() if m != PASS]
            for rotate in {enc.rotate, False}:
                index = policy_indices(rules, tracker.current, legal, tracker.to_move, rotate)
                assert len(set(index.tolist())) == len(legal) and ((0 <= index) & (index < enc.policy_size)).all()
                back = index_moves(rules, tracker.current, index, tracker.to_move, rotate)
                assert [tuple(m) for m in back.tolist()] == legal
            if move is None:
                break
            tracker.play(move)
            state.play(move)
            assert tracker.board == tuple(state.board)
        planes = enc.encode(np.stack(batch), np.array(movers))
        assert planes.shape == (len(batch), *enc.input_shape)
        with torch.no_grad():
            logits, value = tiny_network(rules, enc_name)(torch.from_numpy(planes[:8]))
        assert logits.shape == (min(8, len(batch)), enc.policy_size)
        assert value.shape == ((min(8, len(batch)),) if rules.players == 2 else (min(8, len(batch)), rules.players))


# =============================================================================================
# Players: a whole game by every player kind
# =============================================================================================


def test_every_player_kind_has_specs_here() -> None:
    """A new player kind joins the suite by a SPEC in ``SPECS_BY_KIND``."""
    assert set(project_player_kinds()) == set(SPECS_BY_KIND)


def player_cases() -> list[Any]:
    """``(preset, SPEC template)`` for every preset and template, but networks only on the
    encodings the board has."""
    return [pytest.param(name, template, id=f"{name}-{template}") for name in PRESETS for template in spec_templates()
            if spec_encoding(template) in (None, *allowed_encodings(preset(name)))]


@pytest.mark.parametrize(("name", "template"), player_cases())
def test_a_whole_game_by_every_player_kind(name: str, template: str, tmp_path: Path) -> None:
    """The player in every seat, from the start to the end (the star's games cut at
    :data:`STAR_ROUNDS` rounds): legal moves, the state untouched by thinking, and a result
    vector of one share per seat that sums to 1."""
    rules = short_rules(preset(name))
    state = play_game(rules, build_players(template, rules, seed=5, folder=tmp_path), seed=5)
    scores = result_vector(state)
    assert state.end_reason is not None and scores is not None and len(scores) == rules.players
    assert min(scores) >= 0 and math.isclose(sum(scores), 1.0, abs_tol=1e-9), scores
    if rules.players == 2:
        assert scores == {1: (1.0, 0.0), 0: (0.5, 0.5), -1: (0.0, 1.0)}[state.result()]


# =============================================================================================
# Records
# =============================================================================================


@pytest.mark.parametrize("name", PRESETS)
def test_a_worker_record_round_trips_and_names_legal_moves(name: str) -> None:
    """A stage-1 worker's record of a real game, through the wire format with each codec: the
    same record back, the preset's rules, a result vector that sums to 1, consecutive positions
    one legal move apart and training targets that name legal moves of the mover's pieces."""
    rules = preset(name)
    record = worker_record(rules, seed=6)
    for codec in ("zlib", "none"):
        assert record_round_trip(record, codec).same_as(record)
    back = record_round_trip(record, "zlib")
    assert record_rules(back) == rules and back.preset == name
    scores = record_result(back, rules.players)
    assert len(scores) == rules.players and math.isclose(sum(scores), 1.0, abs_tol=1e-6)
    pieces, movers = back.pieces.astype(np.int64), back.to_move.astype(np.int64)
    for t in range(back.num_positions):
        board = [-1] * rules.cells
        for seat in range(rules.players):
            for cell in pieces[t, seat]:
                board[cell] = seat
        mover = int(movers[t])
        legal = set(game_state(rules, Position(tuple(board), mover, 0)).legal_moves())
        index, _ = back.policy(t)
        for i in index.tolist():
            piece, end = divmod(i, rules.cells)
            assert (int(pieces[t, mover, piece]), end) in legal
        if t + 1 < back.num_positions:
            moved = np.flatnonzero(pieces[t, mover] != pieces[t + 1, mover])
            others = np.delete(np.arange(rules.players), mover)
            assert (pieces[t, others] == pieces[t + 1, others]).all() and len(moved) <= 1
            if len(moved):
                assert (int(pieces[t, mover, moved[0]]), int(pieces[t + 1, mover, moved[0]])) in legal
            else:
                assert legal == {PASS}


# =============================================================================================
# The engine protocol
# =============================================================================================


@pytest.mark.parametrize("name", PRESETS)
def test_the_engine_protocol_plays_the_first_moves(name: str) -> None:
    """``hopzero engine --preset NAME --player greedy``: the handshake names the board; then the
    referee sends each position in turn as ``position cells`` (COMPACT121 cells on the star),
    ``position startpos moves ...`` and ``position cells <start> ... moves ...``, and every
    ``bestmove`` is a greedy move written as its witness path."""
    rules = preset(name)
    assert engine_command_rules(name) == rules
    engine = protocol_engine(rules, "greedy", seed=7)
    lines = engine.handle("ccp")
    assert lines[0].startswith("id name hopzero") and lines[-1] == "ccpok"
    assert f"info string preset {name} cells {rules.cells} pieces {rules.k}" in lines
    assert engine.handle("isready") == ["readyok"]
    state, played = game_state(rules), []
    for ply in range(2 * rules.players + 1):
        position = position_of(state)
        command = [cells_command(position), "position startpos moves " + " ".join(played),
                   f"{cells_command(start_position(rules))} moves " + " ".join(played)][ply % 3]
        assert engine.handle(command) == [] and position_of(engine.state) == position
        reply = engine.handle("go nodes 1")[-1].split()
        assert reply[0] == "bestmove" and len(reply) == 2, reply
        path = [int(cell) for cell in reply[1].split("-")]
        move = (path[0], path[-1])
        assert move in greedy_candidates(rules, state.to_move, state.legal_moves()), (ply, reply)
        assert path == move_path(rules, position.board, move)
        state.play(move)
        played.append(reply[1])
    assert engine.handle(cells_command(position_of(state))) == []
    assert position_of(engine.state) == position_of(state)


# =============================================================================================
# Web geometry
# =============================================================================================


@pytest.mark.parametrize("name", PRESETS)
def test_the_web_board_draws_every_cell_and_every_seats_home_and_goal(name: str) -> None:
    """One point per cell, no two alike, hex neighbours one step apart; for every seat a home of
    ``k`` cells where its pieces start, and a goal of ``k`` cells drawn opposite its home."""
    rules = preset(name)
    points = np.array(web_points(rules), dtype=np.float64)
    assert points.shape == (rules.cells, 2)
    assert len({(round(x, 6), round(y, 6)) for x, y in points}) == rules.cells
    for cell, neighbours in enumerate(rules.geometry.step):
        for other in neighbours:
            if other >= 0:
                assert math.isclose(float(np.linalg.norm(points[cell] - points[other])), 1.0, abs_tol=1e-9)
    centre = points.mean(axis=0)
    start = start_position(rules).board
    homes = [home_cells(rules, seat) for seat in range(rules.players)]
    assert len(frozenset().union(*homes)) == rules.players * rules.k
    for seat, home in enumerate(homes):
        goal = goal_cells(rules, seat)
        assert len(home) == len(goal) == rules.k and not home & goal
        assert {cell for cell, owner in enumerate(start) if owner == seat} == home
        drawn_home, drawn_goal = points[sorted(home)].mean(axis=0), points[sorted(goal)].mean(axis=0)
        np.testing.assert_allclose(drawn_home + drawn_goal, 2 * centre, atol=1e-9)
