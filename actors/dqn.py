"""DQN acting (``algo: dqn``): epsilon-greedy games with the newest Q network, as ``dqn`` records.

The seed paper's DQN data (its "Q-Learning" sections): the learning side plays ``greedy`` from the
start position and takes a uniformly random legal move with probability epsilon, else the legal
move of largest Q value; each of its moves is rewarded ``forward_reward`` per row advanced
(negative backward), and the game's end adds ``win_reward`` or ``loss_reward`` to each side's
last move. With ``opponent: self`` both sides act so and both sides' moves are transitions.
The learning side's colour alternates game by game.

``games`` games are in flight at once; :meth:`DQNWorker.step` plays one ply in each, with one
network call for all the positions where a learning side is to move and no random draw asked
for a move. Before the first weights arrive (version -1) the learning side plays at
``epsilon_start`` without a network: the replay window's warm-up (the paper pre-fills its pool
with 5,000 tuples). A game goes to the buffer whole (``learner.records``, kind ``dqn``): every
ply's piece list, the legal moves and the move played where a learning side chose, the rewards.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ccengine.encoding import PieceTracker, encoding_for, policy_indices
from ccengine.engines import new_state
from ccengine.players import GreedyPlayer
from ccengine.rules import PASS, Rules
from learner.dqn import DQNConfig, epsilon_at
from learner.model import NetConfig
from learner.records import GameRecord, make_record, versions_now

__all__ = ["DQNWorker"]

Move = tuple[int, int]


@dataclass
class _Game:
    """One game in flight and what its record will hold."""

    seed: int
    learners: tuple[int, ...]
    """The sides that act epsilon-greedily (the others play greedy)."""
    state: Any
    tracker: PieceTracker
    pieces: list[np.ndarray] = field(default_factory=list)
    to_move: list[int] = field(default_factory=list)
    policies: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)


class DQNWorker:
    """Epsilon-greedy games for the DQN learner: ``step() -> finished records``.

    ``rules``: the training games' rules (their ``max_plies`` is the move limit; the paper: 40
    moves of the learning side). ``seed``: the worker's games and choices follow from it.
    """

    def __init__(
        self,
        rules: Rules,
        *,
        games: int,
        net_config: NetConfig,
        encoding: str,
        history: int | None,
        dqn: DQNConfig,
        run_id: str,
        config_hash: str,
        actor: str,
        seed: int,
        backend: str = "auto",
        device: str = "cpu",
        threads: int | None = 1,
    ) -> None:
        from learner.model import PolicyValueNet
        from learner.network_evaluator import NetworkEvaluator, network_inference

        if games < 1:
            raise ValueError(f"games={games} must be at least 1")
        self.rules, self.config = rules, dqn
        self.encoding = encoding_for(rules, encoding, history=history)
        if net_config.in_planes != self.encoding.in_planes or net_config.policy_size != self.encoding.policy_size:
            raise ValueError(f"net_config (in_planes {net_config.in_planes}, policy {net_config.policy_size}) does not "
                             f"fit encoding {encoding!r} (in_planes {self.encoding.in_planes}, policy "
                             f"{self.encoding.policy_size})")
        inference = network_inference(rules, self.encoding, PolicyValueNet(net_config), backend=backend, device=device,
                                      threads=threads)
        self.network = NetworkEvaluator(rules, self.encoding, inference)
        self.run_id, self.config_hash, self.actor = run_id, config_hash, actor
        self.rng = np.random.default_rng(seed)
        self.greedy = GreedyPlayer(rules, self.rng.integers(2**63))
        self.model_version = -1
        self._versions = versions_now()
        self._advance = rules.geometry.advances
        self._started = 0
        self._stats: dict[str, Any] = {"games_finished": 0, "positions": 0, "transitions": 0, "network_calls": 0,
                                       "wins": 0, "draws": 0, "losses": 0, "seconds": 0.0}
        self.games = [self._new_game() for _ in range(games)]

    # -- weights ---------------------------------------------------------------------------------

    def set_weights(self, version: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Act with new weights from now on (games in flight go on with them)."""
        from learner.training import load_weights_into

        load_weights_into(self.network.inference.model, arrays)
        self.network.inference.refresh()
        self.model_version = int(version)

    @property
    def has_weights(self) -> bool:
        """Whether a network was received (before, the learning side plays at ``epsilon_start``)."""
        return self.model_version >= 0

    @property
    def epsilon(self) -> float:
        """This worker's exploration now (by the model version it plays)."""
        return epsilon_at(self.config, self.model_version)

    # -- games -----------------------------------------------------------------------------------

    def _new_game(self) -> _Game:
        self._started += 1
        seed = int(self.rng.integers(2**63))
        learners = (0, 1) if self.config.opponent == "self" else (self._started % 2,)
        return _Game(seed, learners, new_state(self.rules), PieceTracker(self.rules))

    def step(self) -> list[GameRecord]:
        """One ply in every game; the records of the games that ended (each replaced by a new one)."""
        t0 = time.perf_counter()
        eps = self.epsilon
        explore: list[tuple[int, list[Move], np.ndarray]] = []  # (game, moves, policy indices)
        choices: dict[int, Move] = {}
        for g, game in enumerate(self.games):
            state = game.state
            mover = state.to_move
            moves = list(state.legal_moves())
            game.pieces.append(game.tracker.current)
            game.to_move.append(mover)
            if mover not in game.learners or moves == [PASS]:
                game.policies.append((np.zeros(0, np.int64), np.zeros(0, np.float32)))
                choices[g] = moves[0] if moves == [PASS] else self.greedy.select(state)
                continue
            index = policy_indices(self.rules, game.tracker.current, moves, mover)
            if self.model_version < 0 or self.rng.random() < eps:
                choices[g] = self._record_choice(game, moves, index, int(self.rng.integers(len(moves))))
            else:
                explore.append((g, moves, index))
        if explore:
            self._exploit(explore, choices)
        finished: list[GameRecord] = []
        for g, game in enumerate(self.games):
            move = choices[g]
            mover = game.state.to_move
            if mover in game.learners:
                s, e = move
                rows = 0 if move == PASS else self._advance[mover][e] - self._advance[mover][s]
                game.reward.append(self.config.forward_reward * rows)
            else:
                game.reward.append(0.0)
            game.state.play(move)
            game.tracker.play(move)
            if game.state.is_terminal() or game.state.ply >= self.rules.max_plies:
                finished.append(self._finish(game))
                self.games[g] = self._new_game()
        self._stats["seconds"] += time.perf_counter() - t0
        return finished

    def _record_choice(self, game: _Game, moves: list[Move], index: np.ndarray, pick: int) -> Move:
        onehot = np.zeros(len(moves), dtype=np.float32)
        onehot[pick] = 1.0
        game.policies.append((index, onehot))
        return moves[pick]

    def _exploit(self, explore: list[tuple[int, list[Move], np.ndarray]], choices: dict[int, Move]) -> None:
        """The learning sides' greedy choices: one network call for all of them."""
        h = self.encoding.history
        width = max(len(moves) for _, moves, _ in explore)
        pieces = np.stack([self.games[g].tracker.piece_lists(h) for g, _, _ in explore])
        to_move = np.array([self.games[g].state.to_move for g, _, _ in explore])
        legal = np.zeros((len(explore), width), dtype=np.int64)
        counts = np.array([len(moves) for _, moves, _ in explore])
        for row, (_, _, index) in enumerate(explore):
            legal[row, :len(index)] = index
        q = self.network.move_values(pieces, to_move, legal, counts)
        self._stats["network_calls"] += 1
        for row, (g, moves, index) in enumerate(explore):
            choices[g] = self._record_choice(self.games[g], moves, index, int(np.argmax(q[row, :len(moves)])))

    def _finish(self, game: _Game) -> GameRecord:
        """The game's record; the end-of-game reward goes to each learning side's last move."""
        state, cfg = game.state, self.config
        scores = tuple(state.scores()) if state.is_terminal() else (0.5, 0.5)
        result = (scores[0] > scores[1]) - (scores[0] < scores[1])  # DQN's games are two-player: seat 0's view
        reward = np.asarray(game.reward, dtype=np.float64)
        movers = np.asarray(game.to_move)
        for side in game.learners:
            own = np.flatnonzero(movers == side)
            if len(own) and result:
                won = result == (1 if side == 0 else -1)
                reward[own[-1]] += cfg.win_reward if won else cfg.loss_reward
        stats = self._stats
        stats["games_finished"] += 1
        stats["positions"] += len(movers)
        stats["transitions"] += sum(len(ix) > 0 for ix, _ in game.policies)
        if cfg.opponent == "greedy":
            side = game.learners[0]
            outcome = result if side == 0 else -result
            stats["wins" if outcome > 0 else "losses" if outcome < 0 else "draws"] += 1
        return make_record(
            run_id=self.run_id, rules=self.rules, config_hash=self.config_hash, model_version=self.model_version,
            actor=self.actor, seed=game.seed, pieces=np.asarray(game.pieces, dtype=np.int8), to_move=game.to_move,
            policies=game.policies, scores=scores, root_shares=None, plies=state.ply, versions=self._versions, reward=reward, kind="dqn",
        )

    def stats(self) -> dict[str, Any]:
        """Counters since construction, with the exploration now and the learning side's results
        in the training games (against greedy only)."""
        return {**self._stats, "epsilon": self.epsilon, "model_version": self.model_version}
