"""``hopzero perft``: the leaves of the legal-move tree, ``{"preset", "perft": [n1..nD]}`` (+ ``"divide"``):
the move generator's check against published counts and the reference engine."""

from __future__ import annotations

import argparse
from typing import Any

from ccengine.reference import perft as reference_perft

from .args import add_engine, add_json, add_position, add_preset, emit, int_arg, state_from_args

#: perft's tree grows about 30-fold a ply on cc49: depth 6 already takes minutes.
PERFT_MAX_DEPTH = 8

def _perft(state: Any, depth: int) -> int:
    fn = getattr(state, "perft", None)
    return int(fn(depth)) if fn is not None else reference_perft(state, depth)


def _divide(state: Any, depth: int) -> list[tuple[tuple[int, int], int]]:
    fn = getattr(state, "divide", None)
    if fn is not None:
        return [((int(s), int(e)), int(n)) for (s, e), n in fn(depth)]
    out = []
    for move in state.legal_moves():
        state.play(move)
        out.append((move, _perft(state, depth - 1)))
        state.undo()
    return out


def add_parser(sub: Any) -> None:
    p = sub.add_parser("perft", help="count the leaves of the legal-move tree (move generator check)")
    add_preset(p)
    add_position(p)
    p.add_argument("--depth", type=int_arg(1, PERFT_MAX_DEPTH), required=True, metavar="D",
                   help=f"plies (1..{PERFT_MAX_DEPTH})")
    p.add_argument("--divide", action="store_true", help="also the count below each first move at depth D")
    add_engine(p)
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    state = state_from_args(args, args.engine)
    counts = [_perft(state, d) for d in range(1, args.depth + 1)]
    data: dict[str, Any] = {"preset": args.preset.name, "perft": counts}
    lines = [f"perft({d}) = {n}" for d, n in enumerate(counts, 1)]
    if args.divide:
        divide = _divide(state, args.depth)
        data["divide"] = [[s, e, n] for (s, e), n in divide]
        lines += [f"  {s}-{e}: {n}" for (s, e), n in divide]
    emit(args, data, "\n".join(lines))
    return 0
