"""The network as an ONNX graph, run by ONNX Runtime: the fast CPU backend of :class:`Inference`.

ONNX Runtime evaluates the seed paper's network on one CPU thread 2.3-8.7x faster than eager
PyTorch (docs/BENCHMARKS.md, "Inference backends"); self-play and evaluation spend about 90% of
their time in the network, so this is most of their speed.

The graph is exported from the inference copy of a :class:`~learner.model.PolicyValueNet` (eval
mode, batch norms folded): one input ``planes`` ``(batch, in_planes, n, n)`` float32, two outputs
``policy_logits`` ``(batch, policy_size)`` and ``value`` ``(batch,)`` (a third,
``opponent_logits`` ``(batch, policy_size)``, when the network has the opponent head), the batch
dimension dynamic. The file ``hopzero export --onnx`` writes also carries the auxiliary training
heads a network has (``ownership_logits`` ``(batch, P + 1, n, n)``, ``score_logits``
``(batch, P + 1)``); the graphs self-play and evaluation run leave them out. New weights mean a new export and a new session (tens of milliseconds for the networks
here), never a new process.

The ``onnx-int8`` backend quantizes that graph statically (ONNX Runtime's quantizer, QDQ format):
weights to signed 8 bits per output channel (unsigned on an x86-64 CPU without VNNI, where signed
weights saturate: :func:`u8s8_saturates`), activations to unsigned 8 bits with ranges measured
on *calibration planes*, encoded positions of the game the network plays
(:func:`calibration_planes`). On a CPU with AVX-512 VNNI this runs the networks here about twice
as fast as float32; its outputs differ from float32 by about 1e-2 (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import functools
import hashlib
import io
import platform
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .model import PolicyValueNet

__all__ = [
    "AUX_OUTPUTS",
    "EXPORT_FORMAT",
    "INPUT_NAME",
    "OPPONENT_OUTPUT",
    "OUTPUT_NAMES",
    "OnnxRunner",
    "calibration_planes",
    "export_onnx",
    "int8_onnx_bytes",
    "onnx_bytes",
    "onnx_providers",
    "output_names",
    "u8s8_saturates",
]

INPUT_NAME = "planes"
OUTPUT_NAMES = ("policy_logits", "value")
#: The third output of a network with the opponent head (``NetConfig.opponent_head``).
OPPONENT_OUTPUT = "opponent_logits"
#: The auxiliary training heads' outputs in an exported file, by ``PolicyValueNet.outputs`` key.
AUX_OUTPUTS = {"ownership": "ownership_logits", "score": "score_logits"}


def output_names(net: PolicyValueNet, *, aux: bool = False) -> tuple[str, ...]:
    """The graph outputs of ``net``, in the order its ``forward`` returns them; with ``aux``, the
    auxiliary training heads' after them (those the network has)."""
    names = OUTPUT_NAMES + ((OPPONENT_OUTPUT,) if net.config.opponent_head else ())
    if aux:
        cfg = net.config
        names += tuple(AUX_OUTPUTS[k] for k, on in (("ownership", cfg.ownership_head), ("score", cfg.score_head)) if on)
    return names
#: The ONNX operator set the graphs use (ONNX Runtime 1.17+ runs it).
OPSET = 17


