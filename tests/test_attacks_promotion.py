"""Attack replays, area promotion: a promotion killed at every step, damaged network files,
stale and bogus checkpoint files.

The promotion tests use a real local Ray registry actor. The evaluator is killed at each step
boundary of a promotion (its ``_reached`` hook raising, in this process; ``os._exit`` inside a
Ray actor that Ray then restarts), restarted, and best.json, the model files, promotions.jsonl
and the registry must agree: the promotion finished, or (its weights gone) undone, never rolled
back, never logged twice, no model file rewritten.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ray = pytest.importorskip("ray")

from ccengine.rules import preset  # noqa: E402
from ccengine.search import SearchConfig  # noqa: E402
from evaluator.config import EvaluationConfig  # noqa: E402
from evaluator.gating import GateConfig  # noqa: E402
from evaluator.promotion import HISTORY_FILE, promotion_history  # noqa: E402
from evaluator.service import EvaluatorService  # noqa: E402
from hopzero.registry import ModelRegistry  # noqa: E402
from learner.model import NetworkConfig, PolicyValueNet  # noqa: E402
from plumbing.run_files import read_best, sha256_file  # noqa: E402
from hostile_helpers import EXPLOITED, Exploit  # noqa: E402

RULES = preset("cc49")
NETWORK = NetworkConfig(size="tiny", encoding="general", history=3)
STEPS = getattr(EvaluatorService, "PROMOTION_STEPS", ())


class Killed(BaseException):
    """The evaluator's process ends here (BaseException: no ``except Exception`` survives it)."""


class CrashingEvaluator(EvaluatorService):
    """The evaluator, killed when a promotion reaches ``crash_at``: by an exception here, or by
    ``os._exit`` when ``marker`` names a file (created first, so the restarted one lives on)."""

    def __init__(self, *, crash_at: str = "", marker: str = "", **kw):
        super().__init__(**kw)
        self.crash_at, self.marker = crash_at, marker

    def _reached(self, step: str) -> None:
        if step != self.crash_at:
            return
        if not self.marker:
            raise Killed(step)
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(step)
            os._exit(1)


@pytest.fixture
def registry(local_ray):
    name = f"promotion-registry-{uuid.uuid4().hex[:8]}"
    handle = ray.remote(ModelRegistry).options(name=name).remote()
    yield name, handle
    ray.kill(handle)


def evaluation(**gate) -> EvaluationConfig:
    return EvaluationConfig(simulations=4, parallel_games=2, greedy_games=2,
                            gate=GateConfig(**{"games": 2, "min_games": 2, "threshold": 0.01, **gate}))


def service(run_dir: Path, registry_name: str, cls=EvaluatorService, **kw) -> EvaluatorService:
    return cls(rules=RULES, network=NETWORK, search=SearchConfig(c_puct=1.0), evaluation=evaluation(), seed=0,
               config_hash="test", run_dir=str(run_dir), registry=registry_name, **kw)


def weights(seed: int) -> dict[str, np.ndarray]:
    torch.manual_seed(seed)
    net = PolicyValueNet(NETWORK.net_config(RULES))
    return {k: v.numpy().copy() for k, v in net.state_dict().items()}


def verdict(candidate: int, best: int) -> dict:
    return {"kind": "gate", "wall": 0.0, "candidate": candidate, "best": best, "score": 0.75, "wins": 3,
            "draws": 0, "losses": 1, "games": 4, "decision": "promote", "reason": "test", "mean_plies": 50.0,
            "simulations": 4}


def files(run_dir: Path) -> dict[str, str]:
    """Every model file and its digest."""
    return {p.name: sha256_file(p) for p in sorted((run_dir / "models").glob("*.pt"))}


