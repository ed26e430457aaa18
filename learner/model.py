"""The policy/value network: the seed paper's residual CNN and configurable variants.

The ``paper`` model is the network of Liu et al. (2019) as its released Keras code builds it
(``kenziyuliu/ChineseCheckersAgent``, ``model.py``, class ``ResidualCNN``)::

    input (B, 7, 7, 7) planes-first
    stem     3x3 conv, 64 filters, no padding (7x7 -> 5x5), bias, batch norm, ReLU
    9 x      bottleneck: 1x1/32 BN ReLU, 3x3/32 padded BN ReLU, 1x1/64 BN, + skip, ReLU
    policy   1x1 conv/16, BN, ReLU, flatten, dense -> 294 logits (6 pieces x 49 cells)
    value    1x1 conv/1, BN, ReLU, flatten, dense 32 + ReLU, dense 1 + tanh

Optional (``opponent_head``, not in the paper): an auxiliary head of the policy head's shape that
predicts the opponent's reply, the search distribution of the next ply (Knegt, Drugan and
Wiering 2018 model the opponent for their Tron search; KataGo trains the same target as an
auxiliary loss). Off by default, so the paper's network and every older file are unchanged.

All convolutions carry biases (the Keras default; the paper's text says they do not, the code
does), weights are Xavier-uniform (Keras ``glorot_uniform``), biases zero. Trainable parameters:
exactly 247,386, the number the paper quotes (Keras' own summary adds the 2,466 batch-norm running
statistics, which PyTorch keeps as buffers, not parameters).

Conventions (fixed for the whole project):

- Input: float32 planes-first ``(B, in_planes, n, n)``; the encoding lives in
  ``ccengine/encoding.py``, this module only takes ``in_planes`` and the side ``n`` as config
  (``n`` is the planes' side: the board's on the rhombus, 17 on the 121-hole star).
- Policy index ``piece_id * cells + destination``; ``policy_size = k * cells`` (294 on cc49,
  1210 on the star). The heads flatten ``trunk_size ** 2`` features; nothing else depends on
  the board.
- Value: ``(B,)`` in ``[-1, 1]`` from the perspective of the player to move.
- Opponent logits (only with ``opponent_head``): ``(B, policy_size)``, indices as the policy's
  (the opponent's piece IDs, destinations in the input's frame), over the reply of the player
  *not* to move to the move the player to move makes.

Weights travel as :func:`net_state` dicts (config as plain JSON types + ``state_dict`` tensors +
a digest of both), written with ``torch.save`` and read back with ``torch.load(...,
weights_only=True)`` only: a network file is data, and unpickling arbitrary objects from a file
would run code; its digest is checked on every load (``learner.torch_files``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import torch
from torch import Tensor, nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from ccengine.encoding import ENCODINGS, plane_side, policy_size
from plumbing.fields import build_config, check_fields, checked
from ccengine.search import MAX_HISTORY

from .backends import BACKENDS
from .torch_files import DIGEST_KEY, check_digest, content_digest, read_torch_file, write_atomic

__all__ = [
    "NET_FORMAT",
    "SIZES",
    "NetFileError",
    "NetConfig",
    "NetworkConfig",
    "PolicyValueNet",
    "check_net_state",
    "load_net",
    "net_state",
    "read_net_file",
    "save_net",
]

#: Tag stored in every :func:`net_state` dict; bump when the layout of the dict changes.
NET_FORMAT = "hopzero.net/1"


@dataclass(frozen=True)
class NetConfig:
    """Shape of a :class:`PolicyValueNet`. Defaults are the seed paper's network on cc49.

    Build variants with :func:`dataclasses.replace` or :meth:`for_rules` (which takes overrides).
    """

    in_planes: int = 7
    """Input planes. Paper: 7 (3 past states x 2 ID matrices + side to move)."""
    n: int = 7
    """Side of the input planes, ``n x n`` (the board's on the rhombus, 17 on the star). Paper: 7."""
    policy_size: int = 294
    """Policy logits, ``k * cells`` (piece id x destination). Paper: 6 x 49 = 294."""
    channels: int = 64
    """Stem filters = trunk width (the bottlenecks' output). Paper: 64."""
    stem_kernel: int = 3
    """Stem convolution kernel. Paper: 3."""
    stem_padding: int = 0
    """Stem zero padding. Paper: 0 (``valid``: 7x7 -> 5x5). 1 keeps ``n x n`` with a 3x3 kernel."""
    blocks: int = 9
    """Residual bottleneck blocks. Paper: 9 (the text and the released code agree)."""
    bottleneck: int = 32
    """Inner width of each bottleneck (its 1x1 reduce and 3x3 convolutions). Paper: 32."""
    block_kernel: int = 3
    """Kernel of the bottleneck's middle convolution (odd; padded to keep the size). Paper: 3."""
    policy_filters: int = 16
    """Filters of the policy head's 1x1 convolution. Paper: 16."""
    value_filters: int = 1
    """Filters of the value head's 1x1 convolution. Paper: 1."""
    value_hidden: int = 32
    """Units of the value head's hidden dense layer. Paper: 32."""
    conv_bias: bool = True
    """Convolutions carry biases. Paper code: yes (Keras default); paper text: no."""
    bn_eps: float = 1e-5
    """Batch-norm epsilon. Ours: PyTorch's 1e-5; paper code: Keras' 1e-3."""
    bn_momentum: float = 0.1
    """Batch-norm running-statistics momentum (PyTorch sense). Ours: 0.1; paper code: Keras 0.99,
    i.e. 0.01 in PyTorch's sense."""
    value_outputs: int = 1
    """Outputs of the value head. 1: one tanh scalar in [-1, 1], the mover's value (two players;
    every file written before the option). P > 2 (three or more players): a softmax over the P
    seats in the mover's frame (entry 0 the mover, then the others in seat order after it), each
    seat's expected share of the result vector."""
    opponent_head: bool = False
    """An auxiliary head predicting the opponent's reply (the next ply's search distribution),
    the policy head's shape. Paper: no. Files written before the option load without it."""
    name: str = "paper"
    """Size name this config came from (informational; kept in checkpoints)."""

    def __post_init__(self) -> None:
        positive = ("in_planes", "n", "policy_size", "channels", "stem_kernel", "bottleneck",
                    "block_kernel", "policy_filters", "value_filters", "value_hidden", "value_outputs")
        for f in positive:
            if getattr(self, f) < 1:
                raise ValueError(f"NetConfig.{f}={getattr(self, f)} must be at least 1")
        if self.blocks < 0 or self.stem_padding < 0:
            raise ValueError("NetConfig.blocks and NetConfig.stem_padding must not be negative")
        if self.value_outputs == 2:
            raise ValueError("NetConfig.value_outputs=2: two players have one tanh value (1); a value "
                             "vector has one entry per seat of three or more players")
        if self.block_kernel % 2 == 0:
            raise ValueError(f"NetConfig.block_kernel={self.block_kernel} must be odd (padded 'same')")
        if self.trunk_size < 1:
            raise ValueError(
                f"stem kernel {self.stem_kernel} with padding {self.stem_padding} leaves no cells on a "
                f"{self.n}x{self.n} board; raise stem_padding")

    @property
    def trunk_size(self) -> int:
        """Side of the feature maps after the stem (5 for the paper model on 7x7)."""
        return self.n + 2 * self.stem_padding - self.stem_kernel + 1

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def paper(cls) -> NetConfig:
        """The seed paper's network on the 7x7 board with 6 pieces (247,386 parameters)."""
        return cls()

    @classmethod
    def for_rules(cls, rules: Any, in_planes: int, size: str = "paper", **overrides: Any) -> NetConfig:
        """The ``size`` network (see :data:`SIZES`) for a rules object or preset name.

        ``n`` (the planes' side: 17 on the star) and ``policy_size = k * cells`` come from the
        rules; ``in_planes`` from the encoding.
        ``overrides`` replace any field afterwards (unknown names are an error).
        """
        if isinstance(rules, str):
            from ccengine.rules import preset

            rules = preset(rules)
        try:
            shape = SIZES[size]
        except KeyError:
            raise ValueError(f"unknown network size {size!r}; valid: {', '.join(SIZES)}") from None
        # Two players keep the one tanh output (the mover's value) their networks were trained with.
        base = dict(shape, in_planes=in_planes, n=plane_side(rules), policy_size=policy_size(rules), name=size,
                    value_outputs=rules.players if rules.players > 2 else 1)
        return cls.from_dict({**base, **overrides})

    def to_dict(self) -> dict[str, Any]:
        """All fields as JSON-ready plain types."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NetConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        return build_config(cls, dict(data))  # type: ignore[no-any-return]


#: Named network shapes; :meth:`NetConfig.for_rules` fills in the board-dependent fields.
#:
#: - ``paper``: the seed paper's network, exact, on any board (unpadded stem: n -> n - 2).
#: - ``fast``: our CPU self-play default: padded stem (keeps every cell a feature column, so 4x4
#:   boards stay 4x4), 4 bottlenecks 32/16/32, policy head 8 filters; about 3.5x fewer
#:   multiply-adds than ``paper`` on 7x7.
#: - ``tiny``: smoke tests and the one-process integration run: 1 block, width 16.
SIZES: dict[str, dict[str, Any]] = {
    "paper": {},
    "fast": dict(channels=32, bottleneck=16, blocks=4, stem_padding=1, policy_filters=8),
    "tiny": dict(channels=16, bottleneck=8, blocks=1, stem_padding=1, policy_filters=4, value_hidden=16),
}


@dataclass(frozen=True, kw_only=True)
class NetworkConfig:
    """Which network a run trains (the ``network`` section of a run): a size of :data:`SIZES` and
    a ``ccengine.encoding`` input."""

    size: str = checked("fast", choices=tuple(SIZES))
    """``paper`` (the seed's 9 bottleneck blocks, 247,386 parameters on 49 cells), ``fast``
    (4 narrower blocks, padded stem: our default) or ``tiny`` (tests)."""
    encoding: str = checked("general", choices=tuple(ENCODINGS))
    """``paper`` (the seed's 7 planes) or ``general`` (side-to-move view, piece-ID planes)."""
    history: int = checked(3, ge=1, le=MAX_HISTORY)
    """States of history in the input (paper: 3)."""
    backend: str = checked("auto", choices=BACKENDS)
    """How self-play and evaluation run the network (``learner.backends``): ``auto`` is ONNX
    Runtime in 8 bits on CPU, PyTorch on CUDA. The learner always trains with PyTorch."""
    opponent_head: bool = checked(False)
    """Train an auxiliary head that predicts the opponent's reply (the next ply's search
    distribution), weighted by ``learner.opponent_loss_weight``; the search can then play the
    opponent's nodes by it (``opponent=model``). Paper: no; KataGo: yes (weight 0.15)."""

    def __post_init__(self) -> None:
        check_fields(self)

    def net_config(self, rules: Any) -> NetConfig:
        """The network's shape on ``rules`` with this input encoding."""
        from ccengine.encoding import encoding_for

        planes = encoding_for(rules, self.encoding, history=self.history).in_planes
        return NetConfig.for_rules(rules, planes, self.size, opponent_head=self.opponent_head)


# ---- modules ----------------------------------------------------------------------------------


class ConvBN(nn.Module):
    """Convolution followed by batch norm; :meth:`fuse_` folds the norm into the convolution."""

    def __init__(self, cin: int, cout: int, kernel: int, padding: int, cfg: NetConfig) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, padding=padding, bias=cfg.conv_bias)
        self.bn: nn.Module = nn.BatchNorm2d(cout, eps=cfg.bn_eps, momentum=cfg.bn_momentum)

    def forward(self, x: Tensor) -> Tensor:
        return self.bn(self.conv(x))

    def fuse_(self) -> None:
        """Fold the (eval-mode) batch norm into the convolution. Inference copies only."""
        if isinstance(self.bn, nn.BatchNorm2d):
            self.conv = fuse_conv_bn_eval(self.conv.eval(), self.bn.eval())
            self.bn = nn.Identity()


class Bottleneck(nn.Module):
    """1x1 reduce, kxk, 1x1 expand, each with batch norm; identity skip; ReLU after the add."""

    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        c, b, k = cfg.channels, cfg.bottleneck, cfg.block_kernel
        self.reduce = ConvBN(c, b, 1, 0, cfg)
        self.mid = ConvBN(b, b, k, k // 2, cfg)
        self.expand = ConvBN(b, c, 1, 0, cfg)

    def forward(self, x: Tensor) -> Tensor:
        y = torch.relu(self.reduce(x))
        y = torch.relu(self.mid(y))
        return torch.relu(x + self.expand(y))


def _init_modules(*roots: nn.Module) -> None:
    """Xavier-uniform weights and zero biases, batch norms reset, in module order."""
    for root in roots:
        for m in root.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                m.reset_parameters()


class PolicyValueNet(nn.Module):
    """``forward(x: (B, in_planes, n, n) float) -> (policy_logits (B, policy_size), value (B,))``
    (value ``(B, P)``, a softmax over the seats in the mover's frame, when
    ``config.value_outputs = P > 1``), and a third output ``opponent_logits (B, policy_size)``
    when ``config.opponent_head``.

    Logits are raw (no softmax, no masking): masking and renormalising over legal moves is
    :class:`learner.inference.Inference`'s job, the loss takes logits.
    """

    def __init__(self, config: NetConfig | None = None) -> None:
        super().__init__()
        cfg = config if config is not None else NetConfig.paper()
        self.config = cfg
        s2 = cfg.trunk_size * cfg.trunk_size
        self.stem = ConvBN(cfg.in_planes, cfg.channels, cfg.stem_kernel, cfg.stem_padding, cfg)
        self.blocks = nn.Sequential(*(Bottleneck(cfg) for _ in range(cfg.blocks)))
        self.policy_conv = ConvBN(cfg.channels, cfg.policy_filters, 1, 0, cfg)
        self.policy_fc = nn.Linear(cfg.policy_filters * s2, cfg.policy_size)
        self.value_conv = ConvBN(cfg.channels, cfg.value_filters, 1, 0, cfg)
        self.value_fc1 = nn.Linear(cfg.value_filters * s2, cfg.value_hidden)
        self.value_fc2 = nn.Linear(cfg.value_hidden, cfg.value_outputs)
        self.reset_parameters()
        if cfg.opponent_head:
            # Built and drawn after the rest: under one seed every other weight starts the same
            # with or without the head.
            self.opponent_conv = ConvBN(cfg.channels, cfg.policy_filters, 1, 0, cfg)
            self.opponent_fc = nn.Linear(cfg.policy_filters * s2, cfg.policy_size)
            _init_modules(self.opponent_conv, self.opponent_fc)

    def reset_parameters(self) -> None:
        """Xavier-uniform weights and zero biases everywhere (Keras' defaults, as the paper)."""
        _init_modules(self)

    def forward(self, x: Tensor) -> tuple[Tensor, ...]:
        return self.heads(x, opponent=self.config.opponent_head)

    def heads(self, x: Tensor, *, opponent: bool) -> tuple[Tensor, ...]:
        """``forward`` with the opponent head's output asked for or not: without it, the head
        is not computed (self-play's ONNX graph leaves it out)."""
        if opponent and not self.config.opponent_head:
            raise ValueError("this network has no opponent head")
        x = torch.relu(self.stem(x))
        x = self.blocks(x)
        p = torch.relu(self.policy_conv(x))
        p = self.policy_fc(torch.flatten(p, 1))
        v = torch.relu(self.value_conv(x))
        v = torch.relu(self.value_fc1(torch.flatten(v, 1)))
        if self.config.value_outputs > 1:   # (B, P): each seat's share, mover's frame
            v = torch.softmax(self.value_fc2(v), dim=-1)
        else:
            v = torch.tanh(self.value_fc2(v)).squeeze(-1)
        if not opponent:
            return p, v
        o = torch.relu(self.opponent_conv(x))
        return p, v, self.opponent_fc(torch.flatten(o, 1))

    def num_parameters(self) -> int:
        """Trainable parameters (batch-norm running statistics are buffers and not counted)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def fuse_(self) -> PolicyValueNet:
        """Fold every batch norm into its convolution, in place; eval mode only, and the result
        can no longer be trained or load an unfused ``state_dict``. Returns ``self``."""
        self.eval()
        for m in self.modules():
            if isinstance(m, ConvBN):
                m.fuse_()
        return self


# ---- checkpoints ------------------------------------------------------------------------------


class NetFileError(ValueError):
    """A network file cannot be used; the message (one line) names the file and the problem."""


def net_state(model: PolicyValueNet, input: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"format", "config", "state_dict", "input"?, "sha256"}``: plain types and CPU tensors
    only, so that ``torch.load(..., weights_only=True)`` reads it back. ``input`` (plain data: the
    encoding name, history, preset, versions) is stored as ``"input"`` so players know how to
    feed it. ``sha256`` is the digest of the rest (``learner.torch_files``), checked on load."""
    state: dict[str, Any] = {
        "format": NET_FORMAT,
        "config": model.config.to_dict(),
        # .contiguous(): the digest and the file hold the default layout.
        "state_dict": {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
    }
    if input is not None:
        state["input"] = dict(input)
    state[DIGEST_KEY] = content_digest(state)
    return state


def save_net(model: PolicyValueNet, path: str | os.PathLike[str], input: Mapping[str, Any] | None = None) -> None:
    """Write :func:`net_state` to ``path`` atomically (temporary file, fsync, rename)."""
    write_atomic(path, net_state(model, input))


def read_net_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The :func:`net_state` dict a network file holds, read with ``weights_only=True`` and
    checked by :func:`check_net_state`. Every problem is one :class:`NetFileError`."""
    return check_net_state(Path(path), read_torch_file(Path(path), NetFileError, "network file"))


def check_net_state(where: Path, obj: Any) -> dict[str, Any]:
    """``obj``, read from the file ``where``, if it is a whole network file: format tag, keys and
    digest; :class:`NetFileError` otherwise."""
    if not isinstance(obj, dict):
        raise NetFileError(f"{where}: not a hopzero network file (holds a {type(obj).__name__}, not a dict)")
    if obj.get("format") != NET_FORMAT:
        raise NetFileError(f"{where}: not a hopzero network file (format tag {obj.get('format')!r}, "
                           f"expected {NET_FORMAT!r})")
    missing = [k for k in ("config", "state_dict") if k not in obj]
    if missing:
        raise NetFileError(f"{where}: network file lacks required key(s) {missing}")
    check_digest(where, obj, NetFileError, "network file")
    return obj


def load_net(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    config: NetConfig | None = None,
    map_location: str | torch.device = "cpu",
    name: str | None = None,
) -> PolicyValueNet:
    """A :class:`PolicyValueNet` from a :func:`net_state` dict or a network file (``name``: the
    file a dict was read from, for messages).

    A file is read and checked by :func:`read_net_file` (``weights_only``, digest). A dict may also
    be a bare ``state_dict`` or hold one under ``"model"``/``"state_dict"``, in which case
    ``config`` must be given (or the dict must carry ``"config"``). A file whose weights do not
    fit its config raises :class:`NetFileError`.
    """
    obj = read_net_file(source) if isinstance(source, (str, os.PathLike)) else source
    if not isinstance(obj, Mapping):
        raise ValueError(f"expected a dict of weights, got {type(obj).__name__}")
    fmt = obj.get("format")
    if fmt is not None and fmt != NET_FORMAT:
        raise ValueError(f"unsupported network format {fmt!r}; this code reads {NET_FORMAT!r}")
    state = obj.get("state_dict", obj.get("model", obj))
    where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else (name or "network state")
    if config is None and "config" not in obj:
        raise ValueError("a bare state_dict needs config=NetConfig(...)")
    try:
        if config is None:
            cfg = obj["config"]
            config = cfg if isinstance(cfg, NetConfig) else NetConfig.from_dict(cfg)
        model = PolicyValueNet(config)
        model.load_state_dict(state)
    except (RuntimeError, TypeError, ValueError) as e:
        # torch's message lists every mismatched tensor; the first line says enough.
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise NetFileError(f"{where}: the weights do not fit the network: {first}") from None
    model.to(map_location)
    return model
