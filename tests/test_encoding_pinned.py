"""The network's input and policy indices, pinned bit for bit for every preset.

The shipped networks were trained on these planes and policy indices, so no change of the code
that makes them may move a single bit. For each preset a seeded random game is played on the
compiled engine; every position of it is encoded (each encoding, two histories), its legal moves
indexed (both frames), every index mapped back to a move, its canonical IDs taken from the bare
board, and the reflection applied to planes, policies and piece lists. A SHA-256 digest of each
result is compared with the digest the code gave when these values were recorded. A failing
``moves`` digest means the positions themselves changed (the engine), not the encoding.

To record new values after a deliberate change of the encoding (which retires the shipped
networks): ``python tests/test_encoding_pinned.py`` prints the table. A second test checks that the
network evaluator hands the network these indices and maps its opponent head's answer back.
"""

from __future__ import annotations

import hashlib
import random
import sys

import numpy as np
import pytest

from ccengine.encoding import ENCODINGS, PieceTracker, canonical_ids, encoding_for, index_moves, policy_indices
from ccengine.engines import new_state
from ccengine.rules import Rules, preset
from ccengine.symmetry import reflect_pieces, reflect_planes, reflect_policy

PRESETS = ("cc49", "paper", "cc81", "small-4-1", "small-5-3", "small-6-6", "star2", "star3", "star4", "star6")
PLIES = 24
HISTORY = 3


