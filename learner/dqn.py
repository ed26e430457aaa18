"""Deep Q-learning on the training system: the ``dqn`` section of a run, n-step double-DQN targets,
the learner's window of transitions and its training step.

The seed paper's other deep baseline (Liu et al. 2019, "Deep Q-Learning"): a network that gives
a Q value for every move, trained on ``(S_t, a_t, R_t, S_t+1)`` tuples from games that the learning
side plays epsilon-greedily against ``greedy``, from a replay pool, with the Huber loss. The network
is the project's :class:`learner.model.PolicyValueNet`: its policy head's logits over the policy
index ``id(s) * cells + e`` are the Q values of the moves (the value head is unused), so weights,
files, inference backends and the registry serve DQN as they serve AlphaZero.

Transitions travel as whole games (``learner.records``, kind ``dqn``): every ply's piece list, at
each position where a learning side chose its legal moves with the move played, and the mover's
reward. The learner (:class:`TransitionWindow`) cuts them into n-step transitions of one side:
its positions ``t, t + 2, ...`` (the opponent's replies are part of the environment), the return
``G = sum_{i<m} gamma^i r_{t+2i}`` and the bootstrap position ``t + 2n`` if the game lasted that
long (else the transition ends the game: no bootstrap). The target (:func:`dqn_targets`) is
``G + gamma^n Q_target(s', argmax_{a' legal} Q_online(s', a'))`` (double DQN, van Hasselt et al.
2016) or ``G + gamma^n max_{a' legal} Q_target(s', a')``; the target network is a copy of the
online one refreshed every ``target_update_steps`` learner steps. Where the paper and we differ
is in docs/TRAINING.md ("DQN").
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import torch
from torch import Tensor

from ccengine.encoding import Encoding, frame_indices
from plumbing.fields import FieldError, check_fields, checked
from ccengine.symmetry import reflect_planes, reflect_policy
from learner.records import GameRecord
from learner.replay.limiter import RatioLimiter
from learner.replay.protocols import ReplayReader
from learner.replay.window import WindowMirror

from .training import Trainer, l2_parameters

__all__ = [
    "OPPONENTS",
    "DQNConfig",
    "DQNTrainer",
    "NStep",
    "TransitionBatch",
    "TransitionWindow",
    "dqn_targets",
    "epsilon_at",
    "n_step_transitions",
]

log = logging.getLogger("hopzero.learner")

#: Who the learning side plays in the training games: ``greedy`` (the paper) or itself.
OPPONENTS = ("greedy", "self")


@dataclass(frozen=True, kw_only=True)
class DQNConfig:
    """The ``dqn`` section of a run (used when ``algo: dqn``), the paper's value beside ours."""

    opponent: str = checked("greedy", choices=OPPONENTS)
    """Training games: ``greedy`` (the paper: the learner's side plays the greedy player, its
    colour alternating game by game) or ``self`` (both sides act epsilon-greedily with the network
    and both sides' moves are transitions)."""
    gamma: float = checked(0.99, gt=0, le=1)
    """Discount per move of the learning side. Paper: a discount, its value not given."""
    n_step: int = checked(3, ge=1, le=50)
    """Moves of the learning side summed before bootstrapping. Paper: 1 (plain Q-learning)."""
    double: bool = checked(True)
    """Double DQN (the online network picks the next move, the target network values it).
    Paper: no (Mnih et al. 2013)."""
    target_update_steps: int = checked(1000, ge=1)
    """Learner steps between copies of the online network into the target network. Paper: no
    target network."""
    epsilon_start: float = checked(1.0, ge=0, le=1)
    """Exploration at the start (moves drawn uniformly with this probability). Paper: 1."""
    epsilon_end: float = checked(0.1, ge=0, le=1)
    """Exploration after the decay. Paper: 0.1."""
    epsilon_decay_steps: int = checked(20_000, ge=0)
    """Learner steps over which epsilon falls linearly from start to end (by the model version
    the actor plays, so that every actor follows one schedule). Paper: over games (its Fig. 9)."""
    forward_reward: float = checked(0.01)
    """Reward per row a move advances (negative backward). Paper: 0.01."""
    win_reward: float = checked(10.0)
    """Reward of the move that ends the game won (added to the side's last move). Paper: 10."""
    loss_reward: float = checked(-10.0)
    """Reward added to the last move of a side that lost. Paper: not given (we read the win's
    reward as symmetric); a draw adds 0."""
    huber_delta: float = checked(1.0, gt=0)
    """The Huber loss's quadratic zone, ``|error| <= delta``. Paper: 1."""

    def __post_init__(self) -> None:
        check_fields(self)
        if self.epsilon_end > self.epsilon_start:
            raise FieldError("epsilon_end", f"must not exceed epsilon_start ({self.epsilon_start}), "
                                            f"got {self.epsilon_end}")


