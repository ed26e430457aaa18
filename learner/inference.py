"""Batched network evaluation with legal-move masking: numpy in, numpy out.

One :class:`Inference` wraps one network on one device for one process (an actor, the evaluator's
arena). It owns an inference copy of the weights (eval mode, batch norms folded into the
convolutions; on CUDA optionally half precision and channels-last) and, on CUDA, pinned host
buffers reused across calls, so a call costs one host-to-device copy of the inputs and one
device-to-host copy of ``B x M`` priors and ``B`` values.

Legal moves come as a padded index array, not a Python list per position: row ``b`` of
``legal (B, M)`` holds the policy indices (``piece_id * cells + destination``) of position ``b``'s
legal moves in its first ``counts[b]`` entries; the rest is padding (any value). Without
``counts``, every negative entry is padding. The priors come back in the same layout: a softmax
of the logits over the first ``counts[b]`` entries, zero on the padding, so every row with at
least one legal move sums to 1 and a row with exactly one legal move gets 1.0. Masking is a
gather plus a masked softmax over the whole batch; nothing in Python runs per position.

Weights are loaded with ``torch.load(..., weights_only=True)`` only (see ``learner.model``).
"""

from __future__ import annotations

import copy
import os
from typing import Any, Mapping, NamedTuple

import numpy as np
import torch
from torch import Tensor

from learner.backends import ONNX_BACKENDS, resolve_backend
from learner.model import NetConfig, PolicyValueNet, load_net
from learner.onnx_backend import OnnxRunner

__all__ = ["Evaluation", "Inference", "OpponentEvaluation", "masked_priors", "resolve_device"]


class Evaluation(NamedTuple):
    """What :meth:`Inference.evaluate` returns (a tuple: ``priors, values = ev`` works too)."""

    priors: np.ndarray
    """``(B, M)`` float32: probabilities of ``legal[b, :counts[b]]``, zero on padding."""
    values: np.ndarray
    """``(B,)`` float32 in ``[-1, 1]``, from the perspective of the player to move; ``(B, P)``,
    each seat's expected share in the mover's frame (mover first), for a value head with one
    output per seat (``NetConfig.value_outputs``)."""


class OpponentEvaluation(NamedTuple):
    """What :meth:`Inference.evaluate_opponent` returns: :class:`Evaluation`'s two arrays and the
    opponent head's logits."""

    priors: np.ndarray
    """``(B, M)`` float32, as :attr:`Evaluation.priors`."""
    values: np.ndarray
    """``(B,)`` float32, as :attr:`Evaluation.values`."""
    opponent_logits: np.ndarray
    """``(B, policy_size)`` float32: raw logits of the opponent's reply, in the network's frame."""


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"``/None: CUDA when present, else CPU; anything else as ``torch.device``."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def masked_priors(logits: Tensor, legal: Tensor, mask: Tensor) -> Tensor:
    """Softmax of ``logits`` restricted to the indices ``legal`` where ``mask`` holds.

    ``logits (B, P)`` any float dtype, ``legal (B, M)`` int64 (values under ``~mask`` ignored),
    ``mask (B, M)`` bool. Returns float32 ``(B, M)``, zero under ``~mask``; a row with no legal
    move is all zeros.
    """
    idx = torch.where(mask, legal, torch.zeros((), dtype=legal.dtype, device=legal.device))
    g = logits.float().gather(1, idx).masked_fill_(~mask, float("-inf"))
    p = torch.softmax(g, dim=1)
    # All-padding rows are NaN after the softmax; padding is exactly zero either way.
    return p.masked_fill_(~mask, 0.0)


