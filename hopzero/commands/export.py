"""``hopzero export``: a model in another format (ONNX) for use outside hopzero."""

from __future__ import annotations

import argparse
from typing import Any

from .args import CliError, add_json, emit, preset_arg


def add_parser(sub: Any) -> None:
    p = sub.add_parser("export", help="write a model in another format (ONNX) for use outside hopzero")
    p.add_argument("--onnx", action="store_true", required=True,
                   help="write ONNX (the one format so far), with the input description in its metadata")
    p.add_argument("model", metavar="MODEL", help="a network file, a learner checkpoint, a run directory (its best "
                                                  "model) or 'shipped' (with --preset)")
    p.add_argument("out", metavar="OUT", help="the file to write")
    p.add_argument("--preset", type=preset_arg, default=None, metavar="P",
                   help="the game the network plays (default: the one its file records)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from learner.model_files import resolve_model_source
    from learner.onnx_backend import export_onnx

    if args.model == "shipped" and args.preset is None:
        raise CliError("'shipped' names a preset's model: give --preset")
    try:
        source = resolve_model_source(args.preset, args.model)
        meta = export_onnx(source, args.out, args.preset)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    data = {"out": args.out, "source": str(source), "metadata": meta}
    emit(args, data, f"wrote {args.out}: the {meta['preset']} network of {source} ({meta['encoding']} encoding, "
                      f"history {meta['history']}) as ONNX")
    return 0