def epsilon_at(config: DQNConfig, version: int) -> float:
    """Exploration of an actor playing model ``version`` (-1: no network yet, so ``epsilon_start``)."""
    if version < 0 or config.epsilon_decay_steps == 0:
        return config.epsilon_start if version < 0 else config.epsilon_end
    t = min(version / config.epsilon_decay_steps, 1.0)
    return config.epsilon_start + t * (config.epsilon_end - config.epsilon_start)


# ---------------------------------------------------------------------------------------------
# n-step transitions of a record
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NStep:
    """The n-step transitions of one ``dqn`` record (``m`` of them)."""

    source: np.ndarray
    """int64 ``[m]``: the position where the move was chosen."""
    boot: np.ndarray
    """int64 ``[m]``: the bootstrap position (the same side to move ``2n`` plies on), -1 where the
    game ended first."""
    ret: np.ndarray
    """float32 ``[m]``: the discounted sum of the side's rewards up to the bootstrap."""
    discount: np.ndarray
    """float32 ``[m]``: ``gamma ** n`` where there is a bootstrap, else 0."""


def n_step_transitions(rec: GameRecord, *, n: int, gamma: float) -> NStep:
    """Cut a ``dqn`` record into n-step transitions, one per position where a move was chosen.

    A side's positions are 2 plies apart (passes are plies), so its ``i``-th move after ``t`` is
    at ``t + 2i``; the game (``T`` positions, the whole game) ends before ``t + 2n`` when
    ``t + 2n >= T``, and then the return sums what is left and nothing is bootstrapped.
    """
    if rec.kind != "dqn" or rec.reward is None:
        raise ValueError(f"a {rec.kind} record holds no transitions")
    t_len = rec.num_positions
    chosen = np.flatnonzero(np.diff(rec.policy_offsets.astype(np.int64)) > 0)
    reward = rec.reward.astype(np.float64)
    ret = np.zeros(len(chosen))
    for i in range(n):
        at = chosen + 2 * i
        inside = at < t_len
        ret[inside] += gamma**i * reward[at[inside]]
    boot_at = chosen + 2 * n
    has_boot = boot_at < t_len
    return NStep(
        source=chosen.astype(np.int64),
        boot=np.where(has_boot, boot_at, -1).astype(np.int64),
        ret=ret.astype(np.float32),
        discount=np.where(has_boot, gamma**n, 0.0).astype(np.float32),
    )


def dqn_targets(
    ret: Tensor, discount: Tensor, next_online: Tensor, next_target: Tensor, next_mask: Tensor, *, double: bool
) -> Tensor:
    """The regression targets ``(B,)``: ``ret + discount * value(s')``.

    ``next_online``/``next_target`` ``(B, P)``: the Q values of the bootstrap positions by the
    online and the target network; ``next_mask`` ``(B, P)`` bool: their legal moves. Double DQN:
    the target network's value of the online network's best legal move; else the target
    network's best legal value. A row without a legal move (its side must pass, or no bootstrap:
    ``discount`` 0) is worth 0 there.
    """
    has_move = next_mask.any(dim=1)
    target = next_target.float()
    if double:
        pick = next_online.float().masked_fill(~next_mask, float("-inf")).argmax(dim=1)
        value = target.gather(1, pick[:, None]).squeeze(1)
    else:
        value = target.masked_fill(~next_mask, float("-inf")).max(dim=1).values
    value = torch.where(has_move, value, torch.zeros_like(value))
    return ret.float() + discount.float() * value


# ---------------------------------------------------------------------------------------------
# The learner's window of transitions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransitionBatch:
    """One DQN training batch (``B`` transitions), in the network's frame."""

    planes: np.ndarray
    """float32 ``[B, C, side, side]``: the positions where the moves were chosen."""
    action: np.ndarray
    """int64 ``[B]``: the policy index of the move played."""
    ret: np.ndarray
    """float32 ``[B]``: the n-step discounted return."""
    discount: np.ndarray
    """float32 ``[B]``: ``gamma ** n``, 0 where the game ended within the n moves."""
    next_planes: np.ndarray
    """float32 ``[B, C, side, side]``: the bootstrap positions (the start position's planes
    where there is none; ``discount`` 0 makes them count for nothing)."""
    next_mask: np.ndarray
    """bool ``[B, policy_size]``: the legal moves of the bootstrap positions."""
    reflected: np.ndarray
    """bool ``[B]``: which samples were reflected."""


