"""The evaluator as a long-lived service: gate candidates, promote, measure the best against greedy.

Inputs: the registry's candidate and best weights. Outputs: promotions (``best.json`` and the
network file ``models/model-<version>.pt``, written atomically before the registry switches the
actors), ``evaluations.jsonl`` (every gating match and every match against greedy), the Elo
ladder (``elo.json``, greedy = 0) and metrics. Games are played by the one match runner
(:func:`evaluator.arena.play_match`) with many games in flight: both networks are searched for
all waiting games with one network call per simulation round. Each network plays as the player
``mcts:model=FILE,sims=S`` of its model file (``learner.network_player``, the run's exploration
constant, which the file records). While idle it asks the registry for the best *version* and
fetches weights only when that changed. Killed and restarted, it gates the newest candidate
again; promotions already written stand.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from ccengine.rules import Rules
from ccengine.search import SearchConfig
from learner.logs import configure_logging
from learner.metrics import Metrics
from learner.model import NetworkConfig
from learner.network_player import network_player_from_weights
from learner.run_files import append_jsonl, read_best, read_jsonl

from .arena import play_match
from .config import EvaluationConfig
from .elo import EloLadder
from .gating import Gate
from .promotion import promote

__all__ = ["EvaluatorService"]

log = logging.getLogger("hopzero.evaluator")


class EvaluatorService:
    """See the module docstring."""

    def __init__(
        self,
        *,
        rules: Rules,
        network: NetworkConfig,
        search: SearchConfig,
        evaluation: EvaluationConfig,
        seed: int,
        config_hash: str,
        run_dir: str,
        registry: str,
    ) -> None:
        """``rules``: the game's own rules (evaluation never plays the training games' options);
        ``search``: the run's search, whose exploration constant the evaluation games and the
        model files keep."""
        configure_logging()
        self.run_dir = Path(run_dir)
        self._registry_name = registry
        self.rules, self.network, self.evaluation = rules, network, evaluation
        self.c_puct, self.seed, self.config_hash = search.c_puct, seed, config_hash
        self.net_config = network.net_config(rules)
        elo_path = self.run_dir / "elo.json"
        self.ladder = EloLadder.load(elo_path) if elo_path.is_file() else EloLadder(anchor="greedy")
        self.metrics = Metrics()
        self._stop = threading.Event()
        self._judged = -1  # newest candidate version gated
        self._measured = -1  # best version last measured against greedy
        self._matches = 0
        best = read_best(self.run_dir, verify=False)
        self._recorded_best = -1 if best is None else int(best.version)
        self.last_gate: dict[str, Any] | None = None
        self.vs_greedy: dict[str, Any] | None = None
        for e in read_jsonl(self.run_dir / "evaluations.jsonl"):  # a restarted evaluator reports as before
            if e.get("kind") == "greedy":
                self.vs_greedy, self._measured = e, int(e["version"])
            elif e.get("kind") == "gate":
                self.last_gate, self._judged = e, int(e["candidate"])

    @functools.cached_property
    def registry(self) -> Any:
        """The registry actor, looked up by name when first needed: a restarted evaluator finds
        it again."""
        import ray

        return ray.get_actor(self._registry_name)

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> None:
        """Evaluate until :meth:`stop`; every exception is logged before it ends the actor."""
        import ray

        best: tuple[int, dict[str, np.ndarray]] | None = None
        try:
            while not self._stop.is_set():
                # A few bytes a poll; the best weights travel only when a new version appears.
                version = int(ray.get(self.registry.best_version.remote()))
                if version < 0:
                    time.sleep(0.5)
                    continue
                if best is None or best[0] != version:
                    best = ray.get(self.registry.best.remote())
                    if best is None:
                        continue
                    version = best[0]
                weights = best[1]
                if version != self._recorded_best:
                    self._record_first_best(version, weights)
                if version != self._measured:
                    self._against_greedy(version, weights)
                    continue
                candidate = ray.get(self.registry.candidate_after.remote(max(self._judged, version)))
                if candidate is None:
                    time.sleep(0.5)
                    continue
                self._gate(candidate, best)
        except Exception:
            log.exception("evaluator failed")
            raise

    def player(self, weights: dict[str, np.ndarray], name: str) -> Any:
        """The network of ``weights`` as the evaluation games play it: the player
        ``mcts:model=FILE,sims=S`` of the file :meth:`_write_model` writes for them."""
        return network_player_from_weights(
            self.rules,
            weights,
            net_config=self.net_config,
            encoding=self.network.encoding,
            history=self.network.history,
            sims=self.evaluation.simulations,
            c_puct=self.c_puct,
            threads=1,
            name=name,
        )

    def _seed(self) -> int:
        self._matches += 1
        return int(np.random.SeedSequence([self.seed, 7, self._matches, time.time_ns()]).generate_state(1)[0])

    def _gate(self, candidate: tuple[int, dict[str, np.ndarray]], best: tuple[int, dict[str, np.ndarray]]) -> None:
        (cv, cw), (bv, bw) = candidate, best
        gate = Gate(self.evaluation.gate)
        match = play_match(
            self.rules,
            self.player(cw, f"v{cv}"),
            self.player(bw, f"v{bv}"),
            games=gate.config.games,
            seed=self._seed(),
            parallel=self.evaluation.parallel_games,
            on_game=lambda pair, game, result: gate.record(pair, game, result),
            should_stop=lambda: gate.finished or self._stop.is_set(),
        )
        result = gate.result()
        if result.decision == "continue":
            return  # stopped midway: no verdict to record
        self._judged = cv
        entry = {
            "kind": "gate", "wall": time.time(), "candidate": cv, "best": bv, "score": float(result.score),
            "wins": result.wins, "draws": result.draws, "losses": result.losses, "games": result.games,
            "decision": result.decision, "reason": result.reason, "mean_plies": match.mean_plies,
            "simulations": self.evaluation.simulations,
        }
        append_jsonl(self.run_dir / "evaluations.jsonl", entry)
        self.last_gate = entry
        self.metrics.set("hopzero_gate_score", float(result.score))
        self.metrics.inc("hopzero_gate_games", result.games)
        self.ladder.record(f"v{cv}", f"v{bv}", result.wins, result.draws, result.losses)
        log.info("gate v%d vs v%d: %s (%s)", cv, bv, result.decision, result.reason)
        if result.decision == "promote":
            self._promote(cv, cw, float(result.score), result.games, expect=bv)

    def _write_model(self, version: int, weights: dict[str, np.ndarray]) -> Path:
        from learner.model import PolicyValueNet, save_net
        from learner.training import load_weights_into

        model = PolicyValueNet(self.net_config)
        load_weights_into(model, weights)
        path = self.run_dir / "models" / f"model-{version:010d}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        info = {"encoding": self.network.encoding, "history": self.network.history,
                "preset": self.rules.name, "version": int(version), "config_hash": self.config_hash,
                "c_puct": self.c_puct}  # players search the network as it was trained
        save_net(model, path, input=info)
        return path

    def _record_first_best(self, version: int, weights: dict[str, np.ndarray]) -> None:
        """The stage-1 network (or a best restored by the driver) gets its file and pointer."""
        path = self._write_model(version, weights)
        expect = "" if self._recorded_best < 0 else self._recorded_best
        promote(self.run_dir, version, path, score=0.0, games=0, expect_current=expect)
        self._recorded_best = version
        self.metrics.set("hopzero_best_version", version)

    def _promote(self, version: int, weights: dict[str, np.ndarray], score: float, games: int, *, expect: int) -> None:
        import ray

        path = self._write_model(version, weights)
        promote(self.run_dir, version, path, score=score, games=games, expect_current=expect)
        self._recorded_best = version  # the file and pointer first, then the actors switch
        ray.get(self.registry.promote.remote(version, weights))
        self.metrics.inc("hopzero_promotions")
        self.metrics.set("hopzero_best_version", version)
        log.info("promoted v%d (score %.3f over %d games)", version, score, games)

    def _against_greedy(self, version: int, weights: dict[str, np.ndarray]) -> None:
        cfg = self.evaluation
        match = play_match(
            self.rules,
            self.player(weights, f"v{version}"),
            "greedy",
            games=cfg.greedy_games,
            seed=self._seed(),
            parallel=cfg.parallel_games,
            should_stop=self._stop.is_set,
        )
        if match.games < cfg.greedy_games:
            return  # stopped midway: not a measurement
        self._measured = version
        name = f"v{version}"
        self.ladder.record_match(match, a=name, b="greedy")
        self.ladder.save(self.run_dir / "elo.json")
        elo = self.ladder.ratings().get(name, 0.0)
        score = (match.a_wins + 0.5 * match.draws) / match.games
        entry = {
            "kind": "greedy", "wall": time.time(), "version": version, "score": score, "wins": match.a_wins,
            "draws": match.draws, "losses": match.b_wins, "games": match.games, "elo": elo,
            "simulations": cfg.simulations, "mean_plies": match.mean_plies,
        }
        append_jsonl(self.run_dir / "evaluations.jsonl", entry)
        self.vs_greedy = entry
        self.metrics.set("hopzero_winrate_vs_greedy", score)
        self.metrics.set("hopzero_elo", elo)
        log.info("v%d against greedy: %.1f%% (%d games), Elo %.0f", version, 100 * score, match.games, elo)

    def stop(self) -> None:
        """End the loop (a match in flight is abandoned at its next finished game)."""
        self._stop.set()

    def stats(self) -> dict[str, Any]:
        """The last gate and the last measurement against greedy."""
        return {"last_gate": self.last_gate, "vs_greedy": self.vs_greedy, "judged": self._judged}
