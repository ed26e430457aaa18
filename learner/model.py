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

Optional, from KataGo (Wu 2019, "Accelerating Self-Play Learning in Go"), each off by default:

- ``global_pooling``: every N-th residual block is a global pooling block: a few channels of its
  input, averaged and maximised over the board's cells (the on-board mask plane of the input
  marks them on the star's 17 x 17 grid), become per-channel biases of the block's inner
  convolution, so that every cell sees the whole board in one block (:class:`GlobalPoolingBottleneck`).
- ``ownership_head``: per cell, logits over ``P + 1`` classes (empty, or the seat that holds
  the cell when the game ends, in the mover's frame): KataGo's ownership target, here trained
  on the goal cells (``learner.aux_targets``).
- ``score_head``: ``P + 1`` logits from the value head's hidden layer: each seat's final
  progress (rows advanced over the rows it can advance, mover's frame) and the share of the
  move limit left to play, through a sigmoid: KataGo's score target fitted to a race.

The auxiliary heads train the trunk only: :meth:`PolicyValueNet.forward`, the search and every
inference backend leave them out; :meth:`PolicyValueNet.outputs` has them all (the learner, and
the ONNX file ``hopzero export --onnx`` writes).

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
from torch.nn import functional as F
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
    "GlobalPoolingBottleneck",
    "NetworkConfig",
    "PolicyValueNet",
    "check_net_state",
    "with_added_parts",
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
    global_pooling: int = 0
    """Every this-many-th residual block is a :class:`GlobalPoolingBottleneck` (KataGo's global
    pooling); 0: none. Paper: no."""
    mask_plane: int = -1
    """The input plane whose 1s mark the board's cells, the area global pooling averages over
    (the ``general`` encoding's last plane); -1: every element of the planes is a cell."""
    ownership_head: bool = False
    """An auxiliary head of per-cell ownership logits (KataGo's ownership target). Paper: no."""
    score_head: bool = False
    """An auxiliary head of final progress and plies left (KataGo's score target, fitted to a
    race). Paper: no."""
    name: str = "paper"
    """Size name this config came from (informational; kept in checkpoints)."""

    def __post_init__(self) -> None:
        positive = ("in_planes", "n", "policy_size", "channels", "stem_kernel", "bottleneck",
                    "block_kernel", "policy_filters", "value_filters", "value_hidden", "value_outputs")
        for f in positive:
            if getattr(self, f) < 1:
                raise ValueError(f"NetConfig.{f}={getattr(self, f)} must be at least 1")
        if self.blocks < 0 or self.stem_padding < 0 or self.global_pooling < 0:
            raise ValueError("NetConfig.blocks, stem_padding and global_pooling must not be negative")
        if not -1 <= self.mask_plane < self.in_planes:
            raise ValueError(f"NetConfig.mask_plane={self.mask_plane} must be -1 or an input plane "
                             f"(0..{self.in_planes - 1})")
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

    @property
    def trunk_offset(self) -> int:
        """The input element a feature map's element ``(i, j)`` is centred on is ``(i + o, j + o)``
        for this ``o`` (1 for the paper model's unpadded stem, 0 for a padded one)."""
        return self.stem_kernel // 2 - self.stem_padding

    @property
    def players(self) -> int:
        """Seats of the game the network plays (two with the scalar value head)."""
        return self.value_outputs if self.value_outputs > 1 else 2

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
#: - ``deep``: ``fast`` with 8 blocks: its 3x3 convolutions see 19 cells across, the star's whole
#:   17 x 17 planes, where ``fast``'s see 11; twice ``fast``'s trunk.
#: - ``tiny``: smoke tests and the one-process integration run: 1 block, width 16.
SIZES: dict[str, dict[str, Any]] = {
    "paper": {},
    "fast": dict(channels=32, bottleneck=16, blocks=4, stem_padding=1, policy_filters=8),
    "deep": dict(channels=32, bottleneck=16, blocks=8, stem_padding=1, policy_filters=8),
    "tiny": dict(channels=16, bottleneck=8, blocks=1, stem_padding=1, policy_filters=4, value_hidden=16),
}


@dataclass(frozen=True, kw_only=True)
class NetworkConfig:
    """Which network a run trains (the ``network`` section of a run): a size of :data:`SIZES` and
    a ``ccengine.encoding`` input."""

    size: str = checked("fast", choices=tuple(SIZES))
    """``paper`` (the seed's 9 bottleneck blocks, 247,386 parameters on 49 cells), ``fast``
    (4 narrower blocks, padded stem: our default), ``deep`` (``fast`` with 8 blocks) or ``tiny``
    (tests)."""
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
    global_pooling: int = checked(0, ge=0)
    """Make every N-th residual block a global pooling block (KataGo's global pooling, Wu 2019:
    channel means and maxima over the board's cells, fed as biases to the block's other
    channels); 0: none (paper: none). A network of 4 blocks with 2 has two of them."""
    ownership_head: bool = checked(False)
    """Train an auxiliary head on each goal cell's final occupant (KataGo's ownership target),
    weighted by ``learner.ownership_loss_weight``. Training only: play ignores it."""
    score_head: bool = checked(False)
    """Train an auxiliary head on each seat's final progress and the plies left to the end
    (KataGo's score target, fitted to a race), weighted by ``learner.score_loss_weight``.
    Training only: play ignores it."""

    def __post_init__(self) -> None:
        check_fields(self)

    def net_config(self, rules: Any) -> NetConfig:
        """The network's shape on ``rules`` with this input encoding."""
        from ccengine.encoding import encoding_for

        planes = encoding_for(rules, self.encoding, history=self.history).in_planes
        # The general encoding's last plane is the on-board mask; the paper encoding is the
        # rhombus's only, where every element is a cell.
        extra = dict(global_pooling=self.global_pooling,
                     mask_plane=planes - 1 if self.encoding == "general" else -1) if self.global_pooling else {}
        return NetConfig.for_rules(rules, planes, self.size, opponent_head=self.opponent_head,
                                   ownership_head=self.ownership_head, score_head=self.score_head, **extra)


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


class GlobalPoolingBottleneck(Bottleneck):
    """A bottleneck with KataGo's global pooling (Wu 2019, "Global Pooling"): ``bottleneck // 2``
    channels computed from the block's input (1x1 convolution, batch norm, ReLU) are averaged
    and maximised over the board's cells; a dense layer turns those into one bias per channel
    of the 1x1 reduction, added before its ReLU, so every cell of the next convolution sees the
    whole board. ``forward(x, mask)``: ``mask (B, 1, s, s)`` 1 on the cells (None: all)."""

    def __init__(self, cfg: NetConfig) -> None:
        super().__init__(cfg)
        pooled = max(1, cfg.bottleneck // 2)
        self.pool_conv = ConvBN(cfg.channels, pooled, 1, 0, cfg)
        self.pool_fc = nn.Linear(2 * pooled, cfg.bottleneck)

    def pooled(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``(B, 2 * pooled)``: the pooled channels' means over the cells, then their maxima."""
        g = torch.relu(self.pool_conv(x))
        if mask is None:
            return torch.cat([g.mean(dim=(2, 3)), g.amax(dim=(2, 3))], dim=1)
        g = g * mask   # off the board: 0, never above the ReLU's on-board values
        mean = g.sum(dim=(2, 3)) / torch.clamp(mask.sum(dim=(2, 3)), min=1.0)
        return torch.cat([mean, g.amax(dim=(2, 3))], dim=1)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:  # type: ignore[override]
        bias = self.pool_fc(self.pooled(x, mask))[:, :, None, None]
        y = torch.relu(self.reduce(x) + bias)
        y = torch.relu(self.mid(y))
        return torch.relu(x + self.expand(y))


def _window(t: Tensor, start: int, size: int) -> Tensor:
    """``t`` re-windowed over its last two dimensions: ``out[..., i, j] = t[..., start + i,
    start + j]``, 0 outside ``t``; ``t`` itself when that is the whole of it."""
    n = t.shape[-1]
    lo, hi = max(start, 0), min(start + size, n)
    core = t[..., lo:hi, lo:hi]
    before, after = lo - start, size - (hi - start)
    return F.pad(core, (before, after, before, after)) if before or after else core


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
        every = cfg.global_pooling
        self.blocks = nn.Sequential(*(GlobalPoolingBottleneck(cfg) if every and (i + 1) % every == 0 else Bottleneck(cfg)
                                      for i in range(cfg.blocks)))
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
        if cfg.ownership_head:   # drawn after the rest too, as the opponent head
            self.ownership_conv = ConvBN(cfg.channels, cfg.policy_filters, 1, 0, cfg)
            self.ownership_out = nn.Conv2d(cfg.policy_filters, cfg.players + 1, 1)
            _init_modules(self.ownership_conv, self.ownership_out)
        if cfg.score_head:
            self.score_fc = nn.Linear(cfg.value_hidden, cfg.players + 1)
            _init_modules(self.score_fc)

    def reset_parameters(self) -> None:
        """Xavier-uniform weights and zero biases everywhere (Keras' defaults, as the paper)."""
        _init_modules(self)

    def forward(self, x: Tensor) -> tuple[Tensor, ...]:
        return self.heads(x, opponent=self.config.opponent_head)

    def heads(self, x: Tensor, *, opponent: bool) -> tuple[Tensor, ...]:
        """``forward`` with the opponent head's output asked for or not: without it, the head
        is not computed (self-play's ONNX graph leaves it out). The auxiliary training heads
        (ownership, score) are never computed here: see :meth:`outputs`."""
        if opponent and not self.config.opponent_head:
            raise ValueError("this network has no opponent head")
        t = self._trunk(x)
        p, v, _ = self._policy_value(t)
        if not opponent:
            return p, v
        o = torch.relu(self.opponent_conv(t))
        return p, v, self.opponent_fc(torch.flatten(o, 1))

    def outputs(self, x: Tensor) -> dict[str, Tensor]:
        """Every head's output by name (what the learner trains): ``policy``, ``value``, and
        where the network has them ``opponent`` ``(B, policy_size)``, ``ownership`` ``(B, P + 1,
        n, n)`` (logits per input element: class 0 empty, 1 + i the seat i after the mover) and
        ``score`` ``(B, P + 1)`` (logits: each seat's final progress in the mover's frame, then
        the share of the move limit left)."""
        cfg = self.config
        t = self._trunk(x)
        p, v, hidden = self._policy_value(t)
        out = {"policy": p, "value": v}
        if cfg.opponent_head:
            out["opponent"] = self.opponent_fc(torch.flatten(torch.relu(self.opponent_conv(t)), 1))
        if cfg.ownership_head:
            own = self.ownership_out(torch.relu(self.ownership_conv(t)))
            out["ownership"] = _window(own, -cfg.trunk_offset, cfg.n)   # back onto the input's elements
        if cfg.score_head:
            out["score"] = self.score_fc(hidden)
        return out

    def pooling_mask(self, x: Tensor) -> Tensor | None:
        """``(B, 1, s, s)`` on the feature maps: 1 where the input element a feature is centred
        on is a cell of the board (the ``mask_plane``); None where every element is one."""
        cfg = self.config
        if cfg.mask_plane < 0:
            return None
        return _window(x[:, cfg.mask_plane:cfg.mask_plane + 1], cfg.trunk_offset, cfg.trunk_size)

    def _trunk(self, x: Tensor) -> Tensor:
        """The stem and the residual blocks: the features every head reads."""
        mask = self.pooling_mask(x) if self.config.global_pooling else None
        t = torch.relu(self.stem(x))
        for block in self.blocks:
            t = block(t, mask) if isinstance(block, GlobalPoolingBottleneck) else block(t)
        return t

    def _policy_value(self, t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Policy logits, value, and the value head's hidden layer (the score head reads it)."""
        p = torch.relu(self.policy_conv(t))
        p = self.policy_fc(torch.flatten(p, 1))
        v = torch.relu(self.value_conv(t))
        hidden = torch.relu(self.value_fc1(torch.flatten(v, 1)))
        if self.config.value_outputs > 1:   # (B, P): each seat's share, mover's frame
            v = torch.softmax(self.value_fc2(hidden), dim=-1)
        else:
            v = torch.tanh(self.value_fc2(hidden)).squeeze(-1)
        return p, v, hidden

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


#: The auxiliary heads a network can gain after training (NetConfig flag: its modules' names).
AUX_HEADS = {"opponent_head": ("opponent_conv.", "opponent_fc."),
             "ownership_head": ("ownership_conv.", "ownership_out."),
             "score_head": ("score_fc.",)}


def with_added_parts(state: Mapping[str, Any], config: NetConfig, *, seed: int = 0) -> tuple[PolicyValueNet, list[str]]:
    """The network of ``state`` (a :func:`net_state` dict) grown to ``config``: every weight it
    has, plus what ``config`` turns on and it lacks. Auxiliary heads start as a new network's
    (under ``seed``, leaving the global random state as it was). Global pooling
    (``global_pooling`` from 0) turns blocks into :class:`GlobalPoolingBottleneck` with their
    dense layer at zero, so the grown network computes what the old one did until training moves
    it (the pooled channels then start to count). Returns the network and the NetConfig flags
    added. ``ValueError`` names any other difference: the trunk, policy and value must match, and
    nothing is ever dropped (the message gives the wanted value as "this run")."""
    own = NetConfig.from_dict(state["config"]).to_dict()
    wanted = config.to_dict()
    differ = [k for k in wanted if own.get(k) != wanted[k]]
    added = [k for k in differ if k in AUX_HEADS and not own.get(k) and wanted[k]]
    pooling = "global_pooling" in differ and not own.get("global_pooling")
    if pooling:
        added.append("global_pooling")
    other = [k for k in differ if k not in added and not (pooling and k == "mask_plane")]
    if other:
        raise ValueError("the network's shape differs: " + ", ".join(
            f"{k} {own.get(k)!r} (this run: {wanted[k]!r})" for k in other))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = PolicyValueNet(config)
    missing, unexpected = model.load_state_dict(state["state_dict"], strict=False)
    fresh = tuple(prefix for head in added for prefix in AUX_HEADS.get(head, ()))
    stray = list(unexpected) + [k for k in missing if not (k.startswith(fresh) or (pooling and ".pool_" in k))]
    if stray:
        raise ValueError(f"the weights do not fit the network: {stray[:3]}")
    if pooling:
        with torch.no_grad():
            for block in model.blocks:
                if isinstance(block, GlobalPoolingBottleneck):
                    block.pool_fc.weight.zero_()
                    block.pool_fc.bias.zero_()
    return model, added


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
