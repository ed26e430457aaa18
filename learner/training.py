"""The learner's training step: the seed paper's loss, its optimiser, and a faster default.

Loss (Liu et al. 2019, eq. 6, read as AlphaGo Zero's; see docs/LEARNER.md for the readings)::

    total = value_loss_weight * mean_b (v_b - z_b)^2          value_mse
          + mean_b ( - sum_a pi_ba * log softmax(logits_b)_a )  policy_ce
          + l2 * sum_{w in weights} sum(w ** 2)                 l2
          [+ opponent_loss_weight * mean_{b with a target}
               ( - sum_a pi'_ba * log softmax(opponent_b)_a )    opponent_ce]

Three or more players (a value head with one softmax output per seat, ``NetConfig.value_outputs``
= P > 1), the value term is a cross-entropy instead, ``value_ce = mean_b ( - sum_i z_bi * log
v_bi )``, against the result vector ``z`` in the mover's frame (entry 0 the mover, then the seats
after it), or whatever mix with the search's root value vector the replay buffer was asked for.
Two players keep the seed's single tanh output and its squared error, against the mover's share
minus the other's (:func:`value_target`).

Two more terms for a network with KataGo's auxiliary heads (``NetConfig.ownership_head``,
``score_head``; ``learner.aux_targets``)::

          [+ ownership_loss_weight * mean_b mean_{goal cells c} CE(ownership_bc, final occupant_bc)]
          [+ score_loss_weight * mean_b mean_i (sigmoid(score_bi) - s_bi)^2                        ]

where ``s_b`` is each seat's final progress and the share of the move limit left (the batch's
``aux``). With a per-position ``weight`` in the batch (policy surprise weighting, in the records)
every per-position term is a weighted mean, ``mean_b w_b * term_b``; all 1 is the plain mean.

The last term only for a network with the opponent head (``NetConfig.opponent_head``, not in the
paper): ``pi'`` is the search distribution of the next ply (the opponent's reply), in the frame of
the position's mover; rows without one (a pass, the game's last position, a reply played without
search) are all zeros and left out of the mean.

``weights`` are the convolution and dense-layer *kernels* only (no biases, no batch-norm scale or
shift), as the paper's released Keras code regularises them (``kernel_regularizer=l2(c)``, which
adds ``c * sum(w ** 2)``). The L2 term is an explicit loss term, not optimiser weight decay, so the
reported loss is the paper's loss.

A training batch is any object with numpy (or torch) attributes ``planes (B, C, n, n) float32``,
``policy (B, policy_size) float32`` (a dense target distribution per row) and ``value (B, P)
float32`` (the value target as shares of the P seats in the mover's frame: the result vector z, or
whatever mix of z and the root value vector q the replay buffer was asked for; the loss uses the
target it is given), and for a network with the opponent head ``opponent_policy (B,
policy_size) float32`` as well.

Weights leave the learner as :meth:`Trainer.export_weights` -- ``(version, {name: ndarray})``, plain
numpy arrays that Ray or msgpack carry without pickling torch objects -- and enter an actor's or
the evaluator's network through :func:`load_weights_into`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from plumbing.fields import FieldError, build_config, check_fields, checked
from learner.model import NetConfig, PolicyValueNet

__all__ = [
    "LearnerConfig",
    "LossWeights",
    "Trainer",
    "cpu_has_bfloat16",
    "l2_parameters",
    "load_weights_into",
    "loss_terms",
    "lr_at",
    "resolve_device",
]

log = logging.getLogger("hopzero.learner")

OPTIMIZERS = ("sgd_nesterov", "adamw")
SCHEDULES = ("constant", "cosine", "step")
DEVICES = ("auto", "cpu", "cuda")
AMP_DTYPES = ("float16", "bfloat16")
CPU_AMP_MODES = ("off", "auto", "on")


def _increasing(steps: tuple[int, ...]) -> bool:
    return all(a < b for a, b in zip(steps, steps[1:]))


def _device(name: str) -> bool:
    return name in DEVICES or (name.startswith("cuda:") and name[5:].isdigit())


@dataclass(frozen=True, kw_only=True)
class LearnerConfig:
    """Everything the learner's optimisation depends on. Defaults are ours (:meth:`fast`);
    :meth:`paper` gives the seed paper's Table 1. Variants by :func:`dataclasses.replace`."""

    optimizer: str = checked("sgd_nesterov", choices=OPTIMIZERS)
    """``"sgd_nesterov"`` or ``"adamw"``. Paper: SGD + Nesterov. Ours: the same (docs/LEARNER.md)."""
    lr: float = checked(0.1, gt=0)
    """Peak learning rate (after warm-up). Paper: 1e-4. Ours: 0.1 (1,000x the paper's; with batch
    256 it reached the paper setting's held-out loss after ~5% of the samples, docs/LEARNER.md)."""
    momentum: float = checked(0.9, ge=0, lt=1)
    """SGD momentum (Nesterov), or AdamW's beta1. Paper: not given; its code: 0.9 (Keras SGD)."""
    l2: float = checked(1e-4, ge=0)
    """Coefficient of the explicit L2 loss term ``l2 * sum(w ** 2)`` over kernels. Paper: 1e-4 in
    the heuristic stage (1), 5e-3 in the MCTS stage (2). Ours: 1e-4."""
    weight_decay: float = checked(0.0, ge=0)
    """Optimiser-side decay of the same kernels (decoupled for AdamW, coupled for SGD); not part of
    the reported loss. Paper: 0 (it regularises through ``l2``). Ours: 0 (use ~1e-2 with AdamW,
    and ``l2=0``)."""
    batch_size: int = checked(256, ge=1)
    """Samples per training step (the replay buffer draws batches of this size). Paper: 32."""
    lr_schedule: str = checked("cosine", choices=SCHEDULES)
    """``"constant"``, ``"cosine"`` (to ``min_lr_ratio * lr`` at ``total_steps``, flat after) or
    ``"step"`` (times ``lr_gamma`` at each of ``lr_milestones``). Paper: constant."""
    warmup_steps: int = checked(200, ge=0)
    """Linear warm-up from ``lr / warmup_steps`` to ``lr`` over this many steps. Paper: 0."""
    total_steps: int = checked(100_000, ge=0)
    """Horizon of the cosine schedule, in steps. Paper: no schedule."""
    min_lr_ratio: float = checked(0.1, ge=0, le=1)
    """Floor of the cosine schedule as a fraction of ``lr``. Paper: no schedule."""
    lr_milestones: tuple[int, ...] = checked((), ge=1, test=_increasing, means="a list of increasing step counts >= 1",
                                             bad=((5, 3),))
    """Steps at which the ``step`` schedule multiplies the rate by ``lr_gamma``. Paper: none."""
    lr_gamma: float = checked(0.1, gt=0)
    """Factor of the ``step`` schedule. Paper: no schedule."""
    grad_clip: float = checked(5.0, ge=0)
    """Clip the global gradient norm to this (0: no clipping; the norm is reported either way).
    Paper: none. Ours: 5, a guard against the loss spikes the paper's Fig. 10 shows."""
    value_loss_weight: float = checked(1.0, ge=0)
    """Weight of the value MSE in the total loss (the policy CE has weight 1). Paper: 1
    ("an unweighted sum"; its code: ``LOSS_WEIGHTS`` 1 and 1)."""
    opponent_loss_weight: float = checked(0.15, ge=0)
    """Weight of the opponent head's cross-entropy (only with ``network.opponent_head``). Paper:
    no such head. Ours: 0.15, KataGo's weight for its opponent-policy target."""
    ownership_loss_weight: float = checked(1.5, ge=0)
    """Weight of the ownership head's cross-entropy, a mean over the goal cells (only with
    ``network.ownership_head``). Paper: no such head. Ours: 1.5, KataGo's weight for its
    ownership term, which is a mean over the board's points too."""
    score_loss_weight: float = checked(1.0, ge=0)
    """Weight of the score head's squared error, a mean over its outputs (only with
    ``network.score_head``). Paper: no such head. Ours: 1.0 (KataGo's score terms are Go's
    point distributions, with no counterpart to copy)."""
    amp: bool = checked(True)
    """Mixed precision on CUDA (autocast; a GradScaler for float16); ignored on CPU. Paper: no."""
    amp_dtype: str = checked("float16", choices=AMP_DTYPES)
    """Autocast dtype: ``"float16"`` (with GradScaler) or ``"bfloat16"`` (no scaler needed)."""
    cpu_amp: str = checked("off", choices=CPU_AMP_MODES)
    """bfloat16 autocast on CPU: ``"on"``, ``"off"``, or ``"auto"`` (on where the CPU computes
    bfloat16 natively, :func:`cpu_has_bfloat16`; elsewhere it is emulated, and may be slower than
    float32). On an AMD EPYC with AVX512_BF16 the star2 network trains 1.6x the steps a second
    (docs/BENCHMARKS.md). Paper: no."""
    weight_average: float = checked(0.0, ge=0, lt=1)
    """Decay per step of an exponential moving average of the weights (batch-norm statistics
    included), which the learner publishes in place of the last step's weights: candidates, the
    stage-1 network, checkpoints read as players. 0: off, the last step's weights. Averaging the
    weights a noisy optimiser visits finds a flatter, better point than its last one (Izmailov et
    al. 2018, SWA); KataGo and Leela Chess Zero play averaged weights. A decay of 0.999 averages over
    about the last 1,000 steps. Paper: no."""
    channels_last: bool = checked(True)
    """NHWC memory format on CUDA (faster convolutions under AMP); ignored on CPU."""
    device: str = checked("auto", test=_device, means="'auto', 'cpu', 'cuda' or 'cuda:N'", bad=("gpu", "cuda:x"))
    """``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``."""
    checkpoint_every_steps: int = checked(1000, ge=1)
    """Write a checkpoint every this many steps (the driver asks :attr:`Trainer.checkpoint_due`)."""
    publish_every_steps: int = checked(200, ge=1)
    """Publish candidate weights every this many steps (:attr:`Trainer.publish_due`). Paper: a new
    version after each episode (5 epochs over ~18,000 examples at batch 32, about 2,800 steps)."""
    keep_checkpoints: int = checked(3, ge=1)
    """How many checkpoint files :func:`learner.checkpoint.save_checkpoint` keeps."""
    name: str = checked("fast")
    """Preset this config came from (informational; kept in checkpoints)."""

    def __post_init__(self) -> None:
        check_fields(self)
        if self.lr_schedule == "cosine" and self.total_steps <= self.warmup_steps:
            raise FieldError("total_steps", f"must exceed warmup_steps ({self.warmup_steps}) with the cosine "
                                            f"schedule, got {self.total_steps}")

    # ---- presets ------------------------------------------------------------------------------

    @classmethod
    def paper(cls, stage: int = 2) -> LearnerConfig:
        """The seed paper's Table 1: SGD + Nesterov (momentum 0.9, from its code), lr 1e-4
        constant, batch 32, L2 1e-4 in stage 1 (heuristic-guided) or 5e-3 in stage 2 (MCTS, the
        default: the self-play loop), no clipping, no mixed precision."""
        if stage not in (1, 2):
            raise ValueError(f"paper stage must be 1 (heuristic) or 2 (MCTS), not {stage!r}")
        return cls(
            optimizer="sgd_nesterov", lr=1e-4, momentum=0.9, l2=1e-4 if stage == 1 else 5e-3,
            weight_decay=0.0, batch_size=32, lr_schedule="constant", warmup_steps=0, total_steps=0,
            min_lr_ratio=0.0, lr_milestones=(), lr_gamma=0.1, grad_clip=0.0, value_loss_weight=1.0,
            amp=False, channels_last=False, publish_every_steps=2800, name=f"paper-stage{stage}",
        )

    @classmethod
    def fast(cls, **overrides: Any) -> LearnerConfig:
        """Our default (the field defaults), with ``overrides`` (unknown names are an error)."""
        return cls.from_dict({**cls().to_dict(), **overrides}) if overrides else cls()

    # ---- plain data ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """All fields as JSON-ready plain types (tuples become lists)."""
        d = dataclasses.asdict(self)
        d["lr_milestones"] = list(self.lr_milestones)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LearnerConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error (a typo must not pass silently)."""
        return build_config(cls, dict(data))  # type: ignore[no-any-return]


# ---- learning-rate schedule ---------------------------------------------------------------------


def lr_at(config: LearnerConfig, step: int) -> float:
    """Learning rate for the optimiser step taken when ``step`` steps are already done.

    A pure function of the step count, so resuming needs no scheduler object, only ``steps``.
    """
    base = config.lr
    if config.warmup_steps and step < config.warmup_steps:
        return base * (step + 1) / config.warmup_steps
    if config.lr_schedule == "constant":
        return base
    if config.lr_schedule == "step":
        return base * config.lr_gamma ** sum(step >= m for m in config.lr_milestones)
    # cosine from the end of warm-up to total_steps, then flat at the floor
    span = config.total_steps - config.warmup_steps
    t = min(max(step - config.warmup_steps, 0), span) / span
    floor = base * config.min_lr_ratio
    return floor + (base - floor) * 0.5 * (1.0 + math.cos(math.pi * t))


# ---- loss ---------------------------------------------------------------------------------------


def l2_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The kernels the L2 term and weight decay cover: every ``Conv2d``/``Linear`` weight.

    Biases and batch-norm scale/shift are excluded, as in the paper's Keras code (where the
    regulariser is a ``kernel_regularizer``); penalising a batch-norm scale only fights the
    normalisation the next layer undoes.
    """
    return [m.weight for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def _as_tensor(x: Any, device: torch.device) -> Tensor:
    t = torch.as_tensor(np.ascontiguousarray(x, dtype=np.float32)) if not isinstance(x, Tensor) else x
    if t.dtype != torch.float32:
        t = t.float()
    if t.device != device:
        t = t.to(device, non_blocking=True)
    return t


class _Targets(NamedTuple):
    """A batch's targets as tensors; None for what the network or the batch does not have."""

    policy: Tensor
    value: Tensor
    opponent: Tensor | None
    ownership: Tensor | None
    score: Tensor | None
    weight: Tensor | None
    """Per-position loss weights; None when every weight is 1 (the plain means, bit for bit)."""


def _aux_tensors(batch: Any, config: NetConfig, b: int, device: torch.device) -> tuple[Tensor | None, Tensor | None]:
    """The auxiliary heads' targets (``batch.aux``, ``learner.aux_targets.AuxBatch``), checked."""
    if not (config.ownership_head or config.score_head):
        return None, None
    aux = getattr(batch, "aux", None)
    if aux is None:
        raise ValueError("the network has auxiliary heads (ownership, score): the batch needs aux "
                         "(the replay window gives it with an AuxTargetStore)")
    ownership = score = None
    if config.ownership_head:
        ownership = torch.as_tensor(np.asarray(aux.ownership, dtype=np.int64)).to(device)
        if tuple(ownership.shape) != (b, config.n * config.n):
            raise ValueError(f"batch.aux.ownership has shape {tuple(ownership.shape)}; expected ({b}, "
                             f"{config.n * config.n})")
    if config.score_head:
        score = _as_tensor(aux.score, device)
        if tuple(score.shape) != (b, config.players + 1):
            raise ValueError(f"batch.aux.score has shape {tuple(score.shape)}; expected ({b}, {config.players + 1})")
    return ownership, score


def _weight_tensor(batch: Any, b: int, device: torch.device) -> Tensor | None:
    weight = getattr(batch, "weight", None)
    if weight is None:
        return None
    weight = np.asarray(weight, dtype=np.float32)
    if weight.shape != (b,) or not np.isfinite(weight).all() or (weight < 0).any():
        raise ValueError(f"batch.weight must be {b} finite weights >= 0, got shape {weight.shape}")
    return None if (weight == 1.0).all() else _as_tensor(weight, device)


def _batch_tensors(batch: Any, config: NetConfig, device: torch.device) -> tuple[Tensor, _Targets]:
    """``planes`` and the :class:`_Targets` as tensors on ``device``, shapes checked;
    ``opponent`` is None for a network without the opponent head, the auxiliary targets for one
    without those heads."""
    try:
        planes, policy, value = batch.planes, batch.policy, batch.value
    except AttributeError as e:
        raise TypeError(f"a training batch needs attributes planes, policy and value ({e})") from None
    opponent = None
    if config.opponent_head:
        opponent = getattr(batch, "opponent_policy", None)
        if opponent is None:
            raise ValueError("the network has the opponent head: the batch needs opponent_policy "
                             "(the replay window gives it with opponent_target=True)")
        opponent = _as_tensor(opponent, device)
    planes, policy, value = (_as_tensor(x, device) for x in (planes, policy, value))
    b = planes.shape[0] if planes.ndim else 0
    if planes.ndim != 4 or tuple(planes.shape[1:]) != (config.in_planes, config.n, config.n) or b < 1:
        raise ValueError(f"batch.planes has shape {tuple(planes.shape)}; expected "
                         f"(B >= 1, {config.in_planes}, {config.n}, {config.n})")
    if tuple(policy.shape) != (b, config.policy_size):
        raise ValueError(f"batch.policy has shape {tuple(policy.shape)}; expected ({b}, {config.policy_size})")
    players = 2 if config.value_outputs == 1 else config.value_outputs
    if tuple(value.shape) != (b, players):
        raise ValueError(f"batch.value has shape {tuple(value.shape)}; expected ({b}, {players}) (one share per "
                         "seat, the mover's frame)")
    value = value_target(value, config.value_outputs)
    if opponent is not None and tuple(opponent.shape) != (b, config.policy_size):
        raise ValueError(f"batch.opponent_policy has shape {tuple(opponent.shape)}; "
                         f"expected ({b}, {config.policy_size})")
    ownership, score = _aux_tensors(batch, config, b, device)
    return planes, _Targets(policy, value, opponent, ownership, score, _weight_tensor(batch, b, device))


def value_target(shares: Tensor, outputs: int) -> Tensor:
    """What a value head of ``outputs`` outputs learns from the value targets ``shares`` (``(B, P)``,
    the mover's frame): the shares themselves for a softmax over the seats, and for the one tanh
    output of a two-player network the mover's share minus the other's (``z`` on ``[-1, 1]``)."""
    return shares[:, 0] - shares[:, 1] if outputs == 1 else shares


@dataclass(frozen=True)
class LossWeights:
    """The coefficients of the loss terms (``LearnerConfig``'s)."""

    l2: float
    value: float
    opponent: float
    ownership: float
    score: float

    @classmethod
    def of(cls, config: LearnerConfig) -> LossWeights:
        return cls(l2=config.l2, value=config.value_loss_weight, opponent=config.opponent_loss_weight,
                   ownership=config.ownership_loss_weight, score=config.score_loss_weight)


def _mean(rows: Tensor, weight: Tensor | None) -> Tensor:
    """The mean of per-position terms, weighted when there are weights."""
    return torch.mean(rows) if weight is None else torch.mean(rows * weight)


def _terms(outputs: dict[str, Tensor], targets: _Targets, kernels: list[nn.Parameter],
           coef: LossWeights) -> dict[str, Tensor]:
    # float32 even under autocast: log-softmax over 294 logits and small squared errors are
    # where half precision loses the most.
    logits, v = outputs["policy"].float(), outputs["value"].float()
    w, value = targets.weight, targets.value
    if v.ndim == 2:   # one share per seat: cross-entropy against the result vector
        value_key = "value_ce"
        value_term = -_mean(torch.sum(value * torch.log(torch.clamp(v, min=1e-7)), dim=1), w)
    else:
        value_key = "value_mse"
        value_term = _mean((v - value) ** 2, w)
    policy_ce = -_mean(torch.sum(targets.policy * torch.log_softmax(logits, dim=1), dim=1), w)
    if coef.l2 > 0:
        l2_term = coef.l2 * torch.stack([torch.sum(k.float() ** 2) for k in kernels]).sum()
    else:
        l2_term = torch.zeros((), device=logits.device)
    total = coef.value * value_term + policy_ce + l2_term
    terms = {value_key: value_term, "policy_ce": policy_ce, "l2": l2_term}
    if targets.opponent is not None:
        opponent = targets.opponent
        per_row = -torch.sum(opponent * torch.log_softmax(outputs["opponent"].float(), dim=1), dim=1)
        has_target = (opponent.sum(dim=1) > 0).float()
        if w is not None:
            per_row = per_row * w
        # The mean over the rows that have a reply to predict (0 when none has).
        opponent_ce = torch.sum(per_row * has_target) / torch.clamp(has_target.sum(), min=1.0)
        total = total + coef.opponent * opponent_ce
        terms["opponent_ce"] = opponent_ce
    if targets.ownership is not None:
        own = outputs["ownership"].float().flatten(2)                   # (B, P + 1, n * n)
        cells = (targets.ownership >= 0).float()
        ce = nn.functional.cross_entropy(own, targets.ownership, ignore_index=-1, reduction="none")
        # per position: the mean over its goal cells
        ownership_ce = _mean(ce.sum(dim=1) / torch.clamp(cells.sum(dim=1), min=1.0), w)
        total = total + coef.ownership * ownership_ce
        terms["ownership_ce"] = ownership_ce
    if targets.score is not None:
        score_mse = _mean(torch.mean((torch.sigmoid(outputs["score"].float()) - targets.score) ** 2, dim=1), w)
        total = total + coef.score * score_mse
        terms["score_mse"] = score_mse
    terms["total"] = total
    return terms


def loss_terms(
    model: PolicyValueNet, batch: Any, *, l2: float = 0.0, value_loss_weight: float = 1.0,
    opponent_loss_weight: float = 0.15, ownership_loss_weight: float = 1.5, score_loss_weight: float = 1.0,
) -> dict[str, Tensor]:
    """The loss of ``model`` on ``batch``: 0-d tensors ``value_mse`` (``value_ce`` for a value head
    with one output per seat), ``policy_ce``, ``l2`` (the
    weighted term ``l2 * sum(w ** 2)``, see :func:`l2_parameters`), ``opponent_ce``,
    ``ownership_ce`` and ``score_mse`` (with those heads only: unweighted, ``total`` weighs
    them) and ``total``.

    Runs the model in whatever mode it is in (training mode: batch statistics); differentiable.
    """
    device = next(model.parameters()).device
    planes, targets = _batch_tensors(batch, model.config, device)
    coef = LossWeights(l2=l2, value=value_loss_weight, opponent=opponent_loss_weight,
                       ownership=ownership_loss_weight, score=score_loss_weight)
    return _terms(model.outputs(planes), targets, l2_parameters(model), coef)


# ---- weights in transit -------------------------------------------------------------------------


def load_weights_into(model: nn.Module, arrays: Mapping[str, np.ndarray]) -> None:
    """Load ``arrays`` (from :meth:`Trainer.export_weights`) into ``model``, strictly.

    Every name of ``model.state_dict()`` must be present with the same shape and no other name
    may be; otherwise ``ValueError`` lists what differs. Values are converted to each entry's
    dtype. For an :class:`learner.inference.Inference`, load into ``inf.model`` and call
    ``inf.refresh()``.
    """
    own = model.state_dict()
    missing = sorted(set(own) - set(arrays))
    unexpected = sorted(set(arrays) - set(own))
    shapes = [f"{k}: got {tuple(np.shape(arrays[k]))}, expected {tuple(own[k].shape)}"
              for k in own if k in arrays and tuple(np.shape(arrays[k])) != tuple(own[k].shape)]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)}: {missing[:5]}")
        if unexpected:
            parts.append(f"unexpected {len(unexpected)}: {unexpected[:5]}")
        if shapes:
            parts.append(f"wrong shape {len(shapes)}: {shapes[:5]}")
        raise ValueError("weights do not fit this network (different NetConfig?): " + "; ".join(parts))
    # A copy: weights from Ray's object store are read-only arrays, which torch cannot share.
    state = {k: torch.tensor(np.asarray(arrays[k]), dtype=own[k].dtype) for k in own}
    model.load_state_dict(state, strict=True)