class _PolicyValueOnly(torch.nn.Module):
    """A network's policy and value alone: the graph self-play runs leaves the opponent head out."""

    def __init__(self, net: PolicyValueNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.net.heads(x, opponent=False)


class _EveryHead(torch.nn.Module):
    """A network's every head, as a tuple in :func:`output_names` ``(aux=True)`` order."""

    def __init__(self, net: PolicyValueNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.net.outputs(x)
        return tuple(out[k] for k in ("policy", "value", "opponent", *AUX_OUTPUTS) if k in out)


def onnx_bytes(net: PolicyValueNet, metadata: Mapping[str, str] | None = None, *, opponent: bool = True,
               aux: bool = False) -> bytes:
    """``net`` (in eval mode; fold its batch norms first for speed) as a serialized ONNX model,
    with ``metadata`` as the model's metadata properties (string keys and values); without
    ``opponent``, the graph has the policy and value outputs only, whatever heads ``net`` has;
    with ``aux`` (and ``opponent``), the auxiliary training heads' outputs too."""
    cfg = net.config
    example = torch.zeros(1, cfg.in_planes, cfg.n, cfg.n, dtype=next(net.parameters()).dtype)
    buffer = io.BytesIO()
    names = output_names(net, aux=aux) if opponent else OUTPUT_NAMES
    module = (_EveryHead(net) if aux else net) if opponent else _PolicyValueOnly(net)
    with warnings.catch_warnings():
        # The TorchScript exporter is deprecated in favour of torch.export's, which needs the
        # onnxscript package and minutes more; this network is plain convolutions and both agree.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (example,),
            buffer,
            input_names=[INPUT_NAME],
            output_names=list(names),
            dynamic_axes={name: {0: "batch"} for name in (INPUT_NAME, *names)},
            opset_version=OPSET,
            dynamo=False,
        )
    data = buffer.getvalue()
    if not metadata:
        return data
    import onnx

    model = onnx.load_from_string(data)
    onnx.helper.set_model_props(model, {str(k): str(v) for k, v in metadata.items()})
    return model.SerializeToString()


def int8_onnx_bytes(net: PolicyValueNet, calibration: np.ndarray) -> bytes:
    """``net`` (eval mode, batch norms folded) as an 8-bit ONNX model: weights per output channel,
    activation ranges the minimum and maximum seen on ``calibration`` (float32 planes
    ``(N, in_planes, n, n)``, positions like those the network will see). The last few results
    are kept by a digest of the weights and the planes: a process that builds many players of
    one network (a tournament, the tests) quantizes it once."""
    planes = np.ascontiguousarray(calibration, dtype=np.float32)
    if planes.ndim != 4 or len(planes) == 0:
        raise ValueError(f"calibration planes must be a non-empty (N, C, n, n) array, got shape {planes.shape}")
    digest = hashlib.blake2b(planes.tobytes(), digest_size=16)
    digest.update(repr(planes.shape).encode())
    for name, tensor in net.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    key = digest.hexdigest()
    if key not in _INT8_GRAPHS:
        _INT8_GRAPHS[key] = _quantize(net, planes)
        while len(_INT8_GRAPHS) > 4:
            _INT8_GRAPHS.pop(next(iter(_INT8_GRAPHS)))
    return _INT8_GRAPHS[key]


#: Quantized graphs by the digest of their weights and calibration planes, oldest first.
_INT8_GRAPHS: dict[str, bytes] = {}


def _quantize(net: PolicyValueNet, planes: np.ndarray) -> bytes:
    import logging
    import tempfile

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class _Batches(CalibrationDataReader):
        def __init__(self) -> None:
            self._batches = iter(planes[i:i + 128] for i in range(0, len(planes), 128))

        def get_next(self) -> dict[str, np.ndarray] | None:
            batch = next(self._batches, None)
            return None if batch is None else {INPUT_NAME: batch}

    root = logging.getLogger()
    level = root.level
    with tempfile.TemporaryDirectory(prefix="hopzero-int8-") as tmp:
        raw, prepared, quantized = (Path(tmp) / name for name in ("raw.onnx", "prepared.onnx", "int8.onnx"))
        raw.write_bytes(onnx_bytes(net, opponent=False))
        try:
            # The quantizer reports on the root logger; its advice is for other graphs.
            root.setLevel(logging.ERROR)
            # Shape inference and constant folding first: without them the dense layers' biases
            # are not constants and the quantized graph runs slower than float32.
            quant_pre_process(str(raw), str(prepared))
            weights = QuantType.QUInt8 if u8s8_saturates() else QuantType.QInt8
            quantize_static(
                str(prepared), str(quantized), _Batches(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QUInt8, weight_type=weights,
            )
        finally:
            root.setLevel(level)
        return quantized.read_bytes()


@functools.lru_cache(maxsize=1)
def u8s8_saturates() -> bool:
    """Whether this CPU is an x86-64 without VNNI (``avx512_vnni`` or ``avx_vnni``), where ONNX
    Runtime multiplies unsigned 8-bit activations by signed 8-bit weights with an instruction
    whose 16-bit sums saturate (VPMADDUBSW): there the trained star2 network's values moved 0.083
    from float32 on average, with unsigned 8-bit weights 0.024 (tests/test_inference_backends.py)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    except OSError:  # not Linux: no way to tell here; the signed weights of a VNNI CPU
        return False
    return not ({"avx512_vnni", "avx_vnni"} & set(flags.split()))


@functools.lru_cache(maxsize=8)
def calibration_planes(rules: Any, encoding: Any, positions: int = 512, seed: int = 0) -> np.ndarray:
    """``positions`` encoded positions of ``rules`` for setting 8-bit activation ranges:
    every few plies of games between stochastic greedy players (openings to endgames, every
    side to move), by ``encoding`` (a ``ccengine.encoding.Encoding``). Deterministic in
    ``seed``; read-only, and cached (a process builds many evaluators of one game)."""
    from ccengine.encoding import PieceTracker
    from ccengine.game_loop import play_game
    from ccengine.players import StochasticGreedyPlayer

    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    game = 0
    while len(out) < positions:
        tracker = PieceTracker(rules)
        players = [StochasticGreedyPlayer(rules, int(rng.integers(2**31))) for _ in range(rules.players)]
        stride = int(rng.integers(2, 6))  # sample plies at a varying stride

        def sample(state: Any, moves: list[Any], tracker: Any = tracker, stride: int = stride) -> None:
            if state.ply % stride == 0 and len(out) < positions:
                out.append(encoding.encode_tracker(tracker))

        play_game(rules, players, on_position=sample, on_move=lambda _, move, tracker=tracker: tracker.play(move))
        game += 1
        if game > 10 * positions:
            raise RuntimeError(f"games of {rules.name} gave fewer than {positions} positions")
    planes = np.stack(out).astype(np.float32)
    planes.flags.writeable = False
    return planes


def onnx_providers(device: torch.device) -> list[str]:
    """ONNX Runtime's execution providers for ``device``: CPU, or CUDA (then CPU for what CUDA
    lacks) when ONNX Runtime was built with it (the ``onnxruntime-gpu`` package)."""
    import onnxruntime as ort

    if device.type == "cpu":
        return ["CPUExecutionProvider"]
    if device.type == "cuda" and "CUDAExecutionProvider" in ort.get_available_providers():
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    raise ValueError(
        f"the onnx backend cannot run on {device}: this ONNX Runtime has the providers "
        f"{ort.get_available_providers()} (install onnxruntime-gpu for CUDA)"
    )


class OnnxRunner:
    """``runner(planes) -> (logits, values)``: one ONNX Runtime session for one network, its graph
    without the opponent head; :meth:`opponent` adds the head's logits from a second session with
    it (float32 even for an 8-bit runner), made at its first call.

    ``threads``: the session's intra-op threads (an actor: 1). ``calibration``: planes to
    quantize the network to 8 bits with (:func:`int8_onnx_bytes`); None: float32. :meth:`load`
    replaces the network (new weights) by re-exporting it (and re-quantizing: about a second).
    """

    def __init__(
        self, net: PolicyValueNet, *, device: torch.device, threads: int, calibration: np.ndarray | None = None
    ) -> None:
        import onnxruntime as ort

        self._ort = ort
        self.calibration = calibration
        self.providers = onnx_providers(device)
        self.options = ort.SessionOptions()
        self.options.intra_op_num_threads = max(1, int(threads))
        self.options.inter_op_num_threads = 1
        self.options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.load(net)

    def load(self, net: PolicyValueNet) -> None:
        """Run ``net`` (eval mode) from now on."""
        # Self-play's graph leaves the opponent head out; opponent() makes a second session.
        graph = onnx_bytes(net, opponent=False) if self.calibration is None else int8_onnx_bytes(net, self.calibration)
        self.session = self._ort.InferenceSession(graph, self.options, providers=self.providers)
        self.has_opponent = bool(net.config.opponent_head)
        self._net = net
        self._full: Any = None  # the session with the opponent head, made when first asked

    def __call__(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``planes`` float32 ``(B, in_planes, n, n)`` -> float32 ``(B, policy_size)``, ``(B,)``
        (``(B, P)`` for a value head with one output per seat)."""
        logits, values = self.session.run(list(OUTPUT_NAMES), {INPUT_NAME: planes})
        return logits, _values(values, self._net)

    def opponent(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``planes`` -> ``(logits, values, opponent_logits)``; the network must have the head."""
        if not self.has_opponent:
            raise ValueError("this network has no opponent head")
        if self._full is None:
            self._full = self._ort.InferenceSession(onnx_bytes(self._net), self.options, providers=self.providers)
        logits, values, opponent = self._full.run([*OUTPUT_NAMES, OPPONENT_OUTPUT], {INPUT_NAME: planes})
        return logits, _values(values, self._net), opponent


def _values(values: np.ndarray, net: PolicyValueNet) -> np.ndarray:
    """The value output as the network's ``forward`` shapes it: ``(B,)`` for the scalar head,
    ``(B, P)`` for a head with one output per seat, renormalised to sum 1 (an 8-bit graph
    quantizes the softmax to steps of 1/255: its rows sum to 1 only within ~1%)."""
    outputs = net.config.value_outputs
    if outputs == 1:
        return values.reshape(-1)
    values = values.reshape(-1, outputs)
    return values / np.maximum(values.sum(axis=1, keepdims=True), np.float32(1e-12))


#: Format tag in the metadata of every model ``hopzero export --onnx`` writes.
EXPORT_FORMAT = "hopzero.onnx/1"


def export_onnx(source: str | Path, out: str | Path, rules: Any = None) -> dict[str, str]:
    """Write the network of a model file or checkpoint ``source`` (``read_model_file``: checked,
    ``weights_only``) to ``out`` as ONNX, batch norms folded, with what a program needs to feed
    it in the metadata. ``rules``: the game it plays; None: the preset the file records (a
    network file does; a given one must agree). Returns the metadata written."""
    import json

    from ccengine.encoding import encoding_for
    from ccengine.rules import preset

    from .model import load_net
    from .model_files import check_preset, read_model_file
    from .records import versions_now
    from plumbing.run_files import atomic_write_bytes

    state, meta = read_model_file(source)
    if rules is None:
        if meta.get("preset") is None:
            raise ValueError(f"{source}: the file does not say which game its network plays; name the preset")
        rules = preset(meta["preset"])
    check_preset(source, meta, rules)
    net = load_net(state, name=str(source)).eval().fuse_()
    encoding = encoding_for(rules, meta.get("encoding", "general"), history=meta.get("history"))
    cfg = net.config
    if encoding.input_shape != (cfg.in_planes, cfg.n, cfg.n) or encoding.policy_size != cfg.policy_size:
        raise ValueError(f"{source}: the network does not fit {rules.name} with encoding {encoding.name!r}")
    rotate = ("; the board is turned into the mover's seat frame (two players: rotated 180 degrees for player 1; "
              "three or more: turned by 60-degree steps so the mover sits at the north point) and so is the "
              "destination: ccengine.encoding.seat_frame(rules, to_move)[d]") if encoding.rotate else ""
    metadata = {
        "format": EXPORT_FORMAT,
        "preset": rules.name,
        "encoding": encoding.name,
        "history": str(encoding.history),
        "input": f"{INPUT_NAME}: float32 (batch, {cfg.in_planes}, {cfg.n}, {cfg.n}), "
                 f"ccengine.encoding.encoding_for({rules.name!r}, {encoding.name!r}, history={encoding.history})",
        "policy_index": f"{OUTPUT_NAMES[0]}[b, piece_id * {rules.cells} + destination]: logits over "
                        f"{rules.k} piece ids x {rules.cells} cells, piece ids canonical (ccengine.encoding)"
                        f"{rotate}; softmax over the legal moves only",
        "value": (f"{OUTPUT_NAMES[1]}[b]: tanh, in [-1, 1], from the view of the player to move"
                  if cfg.value_outputs == 1 else
                  f"{OUTPUT_NAMES[1]}[b, i]: softmax over the {cfg.value_outputs} seats, the expected share of "
                  f"the result of player (to_move + i) % {cfg.value_outputs}"),
        **({OPPONENT_OUTPUT: f"{OPPONENT_OUTPUT}[b, piece_id * {rules.cells} + destination]: logits of the "
                             f"opponent's reply (the player not to move), indexed and rotated as "
                             f"{OUTPUT_NAMES[0]}"} if cfg.opponent_head else {}),
        **({AUX_OUTPUTS["ownership"]: f"{AUX_OUTPUTS['ownership']}[b, c, row, col]: training aid, logits per input "
                                      f"element of who holds that cell when the game ends: c = 0 empty, c = 1 + i "
                                      f"player (to_move + i) % {cfg.players}; trained on the goal cells"}
           if cfg.ownership_head else {}),
        **({AUX_OUTPUTS["score"]: f"{AUX_OUTPUTS['score']}[b, i]: training aid, sigmoid logits: i < {cfg.players}, "
                                  f"the final share of its rows to advance that player (to_move + i) % "
                                  f"{cfg.players} has advanced; i = {cfg.players}, the share of the move limit "
                                  f"left to play"} if cfg.score_head else {}),
        "net_config": json.dumps(cfg.to_dict(), sort_keys=True),
        "c_puct": str(meta.get("c_puct", "")),
        "source_sha256": str(state.get("sha256", "")),
        "versions": json.dumps(versions_now(), sort_keys=True),
    }
    data = onnx_bytes(net, metadata, aux=True)
    try:
        atomic_write_bytes(out, data)  # a failed write leaves neither OUT nor a temporary file
    except OSError as exc:
        raise ValueError(f"cannot write {out}: {exc.strerror or exc}; nothing was written") from None
    return metadata