def assert_consistent(run_dir: Path, handle, expected: dict[int, dict[str, np.ndarray]]) -> int:
    """best.json, its model file, promotions.jsonl and the registry agree; returns the best."""
    best = read_best(run_dir)  # the model file matches the pointer's digest
    version = int(best.version)
    history = promotion_history(run_dir)
    assert history[-1] == best, "the last history line is the pointer"
    assert len({(h.version, h.sha256) for h in history}) == len(history), "a promotion logged twice"
    assert [h.games for h in history][1:].count(0) == 0, "a bogus promotion line (0 games)"
    got_version, got = ray.get(handle.best.remote())
    assert got_version == version, "the registry's best is not best.json's"
    for k, v in expected[version].items():
        assert np.array_equal(got[k], v)
    state = torch.load(best.checkpoint(run_dir), weights_only=True)
    assert state["input"]["version"] == version
    for k, v in expected[version].items():
        assert np.array_equal(state["state_dict"][k].numpy(), v)
    return version


def first_best(run_dir: Path, registry_name: str, handle, w100) -> dict[str, str]:
    """A run whose best is v100 (stage 1's network, recorded by the evaluator)."""
    ray.get(handle.set_best.remote(100, w100))
    first = service(run_dir, registry_name)
    assert first.reconcile() is None
    first._record_first_best(100, w100)
    return files(run_dir)


# ---- a promotion killed at every step -----------------------------------------------------------


@pytest.mark.parametrize("step", STEPS)
def test_a_promotion_killed_at_any_step_is_finished_by_the_restart(tmp_path, registry, step):
    name, handle = registry
    w100, w200 = weights(1), weights(2)
    before = first_best(tmp_path, name, handle, w100)
    ray.get(handle.publish_candidate.remote(200, w200))

    doomed = service(tmp_path, name, CrashingEvaluator, crash_at=step)
    best = doomed.reconcile()
    with pytest.raises(Killed):
        doomed._judge(verdict(200, 100), w200, best)

    restarted = service(tmp_path, name)
    best = restarted.reconcile()
    assert best[0] == 200
    assert assert_consistent(tmp_path, handle, {100: w100, 200: w200}) == 200
    assert [h.version for h in promotion_history(tmp_path)] == ["100", "200"]
    after = files(tmp_path)
    assert after["model-0000000100.pt"] == before["model-0000000100.pt"], "the old best's file was rewritten"
    assert restarted.stats()["judged"] == 200  # the candidate is not gated again

    # A second restart finds nothing to do and changes nothing.
    history = (tmp_path / HISTORY_FILE).read_bytes()
    assert service(tmp_path, name).reconcile()[0] == 200
    assert files(tmp_path) == after and (tmp_path / HISTORY_FILE).read_bytes() == history


@pytest.mark.parametrize("step", ["verdict", "model_file"])
def test_a_verdict_whose_weights_are_gone_is_undone(tmp_path, registry, step):
    """Killed before the commit, and the learner has replaced the candidate meanwhile: the
    promotion cannot be finished (no weights) unless its model file was written; undone, the
    newer candidate is gated against the old best."""
    name, handle = registry
    w100, w200, w300 = weights(1), weights(2), weights(3)
    first_best(tmp_path, name, handle, w100)
    ray.get(handle.publish_candidate.remote(200, w200))
    doomed = service(tmp_path, name, CrashingEvaluator, crash_at=step)
    with pytest.raises(Killed):
        doomed._judge(verdict(200, 100), w200, doomed.reconcile())
    ray.get(handle.publish_candidate.remote(300, w300))

    restarted = service(tmp_path, name)
    best = restarted.reconcile()
    if step == "model_file":  # the file holds the judged weights: the promotion is finished
        assert best[0] == 200 and assert_consistent(tmp_path, handle, {100: w100, 200: w200}) == 200
        return
    assert best[0] == 100 and assert_consistent(tmp_path, handle, {100: w100}) == 100
    assert [h.version for h in promotion_history(tmp_path)] == ["100"]
    judged = restarted.stats()["judged"]
    assert ray.get(handle.candidate_after.remote(max(judged, best[0])))[0] == 300  # gated next