# ---- the trainer --------------------------------------------------------------------------------


def resolve_device(device: str) -> torch.device:
    """``auto``: CUDA when available, else CPU. ``cuda`` without CUDA is an error, not a silent
    fallback (a run configured for a GPU should not crawl on a CPU unnoticed)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} requested but CUDA is not available")
    return dev


def cpu_has_bfloat16() -> bool:
    """Whether this CPU has bfloat16 instructions (AVX512_BF16 or AMX), where bfloat16 autocast
    trains faster than float32 rather than slower."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private, so looked up with care
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


class Trainer:
    """One network, its optimiser and its step count; :meth:`step` trains on one batch.

    ``steps`` is the number of batches trained on and doubles as the weights' version.
    Resuming: :func:`learner.checkpoint.trainer_from_checkpoint`; on CPU a resumed run
    continues bit for bit (same losses as an uninterrupted run on the same batches).
    """

    def __init__(self, model_config: NetConfig, config: LearnerConfig, *, seed: int = 0,
                 device: str | None = None) -> None:
        self.net_config = model_config
        self.config = config
        self.seed = int(seed)
        self.device = resolve_device(device if device is not None else config.device)
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            self.amp = bool(config.amp)
            self._amp_dtype = torch.float16 if config.amp_dtype == "float16" else torch.bfloat16
        else:  # CPU autocast has no float16 kernels worth using: bfloat16 or nothing
            self.amp = config.cpu_amp == "on" or (config.cpu_amp == "auto" and cpu_has_bfloat16())
            self._amp_dtype = torch.bfloat16
        self.channels_last = bool(config.channels_last and self.cuda)
        if self.cuda:
            # Fixed input shapes: let cuDNN pick the fastest kernels once.
            torch.backends.cudnn.benchmark = True
        # Initial weights depend on the seed only, not on what ran before in this process.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = PolicyValueNet(model_config)
        model = model.to(self.device)
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        self.model: PolicyValueNet = model
        self._l2_params = l2_parameters(model)
        decay_ids = {id(p) for p in self._l2_params}
        rest = [p for p in model.parameters() if id(p) not in decay_ids]
        groups = [{"params": self._l2_params, "weight_decay": config.weight_decay},
                  {"params": rest, "weight_decay": 0.0}]
        if config.optimizer == "sgd_nesterov":
            self.optimizer: torch.optim.Optimizer = torch.optim.SGD(
                groups, lr=config.lr, momentum=config.momentum, nesterov=True)
        else:
            self.optimizer = torch.optim.AdamW(
                groups, lr=config.lr, betas=(config.momentum, 0.999), fused=self.cuda or None)
        # GradScaler only where float16 can underflow gradients; disabled it is a pass-through.
        self.scaler = torch.amp.GradScaler(
            "cuda", enabled=self.amp and self._amp_dtype == torch.float16)
        self.steps = 0
        # The state_dict's tensors share the model's storage (load_state_dict copies into them),
        # so these views stay live for the trainer's lifetime.
        self._live = {k: t.detach() for k, t in model.state_dict().items()}
        self.average: dict[str, Tensor] | None = None
        """The weight average (``config.weight_average``), keyed like ``model.state_dict()``; None when off."""
        self.reset_average()

    # ---- training -----------------------------------------------------------------------------

    @property
    def lr(self) -> float:
        """Learning rate of the next step."""
        return lr_at(self.config, self.steps)

    def step(self, batch: Any) -> dict[str, float]:
        """One optimiser step on ``batch``. Returns floats: ``total``, ``value_mse``,
        ``policy_ce``, ``l2``, ``opponent_ce``, ``ownership_ce``, ``score_mse`` (with those
        heads only), ``grad_norm``
        (before clipping), ``lr`` (used by this step),
        ``skipped`` (1.0 when a non-finite gradient made the step a no-op) and ``scale`` (the AMP
        loss scale; 1.0 without a scaler)."""
        planes, targets = _batch_tensors(batch, self.net_config, self.device)
        if self.channels_last:
            planes = planes.contiguous(memory_format=torch.channels_last)
        coef = LossWeights.of(self.config)

        def terms() -> dict[str, Tensor]:
            return _terms(self.model.outputs(planes), targets, self._l2_params, coef)

        return self.optimise(terms)

    def optimise(self, terms: Callable[[], dict[str, Tensor]]) -> dict[str, float]:
        """One optimiser step on the loss ``terms()`` computes (a dict of 0-d tensors, its
        ``"total"`` the loss to minimise), run in training mode under the trainer's autocast:
        the learning rate of this step, gradient clipping, the AMP scaler, ``steps += 1``.
        Returns every term as a float, with ``grad_norm``, ``lr``, ``skipped`` and ``scale``
        (see :meth:`step`)."""
        cfg = self.config
        lr = lr_at(cfg, self.steps)
        for g in self.optimizer.param_groups:
            g["lr"] = lr
        self.model.train()
        with torch.autocast(self.device.type, dtype=self._amp_dtype, enabled=self.amp):
            computed = terms()
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(computed["total"]).backward()
        self.scaler.unscale_(self.optimizer)
        params = [p for p in self.model.parameters() if p.grad is not None]
        if cfg.grad_clip > 0:
            grad_norm = nn.utils.clip_grad_norm_(params, cfg.grad_clip, foreach=True)
        else:
            grad_norm = nn.utils.get_total_norm([p.grad for p in params], foreach=True)
        # One device-to-host transfer for the losses and the norm (not one per number).
        names = list(computed)
        values = torch.stack([computed[k].detach().float() for k in names] + [grad_norm.detach().float()]).tolist()
        out = dict(zip(names, values[:-1]))
        finite = math.isfinite(values[-1])
        scale = float(self.scaler.get_scale()) if self.scaler.is_enabled() else 1.0
        if self.scaler.is_enabled():
            self.scaler.step(self.optimizer)  # skips the update itself when gradients overflowed
            self.scaler.update()
        elif finite:
            self.optimizer.step()
        else:
            log.warning("step %d: non-finite gradient norm (loss %s); update skipped",
                        self.steps, out["total"])
        if finite and self.average is not None:
            self._update_average()
        self.steps += 1
        return {**out, "grad_norm": values[-1], "lr": lr, "skipped": 0.0 if finite else 1.0, "scale": scale}

    @property
    def checkpoint_due(self) -> bool:
        """True when ``steps`` is a positive multiple of ``checkpoint_every_steps``."""
        return self.steps > 0 and self.steps % self.config.checkpoint_every_steps == 0

    @property
    def publish_due(self) -> bool:
        """True when ``steps`` is a positive multiple of ``publish_every_steps``."""
        return self.steps > 0 and self.steps % self.config.publish_every_steps == 0

    # ---- the weight average -------------------------------------------------------------------

    def reset_average(self) -> None:
        """Start the weight average afresh from the model's weights (with ``weight_average`` on)."""
        if self.config.weight_average > 0:
            self.average = {k: t.clone() for k, t in self._live.items()}
            # (average, live) pairs, split once here rather than tested every step.
            pairs = [(self.average[k], live) for k, live in self._live.items()]
            self._averaged = [(a, live) for a, live in pairs if live.is_floating_point()]
            self._copied = [(a, live) for a, live in pairs if not live.is_floating_point()]  # batch-norm counters

    def _update_average(self) -> None:
        assert self.average is not None
        # A short memory at first, as TensorFlow's ExponentialMovingAverage with num_updates: the
        # first steps' weights, far from any good point, must not linger in the average.
        decay = min(self.config.weight_average, (1 + self.steps) / (10 + self.steps))
        with torch.no_grad():
            for average, live in self._averaged:
                average.lerp_(live, 1.0 - decay)
            for average, live in self._copied:
                average.copy_(live)

    # ---- weights out --------------------------------------------------------------------------

    def published_state(self) -> dict[str, Tensor]:
        """The weights the learner publishes, keyed like ``model.state_dict()``: the weight
        average where ``weight_average`` is on, else the model's own (live tensors, not copies)."""
        return self.average if self.average is not None else self._live

    def export_weights(self) -> tuple[int, dict[str, np.ndarray]]:
        """``(version, arrays)``: ``version = steps``; ``arrays`` maps every ``state_dict`` name
        (batch-norm statistics included) to a fresh, C-contiguous numpy array on the host: the
        weights of :meth:`published_state`."""
        # np.array(order="C") copies and keeps 0-d entries 0-d (np.ascontiguousarray would not).
        arrays = {k: np.array(t.cpu().numpy(), order="C", copy=True) for k, t in self.published_state().items()}
        return self.steps, arrays

    def import_weights(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Replace the model's weights (e.g. a stage-1 network at the start of stage 2), and the
        weight average with them; the optimiser state and step count are kept."""
        load_weights_into(self.model, arrays)
        self.reset_average()
