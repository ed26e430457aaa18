"""The network as the tree search's leaf evaluator: encoder, policy-index frame, batched inference.

The search hands out piece lists and *absolute* policy indices (``id * cells + e``); an encoding
that shows each mover the board in its seat frame (``general``: player 1 of two sees it turned by
180 degrees; of more, each mover's point is turned to the north; ``ccengine.encoding.seat_frame``)
also turns the destinations in the network's policy, so the indices are mapped into the mover's
frame before the network is asked (:func:`ccengine.encoding.frame_indices`), and the opponent
head's logits back to absolute indices. Priors come back in the order the search gave the moves.

Values: a two-player network answers one value, the mover's (its tanh head), which is what the
two-player search backs up; with more players the head answers one share per seat in the mover's
frame (mover first, then the seats after it), and ``absolute_seats`` turns that vector back to
absolute seats for the max-n search. This module is the one place where the search's absolute
frame meets the network's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ccengine.encoding import Encoding, absolute_seats, encoding_for, encodings_for, frame_indices
from ccengine.rules import Rules

from .backends import resolve_backend
from .inference import Inference, resolve_device
from .model import NetConfig, PolicyValueNet, load_net
from .model_files import ALGOS, check_preset, model_meta, read_model_file
from .onnx_backend import calibration_planes

__all__ = ["NetworkEvaluator", "load_network_evaluator", "network_inference"]


def network_inference(
    rules: Rules, encoding: Encoding, model: PolicyValueNet, *, backend: str = "auto", device: str = "cpu",
    threads: int | None = 1,
) -> Inference:
    """An :class:`Inference` of ``model`` for positions of ``rules`` encoded by ``encoding``; the
    ``onnx-int8`` backend is calibrated on positions of that game."""
    calibration = None
    if resolve_backend(backend, resolve_device(device).type) == "onnx-int8":
        calibration = calibration_planes(rules, encoding)
    return Inference(model, backend=backend, device=device, threads=threads, calibration=calibration)


class NetworkEvaluator:
    """``evaluate(pieces, to_move, legal, counts) -> (priors, values)`` through a network;
    ``evaluate_opponent`` adds the opponent head's logits (the search's ``model_opponent``)."""

    needs_states: ClassVar[bool] = False

    def __init__(self, rules: Rules, encoding: Encoding, inference: Inference) -> None:
        cfg = inference.model.config
        if encoding.policy_size != cfg.policy_size:
            raise ValueError(
                f"encoding {encoding.name!r} has {encoding.policy_size} policy outputs, "
                f"the network {cfg.policy_size}"
            )
        if encoding.input_shape != (cfg.in_planes, cfg.n, cfg.n):
            raise ValueError(
                f"encoding {encoding.name!r} gives inputs of shape {encoding.input_shape}, "
                f"the network takes {(cfg.in_planes, cfg.n, cfg.n)}"
            )
        self.rules = rules
        self.encoding = encoding
        self.inference = inference
        self._planes = np.zeros((0, *encoding.input_shape), dtype=np.float32)
        #: Positions evaluated since construction.
        self.positions = 0
        #: The exploration constant the network was trained and gated with, when its file says.
        self.c_puct: float | None = None
        #: How the network was trained, as its file says: ``alphazero`` (policy and value, the
        #: default of files that say nothing) or ``dqn`` (Q values in the policy head).
        self.algo = "alphazero"

    def evaluate(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Priors over each row's legal moves (search order) and values, mover's view."""
        planes = self._encode(pieces, to_move)
        priors, values = self.inference.evaluate(planes, self.network_frame(legal, to_move), counts)
        self.positions += len(to_move)
        if values.ndim == 2:  # a share per seat (three or more players), in the mover's frame
            values = absolute_seats(values, to_move)
        return priors, values

    def move_values(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> np.ndarray:
        """The network's raw move outputs (a DQN network's Q values) of each row's legal moves.

        ``pieces (B, H, P, k)``, ``to_move (B,)``, ``legal (B, M)`` absolute policy indices of
        which the first ``counts[b]`` count; returns float32 ``(B, M)``, ``-inf`` on the padding.
        """
        b = len(to_move)
        planes = self._encode(pieces, to_move)
        logits, _ = self.inference.logits(planes)
        self.positions += b
        valid = np.arange(legal.shape[1])[None, :] < np.asarray(counts)[:, None]
        indices = self.network_frame(np.where(valid, legal, 0), to_move)
        values = np.take_along_axis(logits, indices.astype(np.int64), axis=1)
        return np.where(valid, values, -np.inf).astype(np.float32)

    @property
    def has_opponent_model(self) -> bool:
        """Whether the network has the opponent head (``evaluate_opponent`` works)."""
        return bool(self.inference.config.opponent_head)

    def evaluate_opponent(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`evaluate` and the opponent head's logits float32 ``[B, k * cells]`` by
        absolute policy index (the reply of the player not to move; one network run for all).
        A network without the head is a ``ValueError``."""
        b = len(to_move)
        planes = self._encode(pieces, to_move)
        priors, values, opponent = self.inference.evaluate_opponent(planes, self.network_frame(legal, to_move), counts)
        self.positions += b
        # The head answers in the leaf mover's frame: absolute index a reads the network's at frame(a).
        every = np.broadcast_to(np.arange(opponent.shape[1]), opponent.shape)
        return priors, values, np.take_along_axis(opponent, self.network_frame(every, to_move), axis=1)

    def _encode(self, pieces: np.ndarray, to_move: np.ndarray) -> np.ndarray:
        """The planes of a batch, in a buffer reused from call to call."""
        b = len(to_move)
        if self._planes.shape[0] < b:
            self._planes = np.zeros((b, *self.encoding.input_shape), dtype=np.float32)
        return self.encoding.encode(pieces, to_move, out=self._planes[:b])

    def network_frame(self, legal: np.ndarray, to_move: np.ndarray) -> np.ndarray:
        """Absolute policy indices ``(B, M)`` mapped into the network's frame: each row's
        destinations in its mover's seat frame where the encoding turns the board."""
        return frame_indices(self.rules, legal, to_move, self.encoding.rotate)


def load_network_evaluator(
    rules: Rules,
    source: str | Path | dict[str, Any] | None,
    *,
    encoding: str | None = None,
    history: int | None = None,
    threads: int | None = 1,
    device: str = "cpu",
    backend: str = "auto",
) -> NetworkEvaluator:
    """An evaluator for ``rules`` from a network file (``save_net`` format or a checkpoint).

    The file says which encoding and history its network was trained with (``extra`` of a
    checkpoint, or the ``encoding`` entry of a network file); ``encoding``/``history`` given
    here must agree with it. With ``source=None``: an untrained ``paper``-size network on the
    ``paper`` encoding (benchmarks; ``general`` on the star, which has no ``paper`` encoding).
    ``backend``: how the network runs (``learner.backends``).
    """
    default = encodings_for(rules)[0]
    if source is None:
        enc = encoding_for(rules, encoding or default, history=history)
        config = NetConfig.for_rules(rules, enc.in_planes, "paper")
        model = PolicyValueNet(config)
    else:
        model, meta = load_net_with_meta(source)
        check_preset(source if not isinstance(source, dict) else "the network", meta, rules)
        enc_name = meta.get("encoding", encoding or default)
        enc_history = meta.get("history", history)
        if encoding is not None and encoding != enc_name:
            raise ValueError(f"the network was trained on encoding {enc_name!r}, not {encoding!r}")
        enc = encoding_for(rules, enc_name, history=enc_history)
        cfg = model.config
        if enc.input_shape != (cfg.in_planes, cfg.n, cfg.n) or enc.policy_size != cfg.policy_size:
            raise ValueError(
                f"the network (input {(cfg.in_planes, cfg.n, cfg.n)}, policy {cfg.policy_size}) "
                f"does not fit {rules.name} with encoding {enc_name!r} "
                f"(input {enc.input_shape}, policy {enc.policy_size})"
            )
    evaluator = NetworkEvaluator(rules, enc, network_inference(rules, enc, model, backend=backend, device=device,
                                                               threads=threads))
    if source is not None and isinstance(meta.get("c_puct"), (int, float)) and meta["c_puct"] >= 0:
        evaluator.c_puct = float(meta["c_puct"])
    if source is not None and meta.get("algo") in ALGOS:
        evaluator.algo = str(meta["algo"])
    return evaluator


def load_net_with_meta(source: str | Path | dict[str, Any]) -> tuple[PolicyValueNet, dict[str, Any]]:
    """A network and what its file says about it (``encoding``, ``history`` and the ``c_puct`` it
    was trained with, where present).

    ``source``: a network file or a learner checkpoint (read once, ``weights_only``, its digest
    checked: ``learner.model_files.read_model_file``), or a ``net_state`` dict whose ``"input"``
    entry carries what a network file's does.
    """
    if isinstance(source, dict):
        return load_net(source), model_meta(source)
    data, meta = read_model_file(source)
    return load_net(data, name=str(source)), meta