class Inference:
    """Evaluate batches of encoded positions: ``evaluate(planes, legal, counts) -> Evaluation``.

    Parameters (keyword-only after ``model``):

    - ``backend``: one of ``learner.backends.BACKENDS`` (default ``auto``: ONNX Runtime in 8 bits on
      CPU, or in float32 when no ``calibration`` is given; PyTorch on CUDA). ``compile`` wraps the
      inference copy in ``torch.compile(dynamic=True)``: the first call then compiles for about
      30 s on CPU, worth it only for long-lived processes; weight updates copy into the compiled
      module in place and do not recompile. ``onnx`` exports the copy to an ONNX Runtime session
      (float32; a weight update re-exports it); ``onnx-int8`` quantizes that graph to 8 bits (CPU
      only; needs ``calibration``).
    - ``device``: ``"auto"`` (CUDA when present, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
    - ``half``: run the network in float16 (CUDA only; default: on for CUDA). Priors are still
      computed in float32 from the logits.
    - ``channels_last``: NHWC memory format (CUDA only; default: on for CUDA).
    - ``fuse``: fold batch norms into convolutions (default on; same function, fewer kernels).
    - ``threads``: if given, ``torch.set_num_threads(threads)``. This is process-wide: self-play
      actors run one thread each (``threads=1``) and parallelise across processes.
    - ``calibration``: encoded positions ``(N, in_planes, n, n)`` that set the 8-bit activation
      ranges of ``onnx-int8`` (``learner.onnx_backend.calibration_planes``); other backends
      ignore it.
    - ``max_batch``: initial capacity of the pinned CUDA buffers (they grow on demand).

    ``evaluate`` runs a private inference copy; the wrapped ``model`` keeps its mode and modules.
    :meth:`load_state_dict` (new weights from the learner) loads into ``model`` and then
    :meth:`refresh` re-derives the copy.
    Not thread-safe: one instance per thread (the CUDA buffers are reused between calls).
    """

    def __init__(
        self,
        model: PolicyValueNet,
        *,
        backend: str = "auto",
        device: str | torch.device | None = "auto",
        half: bool | None = None,
        channels_last: bool | None = None,
        fuse: bool = True,
        threads: int | None = None,
        max_batch: int = 256,
        calibration: np.ndarray | None = None,
    ) -> None:
        self.device = resolve_device(device)
        self.backend = resolve_backend(backend, self.device.type)
        if self.backend == "onnx-int8" and calibration is None:
            if backend != "auto":
                raise ValueError("the onnx-int8 backend needs calibration planes (positions of the game)")
            self.backend = "onnx"  # 8 bits need positions of the game to set their ranges
        self.cuda = self.device.type == "cuda"
        torch_on_cuda = self.cuda and self.backend not in ONNX_BACKENDS
        self.half = bool(self.cuda if half is None else half) and torch_on_cuda
        self.channels_last = bool(self.cuda if channels_last is None else channels_last) and torch_on_cuda
        self.fuse = fuse
        if threads is not None:
            torch.set_num_threads(int(threads))
        self.model = model
        self.config: NetConfig = model.config
        self._dtype = torch.float16 if self.half else torch.float32
        self._capacity_b = 0
        self._capacity_m = 0
        self._base = self._build()
        self.net: torch.nn.Module = self._base
        self._onnx: OnnxRunner | None = None
        if self.backend == "compile":
            self.net = torch.compile(self._base, dynamic=True)  # type: ignore[assignment]
        elif self.backend in ONNX_BACKENDS:
            n_threads = torch.get_num_threads() if threads is None else int(threads)
            self._onnx = OnnxRunner(self._base, device=self.device, threads=n_threads,
                                    calibration=calibration if self.backend == "onnx-int8" else None)
        if torch_on_cuda:
            self._grow(max(1, max_batch), 64)

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def from_checkpoint(
        cls, source: str | os.PathLike[str] | Mapping[str, Any], *, config: NetConfig | None = None, **kwargs: Any
    ) -> Inference:
        """From a file or dict written by ``learner.model.save_net``/``net_state`` (read with
        ``weights_only=True``), or a bare ``state_dict`` plus ``config``."""
        return cls(load_net(source, config=config), **kwargs)

    @classmethod
    def from_config(cls, config: NetConfig, state_dict: Mapping[str, Tensor] | None = None, **kwargs: Any) -> Inference:
        """A fresh network of ``config`` (Xavier init), optionally loaded with ``state_dict``."""
        model = PolicyValueNet(config)
        if state_dict is not None:
            model.load_state_dict(state_dict)
        return cls(model, **kwargs)

    def _build(self) -> torch.nn.Module:
        net = copy.deepcopy(self.model).cpu().eval()
        if self.fuse:
            net.fuse_()
        for p in net.parameters():
            p.requires_grad_(False)
        net = net.to(self.device, dtype=self._dtype)
        if self.channels_last:
            net = net.to(memory_format=torch.channels_last)
        return net

    def refresh(self) -> None:
        """Re-derive the inference copy from ``self.model`` (after its weights changed). The copy's
        tensors are overwritten in place, so a compiled module stays compiled; the ONNX session is
        rebuilt from it."""
        with torch.no_grad():
            self._base.load_state_dict(self._build().state_dict())
        if self._onnx is not None:
            self._onnx.load(self._base)

    def load_state_dict(self, state_dict: Mapping[str, Tensor]) -> None:
        """Take new weights (an unfused ``PolicyValueNet`` state_dict) and rebuild."""
        self.model.load_state_dict(state_dict)
        self.refresh()

    # ---- evaluation ---------------------------------------------------------------------------

    def _checked(
        self, planes: np.ndarray, legal: np.ndarray, counts: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The inputs of an evaluation as arrays, checked: ``(planes, legal, mask)``."""
        planes = np.ascontiguousarray(planes, dtype=np.float32)
        legal = np.asarray(legal)
        counts = None if counts is None else np.asarray(counts)
        self._check(planes, legal, counts)
        mask = self._mask_np(legal, counts)
        self._check_indices(legal, mask)
        return planes, legal, mask

    def _check(self, planes: np.ndarray, legal: np.ndarray, counts: np.ndarray | None) -> None:
        cfg = self.config
        if planes.ndim != 4 or planes.shape[1:] != (cfg.in_planes, cfg.n, cfg.n):
            raise ValueError(
                f"planes have shape {planes.shape}; expected (B, {cfg.in_planes}, {cfg.n}, {cfg.n})")
        if legal.ndim != 2 or legal.shape[0] != planes.shape[0]:
            raise ValueError(f"legal has shape {legal.shape}; expected ({planes.shape[0]}, M)")
        if counts is not None and counts.shape != (planes.shape[0],):
            raise ValueError(f"counts has shape {counts.shape}; expected ({planes.shape[0]},)")
        if counts is not None and counts.size and (counts.min() < 0 or counts.max() > legal.shape[1]):
            raise ValueError(f"counts must lie in [0, {legal.shape[1]}]")

    @staticmethod
    def _mask_np(legal: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
        if counts is None:
            return legal >= 0
        return np.arange(legal.shape[1]) < counts[:, None]

    def _check_indices(self, legal: np.ndarray, mask: np.ndarray) -> None:
        if legal.size == 0:
            return
        idx = np.where(mask, legal, 0)
        if idx.min() < 0 or idx.max() >= self.config.policy_size:
            raise ValueError(f"legal policy indices must lie in [0, {self.config.policy_size})")

    def evaluate(self, planes: np.ndarray, legal: np.ndarray, counts: np.ndarray | None = None) -> Evaluation:
        """Priors over each position's legal moves and the values of the positions.

        ``planes``: ``(B, in_planes, n, n)`` float32 (other dtypes are converted).
        ``legal``: ``(B, M)`` int32/int64 policy indices, padded. ``counts``: ``(B,)`` ints, the
        number of real entries per row; None means negative entries are padding.
        Returns :class:`Evaluation` ``(priors (B, M) float32, values (B,) float32)``, fresh arrays.
        """
        planes, legal, mask = self._checked(planes, legal, counts)
        if planes.shape[0] == 0:
            return Evaluation(np.zeros(legal.shape, np.float32), self._no_values())
        if self.cuda and self._onnx is None:
            return self._evaluate_cuda(planes, legal, mask)
        with torch.inference_mode():
            if self._onnx is not None:
                logits_np, values_np = self._onnx(planes)
                logits, values = torch.from_numpy(logits_np), torch.from_numpy(values_np)
            else:
                logits, values = self.net(torch.from_numpy(planes))[:2]
            priors = masked_priors(logits, torch.from_numpy(legal.astype(np.int64, copy=False)), torch.from_numpy(mask))
        return Evaluation(priors.numpy(), values.float().numpy())

    def evaluate_opponent(
        self, planes: np.ndarray, legal: np.ndarray, counts: np.ndarray | None = None
    ) -> OpponentEvaluation:
        """:meth:`evaluate` plus the opponent head's logits ``(B, policy_size)`` float32 (network
        frame, unmasked: the opponent's legal moves depend on the move not yet made). One network
        run for all three. A network without the opponent head is a ``ValueError``."""
        if not self.config.opponent_head:
            raise ValueError("this network has no opponent head (train it with network.opponent_head=true)")
        planes, legal, mask = self._checked(planes, legal, counts)
        if planes.shape[0] == 0:
            return OpponentEvaluation(np.zeros(legal.shape, np.float32), self._no_values(),
                                      np.zeros((0, self.config.policy_size), np.float32))
        with torch.inference_mode():
            if self._onnx is not None:
                logits_np, values_np, opponent_np = self._onnx.opponent(planes)
                logits, values = torch.from_numpy(logits_np), torch.from_numpy(values_np)
                opponent = torch.from_numpy(opponent_np)
            else:
                logits, values, opponent = self.net(self._input(planes))
            legal_t = torch.from_numpy(legal.astype(np.int64, copy=False)).to(logits.device)
            priors = masked_priors(logits, legal_t, torch.from_numpy(mask).to(logits.device))
            return OpponentEvaluation(priors.cpu().numpy(), values.float().cpu().numpy(),
                                      opponent.float().cpu().numpy())

    def _no_values(self) -> np.ndarray:
        """The values of an empty batch, shaped as the value head's."""
        outputs = self.config.value_outputs
        return np.zeros(0 if outputs == 1 else (0, outputs), np.float32)

    def _input(self, planes: np.ndarray) -> Tensor:
        """``planes`` as the inference copy's input tensor (device, dtype, memory format)."""
        x = torch.from_numpy(planes).to(self.device, dtype=self._dtype)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    def logits(self, planes: np.ndarray, *, opponent: bool = False) -> tuple[np.ndarray, ...]:
        """Unmasked ``(policy logits (B, policy_size), values (B,))`` as float32 numpy arrays;
        with ``opponent``, the opponent head's logits ``(B, policy_size)`` as a third (a network
        without the head is a ``ValueError``)."""
        if opponent and not self.config.opponent_head:
            raise ValueError("this network has no opponent head (train it with network.opponent_head=true)")
        planes = np.ascontiguousarray(planes, dtype=np.float32)
        if self._onnx is not None:
            return self._onnx.opponent(planes) if opponent else self._onnx(planes)
        with torch.inference_mode():
            out = self.net(self._input(planes))
            return tuple(t.float().cpu().numpy() for t in out[: 3 if opponent else 2])

    __call__ = evaluate

    # ---- CUDA path: pinned staging buffers, one copy each way -----------------------------------

    def _grow(self, b: int, m: int) -> None:
        cap_b = max(b, self._capacity_b)
        cap_m = max(m, self._capacity_m)
        if cap_b == self._capacity_b and cap_m == self._capacity_m:
            return
        cfg = self.config
        per = cfg.in_planes * cfg.n * cfg.n
        pin = dict(pin_memory=True)
        self._planes_h = torch.empty(cap_b * per, dtype=torch.float32, **pin)
        self._legal_h = torch.empty(cap_b * cap_m, dtype=torch.int64, **pin)
        self._mask_h = torch.empty(cap_b * cap_m, dtype=torch.bool, **pin)
        self._priors_h = torch.empty(cap_b * cap_m, dtype=torch.float32, **pin)
        self._values_h = torch.empty(cap_b * cfg.value_outputs, dtype=torch.float32, **pin)
        self._capacity_b, self._capacity_m = cap_b, cap_m

    def _evaluate_cuda(self, planes: np.ndarray, legal: np.ndarray, mask: np.ndarray) -> Evaluation:
        cfg = self.config
        b, m = legal.shape
        if b > self._capacity_b or m > self._capacity_m:
            self._grow(max(b, 2 * self._capacity_b) if b > self._capacity_b else b, max(m, 64))
        shape = (b, cfg.in_planes, cfg.n, cfg.n)
        planes_h = self._planes_h[: planes.size].view(shape)
        legal_h = self._legal_h[: b * m].view(b, m)
        mask_h = self._mask_h[: b * m].view(b, m)
        planes_h.numpy()[...] = planes
        legal_h.numpy()[...] = legal
        mask_h.numpy()[...] = mask
        with torch.inference_mode():
            x = planes_h.to(self.device, non_blocking=True).to(self._dtype)
            if self.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            logits, values = self.net(x)[:2]
            priors = masked_priors(
                logits, legal_h.to(self.device, non_blocking=True), mask_h.to(self.device, non_blocking=True))
            priors_h = self._priors_h[: b * m].view(b, m)
            values_h = self._values_h[: b * cfg.value_outputs].view(values.shape)
            priors_h.copy_(priors, non_blocking=True)
            values_h.copy_(values.float(), non_blocking=True)
            torch.cuda.current_stream(self.device).synchronize()
        # Copies: the pinned buffers are overwritten by the next call.
        return Evaluation(priors_h.numpy().copy(), values_h.numpy().copy())