def test_a_registry_that_lost_the_best_gets_best_json_s(tmp_path, registry):
    """The registry restarted (or was handed an older best by someone): the evaluator restores
    best.json's model into it instead of writing the registry's over the pointer."""
    name, handle = registry
    w100, w200 = weights(1), weights(2)
    first_best(tmp_path, name, handle, w100)
    ray.get(handle.publish_candidate.remote(200, w200))
    service(tmp_path, name)._judge(verdict(200, 100), w200, (100, w100))
    ray.get(handle.set_best.remote(100, w100))  # the attack's rollback source
    history = (tmp_path / HISTORY_FILE).read_bytes()
    assert service(tmp_path, name).reconcile()[0] == 200
    assert assert_consistent(tmp_path, handle, {100: w100, 200: w200}) == 200
    assert (tmp_path / HISTORY_FILE).read_bytes() == history


def test_the_model_file_is_written_once_per_version(tmp_path, registry):
    name, _ = registry
    svc, w = service(tmp_path, name), weights(1)
    path = svc._write_model(7, w)
    data, stat = path.read_bytes(), path.stat()
    assert svc._write_model(7, w) == path and path.read_bytes() == data
    assert path.stat().st_mtime_ns == stat.st_mtime_ns and path.stat().st_ino == stat.st_ino  # not rewritten
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 0x10
    path.write_bytes(bytes(damaged))
    svc._write_model(7, w)
    assert path.read_bytes() == data  # rewritten whole: the same bytes for the same weights
    other = weights(2)
    svc._write_model(7, other)
    assert np.array_equal(torch.load(path, weights_only=True)["state_dict"]["policy_fc.weight"].numpy(),
                          other["policy_fc.weight"])


# ---- the same, with Ray killing and restarting the evaluator actor ------------------------------


def restarted(actor, tries: int = 600) -> bool:
    """Wait until Ray has restarted ``actor`` (calls fail as unavailable meanwhile)."""
    for _ in range(tries):
        try:
            ray.get(actor.stats.remote(), timeout=60)
            return True
        except ray.exceptions.ActorUnavailableError:
            time.sleep(0.2)
    return False


