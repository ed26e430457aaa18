"""The evaluator as a long-lived service: gate candidates, promote, measure the best against greedy.

Inputs: the registry's candidate and best weights. Outputs: promotions (``best.json`` and the
network file ``models/model-<version>.pt``, written atomically before the registry switches the
actors), ``evaluations.jsonl`` (every gating match and every match against greedy), the Elo
ladder (``elo.json``, greedy = 0), the newest games of those matches to replay (``games.jsonl``,
``evaluator.game_log``) and metrics. Games are played by the one match runner
(:func:`evaluator.arena.play_match`) with many games in flight: both networks are searched for
all waiting games with one network call per simulation round. Each network plays as the player
``mcts:model=FILE,sims=S`` of its model file (``learner.network_player``, the run's exploration
constant, which the file records). While idle it asks the registry for the best *version* and
fetches weights only when that changed.

``best.json`` is the truth about the best model: on start the evaluator finishes or undoes a
promotion it was killed in and brings the registry in line with the pointer (:meth:`reconcile`),
and while it runs it puts the pointer's model back into a registry that names another. Killed
and restarted, it gates the newest candidate again.
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
from learner.dqn_player import dqn_player_from_weights
from plumbing.logs import configure_logging
from plumbing.metrics import Metrics
from learner.model import NetworkConfig
from learner.model_files import ALGOS, promoted_model_path, read_model_file, save_promoted_model
from learner.network_player import network_player_from_weights
from learner.records import versions_now
from plumbing.run_files import append_jsonl, read_best, read_jsonl

from .arena import play_match
from .config import EvaluationConfig
from .elo import EloLadder
from .game_log import add_match_games
from .gating import Gate, GateResult
from .promotion import log_promotion, promote, write_pointer

__all__ = ["EvaluatorService"]

log = logging.getLogger("hopzero.evaluator")

Weights = dict[str, np.ndarray]


def _same_weights(a: Weights, b: Weights) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], np.asarray(b[k])) for k in a)


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
        algo: str = "alphazero",
    ) -> None:
        """``rules``: the game's own rules (evaluation never plays the training games' options);
        ``search``: the run's search, whose exploration constant the evaluation games and the
        model files keep. ``algo``: ``alphazero`` (the gate, and the networks play ``mcts``) or
        ``dqn`` (no gate: every candidate becomes the best, and the networks play ``dqn``, the
        argmax of their Q values)."""
        configure_logging()
        self.run_dir = Path(run_dir)
        self._registry_name = registry
        self.rules, self.network, self.evaluation = rules, network, evaluation
        self.c_puct, self.seed, self.config_hash = search.c_puct, seed, config_hash
        if algo not in ALGOS:
            raise ValueError(f"algo {algo!r}; valid: {', '.join(ALGOS)}")
        self.algo = algo
        self.net_config = network.net_config(rules)
        elo_path = self.run_dir / "elo.json"
        self.ladder = EloLadder.load(elo_path) if elo_path.is_file() else EloLadder(anchor="greedy")
        self.metrics = Metrics()
        self._software = versions_now()
        self._stop = threading.Event()
        self._judged = -1  # newest candidate version gated
        self._measured = -1  # best version last measured against greedy
        self._matches = 0
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

        try:
            best = self.reconcile()
            if self.algo == "dqn":
                self._run_dqn(best)
                return
            while not self._stop.is_set():
                # A few bytes a poll; weights travel only when a new best appears.
                version = int(ray.get(self.registry.best_version.remote()))
                if best is None:  # no best on disk yet: the registry's (stage 1's network) is the first
                    first = ray.get(self.registry.best.remote()) if version >= 0 else None
                    if first is None:
                        time.sleep(0.5)
                        continue
                    best = self._record_first_best(*first)
                    continue
                if version != best[0]:  # the registry restarted, or was given another best: disk wins
                    log.warning("registry's best is v%d, best.json's v%d: restoring v%d", version, best[0], best[0])
                    ray.get(self.registry.set_best.remote(*best))
                    continue
                if best[0] != self._measured:
                    self._against_greedy(*best)
                    continue
                candidate = ray.get(self.registry.candidate_after.remote(max(self._judged, best[0])))
                if candidate is None:
                    time.sleep(0.5)
                    continue
                best = self._gate(candidate, best)
        except Exception:
            log.exception("evaluator failed")
            raise

    def _run_dqn(self, best: tuple[int, Weights] | None) -> None:
        """A DQN run's loop: no gate. Every newer candidate becomes the best (model file,
        ``best.json``, registry: the actors act with it), and the best is measured against greedy
        when no newer candidate waits (the newest, when candidates come faster than matches)."""
        import ray

        while not self._stop.is_set():
            version = int(ray.get(self.registry.best_version.remote()))
            if best is not None and version != best[0]:  # the registry restarted: disk wins
                log.warning("registry's best is v%d, best.json's v%d: restoring v%d", version, best[0], best[0])
                ray.get(self.registry.set_best.remote(*best))
                continue
            newest = -1 if best is None else best[0]
            candidate = ray.get(self.registry.candidate_after.remote(newest))
            if candidate is not None:
                cv, cw = candidate
                if best is None:
                    best = self._record_first_best(int(cv), cw)
                    ray.get(self.registry.promote.remote(int(cv), cw))
                else:
                    best = self._promote(int(cv), cw, score=0.0, games=0, expect=best[0])
                self._judged = int(cv)
                continue
            if best is not None and best[0] != self._measured:
                self._against_greedy(*best)
                continue
            time.sleep(0.5)

    def player(self, weights: Weights, name: str) -> Any:
        """The network of ``weights`` as the evaluation games play it: the player
        ``mcts:model=FILE,sims=S`` (``dqn:model=FILE`` in a DQN run) of the file
        :meth:`_write_model` writes for them."""
        if self.algo == "dqn":
            return dqn_player_from_weights(self.rules, weights, net_config=self.net_config,
                                           encoding=self.network.encoding, history=self.network.history,
                                           backend=self.network.backend, threads=1, name=name)
        return network_player_from_weights(
            self.rules,
            weights,
            net_config=self.net_config,
            encoding=self.network.encoding,
            history=self.network.history,
            sims=self.evaluation.simulations,
            c_puct=self.c_puct,
            threads=1,
            backend=self.network.backend,
            name=name,
        )

    def _seed(self) -> int:
        self._matches += 1
        return int(np.random.SeedSequence([self.seed, 7, self._matches, time.time_ns()]).generate_state(1)[0])

    def _gate(self, candidate: tuple[int, Weights], best: tuple[int, Weights]) -> tuple[int, Weights]:
        """Play the candidate against N-1 copies of the best (one player object: its searches are
        batched together), every seat rotation; returns the best after the verdict."""
        (cv, cw), (bv, bw) = candidate, best
        n = self.rules.players
        gate = Gate(self.evaluation.gate, n)
        best_player = self.player(bw, f"v{bv}")
        match = play_match(
            self.rules, self.player(cw, f"v{cv}"), *[best_player] * (n - 1), games=gate.games, seed=self._seed(),
            parallel=self.evaluation.parallel_games, on_game=gate.record,
            should_stop=lambda: gate.finished or self._stop.is_set(), keep_moves=True,
        )
        result = gate.result()
        if result.decision == "continue":
            return best  # stopped midway: no verdict to record
        self._keep_games(match, "gate", (cv, *[bv] * (n - 1)))
        return self._judge(self._gate_entry(cv, bv, result, match.mean_plies), cw, best)

    def _gate_entry(self, cv: int, bv: int, result: GateResult, mean_plies: float) -> dict[str, Any]:
        """The gate's line in ``evaluations.jsonl`` (kind ``gate``; wins, draws and losses count
        the candidate's comparisons with each copy of the best)."""
        return {
            "kind": "gate", "wall": time.time(), "candidate": cv, "best": bv, "score": float(result.score),
            "wins": result.wins, "draws": result.draws, "losses": result.losses, "games": result.games,
            "decision": result.decision, "reason": result.reason, "mean_plies": mean_plies,
            "simulations": self.evaluation.simulations, "players": self.rules.players,
        }

    def _judge(self, entry: dict[str, Any], weights: Weights, best: tuple[int, Weights]) -> tuple[int, Weights]:
        """Record a gate's verdict ``entry`` on the candidate of ``weights``; promote it if the
        verdict says so. Returns the best model after the verdict."""
        cv, bv = int(entry["candidate"]), int(entry["best"])
        self._judged = cv
        append_jsonl(self.run_dir / "evaluations.jsonl", entry)
        self.last_gate = entry
        self.metrics.set("hopzero_gate_score", float(entry["score"]))
        self.metrics.inc("hopzero_gate_games", int(entry["games"]))
        self.ladder.record(f"v{cv}", f"v{bv}", entry["wins"], entry["draws"], entry["losses"])
        log.info("gate v%d vs v%d: %s (%s)", cv, bv, entry["decision"], entry["reason"])
        if entry["decision"] != "promote":
            return best
        self._reached("verdict")
        return self._promote(cv, weights, float(entry["score"]), int(entry["games"]), expect=bv)

    # -- promotion: best.json is the truth ----------------------------------------------------------
    #
    # A promotion, in order, each step durable before the next (PROMOTION_STEPS names the
    # boundaries, where _reached is called):
    #   verdict     the gate's entry in evaluations.jsonl says "promote"
    #   model_file  models/model-V.pt (kept, not rewritten, when present with these weights)
    #   pointer     best.json names V: the commit
    #   history     the line of promotions.jsonl (once)
    #   registry    the registry's best switched: the actors take V up
    # Killed anywhere, the restarted evaluator (reconcile) finishes a committed promotion, completes
    # one that has its verdict while the judged weights can still be had (the model file, else the
    # registry's candidate), or else undoes it: the candidate is gated again.

    PROMOTION_STEPS = ("verdict", "model_file", "pointer", "history", "registry")

    def _reached(self, step: str) -> None:
        """Promotion step ``step`` (one of :attr:`PROMOTION_STEPS`) is durable. Nothing to do: the
        tests that kill the evaluator at every step end it here."""

    def reconcile(self) -> tuple[int, Weights] | None:
        """On start: finish or undo the promotion a crash interrupted, then bring the registry in
        line with ``best.json``. Returns the best model ``(version, weights)``, None before the
        first. A pointer whose model file is missing or damaged raises ``PromotionError``: no
        best model can be trusted then, a person must look (docs/RELIABILITY.md)."""
        import ray

        disk = read_best(self.run_dir)  # verified against the model file's SHA-256
        if disk is not None:
            log_promotion(self.run_dir, disk)  # killed between the pointer and its log line
        pending = self._pending_verdict(None if disk is None else int(disk.version))
        if pending is not None:
            version, weights = pending["candidate"], self._judged_weights(pending["candidate"])
            if weights is not None:
                log.warning("completing the promotion of v%d a restart interrupted", version)
                return self._promote(version, weights, float(pending["score"]), int(pending["games"]),
                                     expect=pending["best"])
            log.warning("undoing the promotion of v%d a restart interrupted (its weights are gone): "
                        "candidates newer than v%d are gated again", version, pending["best"])
            self._judged = pending["best"]
        if disk is None:
            return None
        best = (int(disk.version), self._model_weights(disk.checkpoint(self.run_dir)))
        if int(ray.get(self.registry.best_version.remote())) != best[0]:
            log.warning("registry's best is not best.json's v%d: restoring it", best[0])
            ray.get(self.registry.set_best.remote(*best))
        self.metrics.set("hopzero_best_version", best[0])
        return best

    def _pending_verdict(self, disk_version: int | None) -> dict[str, Any] | None:
        """The last gate entry if it says "promote" and best.json still names the model it beat:
        a promotion killed between its verdict and its commit."""
        gates = [e for e in read_jsonl(self.run_dir / "evaluations.jsonl") if e.get("kind") == "gate"]
        if not gates or gates[-1].get("decision") != "promote" or disk_version is None:
            return None
        last = gates[-1]
        if int(last["best"]) != disk_version or int(last["candidate"]) <= disk_version:
            return None
        return {k: int(last[k]) if k != "score" else float(last[k]) for k in ("candidate", "best", "score", "games")}

    def _judged_weights(self, version: int) -> Weights | None:
        """The weights of ``version`` as they were judged: its model file if one was written whole,
        else the registry's candidate if it is still that version; None when both are gone."""
        import ray

        path = self._model_path(version)
        if path.is_file():
            try:
                return self._model_weights(path, version=version)
            except ValueError as exc:
                log.warning("%s", exc)
        candidate = ray.get(self.registry.candidate_after.remote(version - 1))
        return candidate[1] if candidate is not None and int(candidate[0]) == version else None

    def _model_path(self, version: int) -> Path:
        return promoted_model_path(self.run_dir, version)

    def _model_weights(self, path: Path, *, version: int | None = None) -> Weights:
        """The weights of a model file, as the registry keeps them; ``ValueError`` (one line) for a
        damaged file or one that holds another version."""
        state, _ = read_model_file(path)
        recorded = (state.get("input") or {}).get("version")
        if version is not None and recorded != version:
            raise ValueError(f"{path}: holds model version {recorded!r}, not {version}")
        return {k: v.numpy().copy() for k, v in state["state_dict"].items()}

    def _write_model(self, version: int, weights: Weights) -> Path:
        """The model file of ``version``; one already there with these weights is kept as it is
        (a promotion repeated after a crash keeps its file's bytes and digest)."""
        from learner.model import PolicyValueNet
        from learner.training import load_weights_into

        path = self._model_path(version)
        if path.is_file():
            try:
                if _same_weights(self._model_weights(path, version=version), weights):
                    return path
            except ValueError as exc:
                log.warning("rewriting the model file: %s", exc)
        model = PolicyValueNet(self.net_config)
        load_weights_into(model, weights)
        save_promoted_model(path, model, network=self.network, preset=self.rules.name, version=version,
                            config_hash=self.config_hash, c_puct=self.c_puct, algo=self.algo)
        return path

    def _record_first_best(self, version: int, weights: Weights) -> tuple[int, Weights]:
        """No best.json yet: the registry's best (stage 1's network) gets its file and pointer."""
        path = self._write_model(version, weights)
        promote(self.run_dir, version, path, score=0.0, games=0, expect_current="")
        self.metrics.set("hopzero_best_version", version)
        return version, weights

    def _promote(self, version: int, weights: Weights, score: float, games: int, *, expect: int) -> tuple[int, Weights]:
        """Steps model_file .. registry of a promotion (see above); returns the new best."""
        import ray

        path = self._write_model(version, weights)
        self._reached("model_file")
        best = write_pointer(self.run_dir, version, path, score=score, games=games, expect_current=expect)
        self._reached("pointer")
        log_promotion(self.run_dir, best)
        self._reached("history")
        ray.get(self.registry.promote.remote(version, weights))  # the file and pointer first, then the actors
        self._reached("registry")
        self.metrics.inc("hopzero_promotions")
        self.metrics.set("hopzero_best_version", version)
        log.info("promoted v%d (score %.3f over %d games)", version, score, games)
        return version, weights

    def _against_greedy(self, version: int, weights: Weights) -> None:
        """The best against N-1 greedy players, every seat rotation, ``greedy_games`` rounded up to
        whole sets. ``score`` is its mean entry of the result vector (a fair share is 1/N; two
        players: wins and half the draws), ``win_rate`` the games it won (alone or sharing the
        win); the ladder takes its comparisons with the greedy players (docs/TRAINING.md)."""
        cfg = self.evaluation
        n = self.rules.players
        games = -(-cfg.greedy_games // n) * n
        match = play_match(self.rules, self.player(weights, f"v{version}"), *["greedy"] * (n - 1), games=games,
                           seed=self._seed(), parallel=cfg.parallel_games, should_stop=self._stop.is_set,
                           keep_moves=True)
        if match.games < games:
            return  # stopped midway: not a measurement
        self._measured = version
        name = f"v{version}"
        comparisons = [match.pairwise(0, k) for k in range(1, n)]
        wins, draws, losses = (sum(c[i] for c in comparisons) for i in range(3))
        self.ladder.record(name, "greedy", wins, draws, losses)
        self.ladder.save(self.run_dir / "elo.json")
        elo = self.ladder.ratings().get(name, 0.0)
        mine = match.records[0]
        entry = {
            "kind": "greedy", "wall": time.time(), "version": version, "score": mine.mean_score,
            "win_rate": mine.wins / match.games, "fair_share": 1 / n, "wins": mine.wins, "draws": mine.draws,
            "losses": match.games - mine.wins - mine.draws, "games": match.games,
            "pairwise": {"wins": wins, "draws": draws, "losses": losses}, "elo": elo, "players": n,
            "simulations": cfg.simulations if self.algo != "dqn" else 0, "mean_plies": match.mean_plies,
            "player": "dqn" if self.algo == "dqn" else "mcts",
        }
        append_jsonl(self.run_dir / "evaluations.jsonl", entry)
        self._keep_games(match, "greedy", (version, *[None] * (n - 1)))
        self.vs_greedy = entry
        self.metrics.set("hopzero_winrate_vs_greedy", mine.mean_score)
        self.metrics.set("hopzero_elo", elo)
        log.info("v%d against %d greedy: mean score %.3f, won %.1f%% (%d games), Elo %.0f", version, n - 1,
                 mine.mean_score, 100 * mine.wins / match.games, match.games, elo)

    def _keep_games(self, match: Any, kind: str, versions: tuple[int | None, ...]) -> None:
        """Keep the games of a finished match (``games.jsonl``) for the run view to replay."""
        add_match_games(self.run_dir, self.rules, match, kind=kind, model_versions=versions,
                        config_hash=self.config_hash, software=self._software)

    def stop(self) -> None:
        """End the loop (a match in flight is abandoned at its next finished game)."""
        self._stop.set()

    def stats(self) -> dict[str, Any]:
        """The last gate and the last measurement against greedy."""
        return {"last_gate": self.last_gate, "vs_greedy": self.vs_greedy, "judged": self._judged}