class TransitionWindow(WindowMirror):
    """The learner's window of the newest ``window_positions`` n-step transitions.

    It follows the replay buffer as :class:`WindowMirror` does (the same reader, epochs, skip
    counts and ratio limiter) but stores transitions: the piece lists with history of the
    position and of its bootstrap position, the side to move, the action, the return, the
    discount and the bootstrap position's legal moves as a bit set over the policy. Records of
    kind ``search`` (AlphaZero's targets) are refused as ``foreign``.
    """

    def __init__(
        self,
        reader: ReplayReader | None,
        encoding: Encoding,
        config: DQNConfig,
        *,
        window_positions: int,
        limiter: RatioLimiter | None = None,
    ) -> None:
        super().__init__(reader, encoding, window_positions=window_positions, limiter=limiter, entries_per_position=0)
        self.config = config
        w, h, k = window_positions, encoding.history, self.rules.k
        self._next_hist = np.full((w, h, 2, k), -1, dtype=np.int8)
        self._action = np.zeros(w, dtype=np.int64)
        self._ret = np.zeros(w, dtype=np.float32)
        self._discount = np.zeros(w, dtype=np.float32)
        self._mask_bytes = -(-encoding.policy_size // 8)
        self._next_mask = np.zeros((w, self._mask_bytes), dtype=np.uint8)

    def add_record(self, rec: GameRecord) -> int:
        """Insert a (decoded, validated) ``dqn`` record's transitions; return how many."""
        if not self._admits(rec, "dqn", "a DQN"):
            return 0
        self.records += 1
        steps = n_step_transitions(rec, n=self.config.n_step, gamma=self.config.gamma)
        keep = slice(-self.window, None)  # a record longer than the window keeps its end
        source, boot, ret, discount = steps.source[keep], steps.boot[keep], steps.ret[keep], steps.discount[keep]
        m = len(source)
        if m == 0:
            return 0
        h = self.encoding.history
        psize = self.encoding.policy_size
        full = rec.pieces.astype(np.int8)  # the whole game from its start: no start_pieces

        def history_of(at: np.ndarray) -> np.ndarray:
            src = np.maximum(at, 0)[:, None] - np.arange(h)[None, :]
            return np.where((src >= 0)[:, :, None, None], full[np.maximum(src, 0)], np.int8(-1))

        tm = rec.to_move[source].astype(np.int64)

        def frame(index: np.ndarray, mover: np.ndarray) -> np.ndarray:
            return frame_indices(self.rules, index, np.broadcast_to(mover, np.shape(index)), self.encoding.rotate)

        off = rec.policy_offsets.astype(np.int64)
        index = rec.policy_index.astype(np.int64)
        played = rec.policy_prob.astype(np.float32) == 1.0
        action = np.empty(m, dtype=np.int64)
        mask = np.zeros((m, psize), dtype=bool)
        for j in range(m):
            a, b = off[source[j]], off[source[j] + 1]
            action[j] = index[a:b][played[a:b]][0]
            if boot[j] >= 0:
                c, d = off[boot[j]], off[boot[j] + 1]
                mask[j, frame(index[c:d], tm[j:j + 1])] = True
        action = frame(action, tm)
        serial = self._positions + np.arange(m)
        slots = serial % self.window
        self._hist[slots] = history_of(source)
        self._next_hist[slots] = history_of(np.where(boot >= 0, boot, 0))
        self._to_move[slots] = tm
        self._action[slots] = action
        self._ret[slots] = ret
        self._discount[slots] = discount
        self._next_mask[slots] = np.packbits(mask, axis=1)
        self._positions += m
        if self.limiter is not None:
            self.limiter.on_insert(m)
        return m

    def sample(self, batch_size: int, rng: np.random.Generator, augment: bool = True) -> TransitionBatch:  # type: ignore[override]
        """``batch_size`` transitions drawn uniformly (with replacement) from the window; with
        ``augment`` each is reflected with probability 1/2 (both positions, the action and the
        legal moves together)."""
        serial, slots, tm = self._draw(batch_size, rng)
        planes = self.encoding.encode(self._hist[slots], tm)
        next_planes = self.encoding.encode(self._next_hist[slots], tm)
        psize = self.encoding.policy_size
        mask = np.unpackbits(self._next_mask[slots], axis=1, count=psize).astype(bool)
        action = self._action[slots].copy()
        flip = rng.random(batch_size) < 0.5 if augment else np.zeros(batch_size, dtype=bool)
        if flip.any():
            planes[flip] = reflect_planes(planes[flip], self.rules)
            next_planes[flip] = reflect_planes(next_planes[flip], self.rules)
            mask[flip] = reflect_policy(self.rules, mask[flip].astype(np.float32)) > 0.5
            onehot = np.zeros((int(flip.sum()), psize), dtype=np.float32)
            onehot[np.arange(len(onehot)), action[flip]] = 1.0
            action[flip] = reflect_policy(self.rules, onehot).argmax(axis=1)
        return TransitionBatch(planes=planes, action=action, ret=self._ret[slots].copy(),
                               discount=self._discount[slots].copy(), next_planes=next_planes, next_mask=mask,
                               reflected=flip)


# ---------------------------------------------------------------------------------------------
# The training step
# ---------------------------------------------------------------------------------------------


class DQNTrainer:
    """Double DQN on a :class:`learner.training.Trainer`'s network and optimiser, with a target
    network refreshed every ``config.target_update_steps`` steps.

    The trainer keeps the online network, the optimiser, the learning-rate schedule, the step
    count (the weights' version) and the checkpoints; this class adds the target network (saved in
    a checkpoint's ``extra`` by :meth:`checkpoint_extra`, restored by ``target_state``).
    """

    def __init__(self, trainer: Trainer, config: DQNConfig, *, target_state: Mapping[str, Any] | None = None) -> None:
        self.trainer = trainer
        self.config = config
        self.target = copy.deepcopy(trainer.model).eval()
        for p in self.target.parameters():
            p.requires_grad_(False)
        if target_state is not None:
            self.target.load_state_dict({k: torch.as_tensor(v) for k, v in target_state.items()}, strict=True)
        self._l2 = l2_parameters(trainer.model)

    @property
    def steps(self) -> int:
        return self.trainer.steps

    def sync_target(self) -> None:
        """Copy the online network into the target network."""
        self.target.load_state_dict(self.trainer.model.state_dict())

    def checkpoint_extra(self) -> dict[str, Any]:
        """What a checkpoint keeps of this class: the target network's weights."""
        return {"dqn_target": {k: v.detach().cpu().clone() for k, v in self.target.state_dict().items()}}

    def step(self, batch: TransitionBatch) -> dict[str, float]:
        """One optimiser step on ``batch``; the losses as floats (``total``, ``huber``, ``l2``,
        ``q_mean``, ``target_mean``, and the trainer's ``grad_norm``, ``lr``, ``skipped``)."""
        tr, cfg = self.trainer, self.config
        device = tr.device
        planes = torch.as_tensor(batch.planes, device=device)
        next_planes = torch.as_tensor(batch.next_planes, device=device)
        action = torch.as_tensor(batch.action, device=device)
        ret = torch.as_tensor(batch.ret, device=device)
        discount = torch.as_tensor(batch.discount, device=device)
        mask = torch.as_tensor(batch.next_mask, device=device)
        b = planes.shape[0]
        with torch.no_grad():
            next_target, _ = self.target(next_planes)

        def terms() -> dict[str, Tensor]:
            # One forward pass over both positions: the batch norms see one batch, and the
            # online network's choice at s' is part of the same (detached) pass.
            q_all, _ = tr.model(torch.cat([planes, next_planes]))
            q_all = q_all.float()
            q, next_online = q_all[:b], q_all[b:].detach()
            target = dqn_targets(ret, discount, next_online, next_target, mask, double=cfg.double)
            q_sa = q.gather(1, action[:, None]).squeeze(1)
            huber = torch.nn.functional.huber_loss(q_sa, target, delta=cfg.huber_delta)
            l2 = tr.config.l2 * torch.stack([torch.sum(w.float() ** 2) for w in self._l2]).sum() \
                if tr.config.l2 > 0 else torch.zeros((), device=device)
            return {"total": huber + l2, "huber": huber, "l2": l2, "q_mean": q_sa.detach().mean(),
                    "target_mean": target.mean()}

        out = tr.optimise(terms)
        if tr.steps % cfg.target_update_steps == 0:
            self.sync_target()
        return out