def test_the_evaluator_actor_killed_after_writing_best_json_does_not_roll_back(tmp_path, registry):
    """The attack as it happened: the evaluator process dies right after best.json names the new
    best, before the registry switches; Ray restarts it. Before the fix the restarted evaluator
    re-promoted the registry's old best over best.json and never gated the candidate again."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    name, handle = registry
    w100 = weights(1)
    w200 = {k: v.copy() for k, v in w100.items()}
    w200["value_fc2.bias"] = w200["value_fc2.bias"] + np.float32(1e-3)  # about the same player: it promotes
    ray.get(handle.set_best.remote(100, w100))
    ray.get(handle.publish_candidate.remote(200, w200))
    marker = tmp_path / "killed"
    actor = ray.remote(CrashingEvaluator).options(max_restarts=-1, max_concurrency=2).remote(
        rules=RULES, network=NETWORK, search=SearchConfig(c_puct=1.0), evaluation=evaluation(), seed=0,
        config_hash="test", run_dir=str(tmp_path), registry=name, crash_at="pointer", marker=str(marker),
    )
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actor.run.remote(), timeout=300)  # ends when the process dies mid-promotion
    assert marker.read_text() == "pointer" and read_best(tmp_path).version == "200"
    assert ray.get(handle.best_version.remote()) == 100  # killed before the registry switched
    model_100 = files(tmp_path)["model-0000000100.pt"]

    assert restarted(actor)
    run = actor.run.remote()  # what the driver does for an actor Ray restarted
    deadline = time.monotonic() + 120
    while ray.get(handle.best_version.remote()) != 200 and time.monotonic() < deadline:
        assert read_best(tmp_path).version == "200", "best.json rolled back"
        time.sleep(0.2)
    ray.get(actor.stop.remote())
    ray.get(run, timeout=300)
    assert assert_consistent(tmp_path, handle, {100: w100, 200: w200}) == 200
    assert [(h.version, h.games) for h in promotion_history(tmp_path)] == [("100", 0), ("200", 2)]
    assert files(tmp_path)["model-0000000100.pt"] == model_100
    ray.kill(actor)


# ---- damaged, foreign and hostile network files -------------------------------------------------


@pytest.fixture(scope="module")
def good_model(tmp_path_factory) -> Path:
    from learner.model import save_net

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("models") / "good.pt"
    save_net(PolicyValueNet(NETWORK.net_config(RULES)), path, input={"encoding": "general", "history": 3})
    return path


def flipped(good: Path, out: Path) -> Path:
    """``good`` with one bit flipped inside its largest tensor: torch loads it without complaint."""
    import zipfile

    data = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as z:
        info = max(z.infolist(), key=lambda i: i.file_size)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + info.file_size // 2] ^= 0x08
    out.write_bytes(bytes(data))
    return out


BAD_FILES = {
    "flipped": (flipped, "does not match its sha256 digest"),
    "truncated": (lambda g, o: o.write_bytes(g.read_bytes()[: len(g.read_bytes()) // 2]) and o,
                  "not a readable torch network file"),
    "empty": (lambda g, o: o.write_bytes(b"") or o, "not a readable torch network file"),
    "foreign": (lambda g, o: o.write_text("hello, I am a text file\n") and o, "not a readable torch network file"),
    "tensor": (lambda g, o: torch.save(torch.zeros(3), o) or o, "holds a Tensor"),
    "other format": (lambda g, o: torch.save({"format": "someone.else/2"}, o) or o, "format tag 'someone.else/2'"),
    "no digest": (lambda g, o: torch.save({k: v for k, v in torch.load(g, weights_only=True).items()
                                           if k != "sha256"}, o) or o, "without its sha256 digest"),
    "hostile": (lambda g, o: torch.save({"format": "hopzero.net/1", "config": Exploit()}, o) or o,
                "refused: the file pickles Python objects"),
}


@pytest.mark.parametrize("kind", BAD_FILES)
@pytest.mark.parametrize("command", ["match", "play"])
def test_a_bad_network_file_is_one_line_and_exit_2(good_model, tmp_path, capsys, kind, command):
    from hopzero.cli import main

    make, problem = BAD_FILES[kind]
    bad = make(good_model, tmp_path / "BAD.pt")
    argv = (["match", "--a", f"mcts:model={bad},sims=2", "--b", "greedy", "--games", "2"] if command == "match"
            else ["play", "--player", f"mcts:model={bad}"])
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"hopzero {command}: error: ") and str(bad) in err and problem in err
    assert not EXPLOITED


def test_a_learner_checkpoint_is_a_model(tmp_path, capsys):
    """The README's promise: model= takes a learner checkpoint, with its run's encoding and c."""
    from learner.players import make_player
    from hopzero.cli import main
    from learner.checkpoint import save_checkpoint
    from learner.training import LearnerConfig, Trainer

    trainer = Trainer(NETWORK.net_config(RULES), LearnerConfig(), seed=0)
    run = {"network": {"size": "tiny", "encoding": "general", "history": 3}, "search": {"c_puct": 1.25}}
    path = save_checkpoint(tmp_path, trainer, {"stage": 2, "config": run})
    assert make_player(f"mcts:model={path}", RULES, seed=0).config.c_puct == 1.25
    assert main(["match", "--a", f"mcts:model={path},sims=2", "--b", "greedy", "--games", "2"]) == 0
    capsys.readouterr()
    damaged = flipped(path, tmp_path / "checkpoint-0000000009.pt")
    assert main(["match", "--a", f"mcts:model={damaged},sims=2", "--b", "greedy", "--games", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "damaged checkpoint" in err and str(damaged) in err