def digest(*arrays: np.ndarray) -> str:
    """The first 16 hex digits of the SHA-256 of the arrays' shapes, dtypes and bytes."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def positions(rules: Rules) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray, list[np.ndarray],
                                     list[tuple[int, ...]], list[list[tuple[int, int]]]]:
    """A seeded random game of ``PLIES`` plies: its moves, and for each position before a move the
    piece lists ``(HISTORY, P, k)``, the player to move, the current piece list, the board and the
    legal moves (sorted)."""
    rng = random.Random(f"pinned-{rules.name}")
    state = new_state(rules)
    tracker = PieceTracker(rules)
    moves, pieces, to_move, current, boards, legal = [], [], [], [], [], []
    while not state.is_terminal() and len(moves) < PLIES:
        options = sorted(state.legal_moves())
        pieces.append(tracker.piece_lists(HISTORY))
        to_move.append(state.to_move)
        current.append(tracker.current)
        boards.append(tuple(state.board))
        legal.append(options)
        move = rng.choice(options)
        state.play(move)
        tracker.play(move)
        moves.append(move)
    return moves, np.stack(pieces), np.array(to_move, dtype=np.int64), current, boards, legal


def fingerprints(name: str) -> dict[str, str]:
    """Every pinned digest of one preset."""
    rules = preset(name)
    moves, pieces, to_move, current, boards, legal = positions(rules)
    out = {"moves": digest(np.array(moves, dtype=np.int64))}
    out["canonical"] = digest(*(canonical_ids(rules, b).astype(np.int64) for b in boards))
    encodings = [e for e in ENCODINGS if not (rules.is_star and e == "paper")]
    size = rules.k * rules.cells
    policy = np.arange(len(to_move) * size, dtype=np.float32).reshape(len(to_move), size)
    for enc_name in encodings:
        for history in (1, HISTORY):
            enc = encoding_for(rules, enc_name, history=history)
            planes = enc.encode(pieces, to_move)
            out[f"{enc_name}/h{history}/planes"] = digest(planes)
            if history == HISTORY:
                out[f"{enc_name}/reflected"] = digest(reflect_planes(planes, rules))
        rotate = ENCODINGS[enc_name].rotate
        indices = [policy_indices(rules, cur, mv, int(tm), rotate) for cur, mv, tm in zip(current, legal, to_move)]
        out[f"{enc_name}/indices"] = digest(*indices)
        every = np.arange(size)
        back = [index_moves(rules, cur, every, int(tm), rotate) for cur, tm in zip(current, to_move)]
        out[f"{enc_name}/moves"] = digest(*back)
    out["reflect"] = digest(reflect_policy(rules, policy), reflect_pieces(rules, pieces).astype(np.int64))
    return out


#: Recorded from the code as it was when the shipped networks were trained.
PINNED: dict[str, dict[str, str]] = {
    'cc49': {
        'moves': 'de2a62a9d672f97e',
        'canonical': 'f294091ba48b4486',
        'paper/h1/planes': 'aea18d454232bc5f',
        'paper/h3/planes': 'c28e96653dfc449b',
        'paper/reflected': 'b8cc1578e50577f8',
        'paper/indices': '5192fcac975ce3ca',
        'paper/moves': 'cbe61b13e1c73adf',
        'general/h1/planes': '086e97e7852a2f93',
        'general/h3/planes': '9e0e0905a78447d9',
        'general/reflected': 'f80fae060fa28b21',
        'general/indices': 'a16a974d1f41902f',
        'general/moves': '1667d2ffafe685b8',
        'reflect': '904a76839126be9f',
    },
    'paper': {
        'moves': '24f5bf1b0a60aa0d',
        'canonical': 'c28f8658260b44fe',
        'paper/h1/planes': '39ed872d47cda58a',
        'paper/h3/planes': 'c366d734411cff84',
        'paper/reflected': '7abe032b551f4ae8',
        'paper/indices': '8696243ae480b8d2',
        'paper/moves': '5e7fc026dd45adc1',
        'general/h1/planes': '518f4b58813b9dcc',
        'general/h3/planes': 'a1e160d154fc4ab2',
        'general/reflected': '893d73fb2ce9107e',
        'general/indices': 'a18de31d35d82727',
        'general/moves': '30fd2ff3a1cab2df',
        'reflect': '5c79b19e1b30fbec',
    },
    'cc81': {
        'moves': 'e0d16ac035e986fb',
        'canonical': '858b83b6b8d33df6',
        'paper/h1/planes': '2ce6c0338480ff64',
        'paper/h3/planes': '0c75ae1735d707ad',
        'paper/reflected': 'c5be2250fbb79c93',
        'paper/indices': 'f1e0108b75a06fe9',
        'paper/moves': '7f14ea4b8594cebd',
        'general/h1/planes': '6ea8a2ead6efed66',
        'general/h3/planes': '7c4caf3ccab7deb0',
        'general/reflected': '297666c8470df368',
        'general/indices': 'f219131fac9aa1ff',
        'general/moves': 'c535b510aebc8d89',
        'reflect': '119db9fbac312f05',
    },
    'small-4-1': {
        'moves': 'bb9fd8b827265c7d',
        'canonical': 'c4f811d9af4dfde7',
        'paper/h1/planes': 'b419b7b0f4455254',
        'paper/h3/planes': '875a1dbca925272c',
        'paper/reflected': '3c130ac346e923e1',
        'paper/indices': 'c39ed5381ed10397',
        'paper/moves': 'fe3293106a3edcb8',
        'general/h1/planes': '2ba9f83aac313087',
        'general/h3/planes': '2c51ce040b3a3328',
        'general/reflected': 'd08e38b3c23e3c84',
        'general/indices': 'b7b210e96649c276',
        'general/moves': '65c506f20fda73fb',
        'reflect': 'f19aabf60bbb4100',
    },
    'small-5-3': {
        'moves': 'b17fafccbca1693f',
        'canonical': '2faa7ce2dd90669f',
        'paper/h1/planes': '2b8f7d3e0a77bc2d',
        'paper/h3/planes': '768a1c2b263b2a6f',
        'paper/reflected': '61027bf2b48c0151',
        'paper/indices': '9aaa88aae2df48c9',
        'paper/moves': '6da32faa06c31d0e',
        'general/h1/planes': '697c6810dfb8b349',
        'general/h3/planes': 'c087464171749f0b',
        'general/reflected': '14ac21e4368aa00c',
        'general/indices': '0dc9845dd2b4cb9a',
        'general/moves': '3cbd1af79d2f37e2',
        'reflect': '1773d36c76262d84',
    },
    'small-6-6': {
        'moves': 'f8f0b4ac4af6912e',
        'canonical': 'a9a97ee2c7e6692f',
        'paper/h1/planes': '4761c15068dc17d2',
        'paper/h3/planes': '9493de52b9bf5dc5',
        'paper/reflected': '8b37393b3feb8f9a',
        'paper/indices': '08c854468f651e6e',
        'paper/moves': 'e84861ad07341dbc',
        'general/h1/planes': 'cb31c21fac04ce18',
        'general/h3/planes': '9f1cacc54009e74a',
        'general/reflected': '993a4810b4817656',
        'general/indices': '7069883b130f8905',
        'general/moves': '7ff87ee568fa9408',
        'reflect': '3056757f2d2f1a0a',
    },
    'star2': {
        'moves': '9e01e3f108b34b25',
        'canonical': '821e3b3bade36e2e',
        'general/h1/planes': 'd0ce56a9b2db1f4c',
        'general/h3/planes': '22a9c841b5fd29f5',
        'general/reflected': '704c6ecd2aa991ba',
        'general/indices': '1d2d8ccffb997da6',
        'general/moves': '1491070518efbfc4',
        'reflect': 'c6950b0f810178a8',
    },
    'star3': {
        'moves': 'db50ea08f5e832fa',
        'canonical': '0069f9242e93a8a2',
        'general/h1/planes': 'c00ad861adcff254',
        'general/h3/planes': '93d9d25357859197',
        'general/reflected': 'a06ff703d53ff03a',
        'general/indices': 'dda172553272cef5',
        'general/moves': '18db51fadf12c47b',
        'reflect': '55100642c3fe1152',
    },
    'star4': {
        'moves': '6a06e947e5b3c1f4',
        'canonical': '68b7a985209c8c99',
        'general/h1/planes': '946616fe1aa5e04e',
        'general/h3/planes': '2439a157fe124542',
        'general/reflected': '03816f91c74260af',
        'general/indices': 'b175ece0c76386a1',
        'general/moves': '27069333acd1d84f',
        'reflect': 'e054b309ff6f82d4',
    },
    'star6': {
        'moves': 'ec3acfe43d56675e',
        'canonical': '23b6536ac0cd8fed',
        'general/h1/planes': 'd5d49afa0106e527',
        'general/h3/planes': 'a234b4e3c0de16df',
        'general/reflected': 'c4dede91a767c5ff',
        'general/indices': '49de43c6dfe3b2b8',
        'general/moves': 'c9083e30e15e86a9',
        'reflect': 'c03f0d567bbb0d76',
    },
}


@pytest.mark.parametrize("name", PRESETS)
def test_encoding_and_policy_indices_are_bit_identical_to_the_recorded_ones(name):
    got = fingerprints(name)
    want = PINNED[name]
    assert got["moves"] == want["moves"], "the positions changed (the engine or the game), not the encoding"
    assert got == want


if __name__ == "__main__":
    sys.stdout.write("PINNED: dict[str, dict[str, str]] = {\n")
    for name in PRESETS:
        sys.stdout.write(f"    {name!r}: {{\n")
        for key, value in fingerprints(name).items():
            sys.stdout.write(f"        {key!r}: {value!r},\n")
        sys.stdout.write("    },\n")
    sys.stdout.write("}\n")



@pytest.mark.parametrize("name", ["cc49", "star2", "star3", "star6"])
def test_the_network_evaluator_maps_indices_into_the_encodings_frame_and_back(name):
    """The search's absolute policy indices reach the network in the encoding's frame (the
    ``indices`` pinned above), and the opponent head's logits come back to absolute indices."""
    import torch

    from learner.inference import Inference
    from learner.model import NetConfig, PolicyValueNet
    from learner.network_evaluator import NetworkEvaluator

    rules = preset(name)
    _, pieces, to_move, current, _, legal = positions(rules)
    enc = encoding_for(rules, "general")
    torch.manual_seed(0)
    net = PolicyValueNet(NetConfig.for_rules(rules, enc.in_planes, "tiny", opponent_head=True)).eval()
    evaluator = NetworkEvaluator(rules, enc, Inference(net, backend="eager", threads=1))
    width = max(map(len, legal))
    absolute = np.zeros((len(legal), width), dtype=np.int64)
    framed = np.zeros_like(absolute)
    counts = np.array([len(m) for m in legal], dtype=np.int32)
    for b, (cur, mv, tm) in enumerate(zip(current, legal, to_move)):
        absolute[b, : len(mv)] = policy_indices(rules, cur, mv, int(tm))
        framed[b, : len(mv)] = policy_indices(rules, cur, mv, int(tm), rotate=True)
    valid = np.arange(width)[None, :] < counts[:, None]
    got = evaluator.network_frame(absolute, to_move)
    assert np.array_equal(np.where(valid, got, 0), framed)

    every = np.broadcast_to(np.arange(enc.policy_size), (len(legal), enc.policy_size))
    planes = enc.encode(pieces, to_move)
    raw = evaluator.inference.evaluate_opponent(planes, framed.astype(np.int32), counts).opponent_logits
    _, _, opponent = evaluator.evaluate_opponent(pieces, to_move, absolute.astype(np.int32), counts)
    assert np.array_equal(opponent, np.take_along_axis(raw, evaluator.network_frame(every, to_move), axis=1))
