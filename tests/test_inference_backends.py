"""The network's inference backends (learner.backends, learner.onnx_backend): ONNX Runtime and
torch.compile agree with eager PyTorch on the search's own leaves of every preset, take new
weights in place, and are chosen by the config and the SPEC; `hopzero export --onnx` writes a
model that ONNX Runtime runs alone."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from test_cli import hopzero_command

from actors.selfplay import SelfPlayWorker
from ccengine import preset
from learner.players import make_player
from ccengine.encoding import encoding_for
from ccengine.engines import new_state
from ccengine.players import PlayerSpecError
from ccengine.search import BatchedSearch, SearchConfig, UniformEvaluator
from learner.backends import BACKENDS, resolve_backend
from learner.inference import Inference
from learner.model import NetConfig, NetworkConfig, PolicyValueNet
from learner.model_files import shipped_model_path
from learner.network_evaluator import NetworkEvaluator, network_inference
from learner.network_player import network_player  # registers the mcts player

# Every board shape and size: the seed's, ours, the big rhombus, a small one, the star.
PRESETS = ("paper", "cc49", "cc81", "small-5-3", "star2")
TOLERANCE = 1e-4


@pytest.fixture(autouse=True, scope="module")
def _restore_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


class _Recorder:
    """Uniform priors for the search, keeping every batch of leaves it was asked about."""

    needs_states = False

    def __init__(self) -> None:
        self.batches: list[tuple[np.ndarray, ...]] = []

    def evaluate(self, pieces, to_move, legal, counts):
        self.batches.append((pieces.copy(), to_move.copy(), legal.copy(), counts.copy()))
        return UniformEvaluator().evaluate(pieces, to_move, legal, counts)


def leaf_batches(rules, history: int, *, games: int = 8, moves: int = 8, seed: int = 0):
    """The batches of leaves a real search asks its evaluator about over a few moves of G games
    (openings to middle games; both players to move)."""
    recorder = _Recorder()
    search = BatchedSearch(rules, games, SearchConfig(num_simulations=16, random_opening_plies=2), history=history,
                           rng=np.random.default_rng(seed))
    states = [new_state(rules) for _ in range(games)]
    for g, state in enumerate(states):
        search.set_root(g, state)
    for _ in range(moves):
        for g, result in enumerate(search.search(recorder)):
            if result is not None and not states[g].is_terminal():
                states[g].play(result.move)
                if not states[g].is_terminal():
                    search.play(g, result.move)
    return recorder.batches


def evaluators(rules, encoding: str, backends: tuple[str, ...], size: str = "fast", seed: int = 0,
               opponent_head: bool = False):
    enc = encoding_for(rules, encoding, history=3)
    torch.manual_seed(seed)
    model = PolicyValueNet(NetConfig.for_rules(rules, enc.in_planes, size, opponent_head=opponent_head))
    # Batch norms with statistics other than the initial ones, so that folding them is tested.
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name.endswith("running_mean"):
                buffer.normal_(0, 0.1)
            elif name.endswith("running_var"):
                buffer.uniform_(0.5, 1.5)
    return [NetworkEvaluator(rules, enc, network_inference(rules, enc, model, backend=b)) for b in backends]


def assert_agree(reference, other, batches) -> None:
    for pieces, to_move, legal, counts in batches:
        p0, v0 = reference.evaluate(pieces, to_move, legal, counts)
        p1, v1 = other.evaluate(pieces, to_move, legal, counts)
        assert np.abs(p0 - p1).max() <= TOLERANCE
        assert np.abs(v0 - v1).max() <= TOLERANCE


@pytest.mark.parametrize("name", PRESETS)
def test_onnx_agrees_with_eager_on_the_leaves_of_every_preset(name):
    rules = preset(name)
    encodings = ("general",) if rules.is_star else ("general", "paper")
    for encoding in encodings:
        eager, onnx = evaluators(rules, encoding, ("eager", "onnx"))
        assert onnx.inference.backend == "onnx"
        batches = leaf_batches(rules, eager.encoding.history)
        assert sum(len(b[1]) for b in batches) >= 100
        assert {0, 1} <= set(np.concatenate([b[1] for b in batches]).tolist())  # both players to move
        assert_agree(eager, onnx, batches)


def assert_opponent_agrees(reference, other, batches) -> None:
    for pieces, to_move, legal, counts in batches:
        p0, v0, o0 = reference.evaluate_opponent(pieces, to_move, legal, counts)
        p1, v1, o1 = other.evaluate_opponent(pieces, to_move, legal, counts)
        assert o0.shape == (len(to_move), reference.encoding.policy_size)
        assert np.abs(p0 - p1).max() <= TOLERANCE
        assert np.abs(v0 - v1).max() <= TOLERANCE
        assert np.abs(o0 - o1).max() <= TOLERANCE
        # The two heads share the trunk and one run: the priors are evaluate()'s.
        p2, v2 = other.evaluate(pieces, to_move, legal, counts)
        assert np.abs(p1 - p2).max() <= TOLERANCE and np.abs(v1 - v2).max() <= TOLERANCE


@pytest.mark.parametrize("name", ["cc49", "star2"])
def test_the_opponent_head_agrees_across_backends(name):
    rules = preset(name)
    eager, onnx, compiled = evaluators(rules, "general", ("eager", "onnx", "compile"), size="tiny",
                                       opponent_head=True)
    batches = leaf_batches(rules, 3, games=4, moves=4)
    assert {0, 1} <= set(np.concatenate([b[1] for b in batches]).tolist())  # rotated rows too
    assert_opponent_agrees(eager, onnx, batches)
    assert_opponent_agrees(eager, compiled, batches[:2])


def test_the_opponent_logits_come_back_in_absolute_indices():
    """A row with player 1 to move: the evaluator turns the head's rotated frame back, so that
    logit ``id * cells + e`` is the reply to cell ``e`` of the board as the search numbers it."""
    rules = preset("cc49")
    (eager,) = evaluators(rules, "general", ("eager",), size="tiny", opponent_head=True)
    pieces, to_move, legal, counts = leaf_batches(rules, 3, games=4, moves=4)[-1]
    _, _, absolute = eager.evaluate_opponent(pieces, to_move, legal, counts)
    planes = eager.encoding.encode(pieces, to_move)
    _, _, frame = eager.inference.logits(planes, opponent=True)
    cells = rules.cells
    for b, mover in enumerate(to_move.tolist()):
        for index in (0, 5, cells + 7, rules.k * cells - 1):
            pid, dest = divmod(index, cells)
            seen = pid * cells + (cells - 1 - dest if mover == 1 else dest)
            assert absolute[b, index] == frame[b, seen]


def test_a_network_without_the_opponent_head_refuses_to_answer_for_it():
    rules = preset("cc49")
    for backend in ("eager", "onnx"):
        (evaluator,) = evaluators(rules, "general", (backend,), size="tiny")
        assert not evaluator.has_opponent_model
        pieces, to_move, legal, counts = leaf_batches(rules, 3, games=2, moves=4)[-1]
        with pytest.raises(ValueError, match="no opponent head"):
            evaluator.evaluate_opponent(pieces, to_move, legal, counts)
        with pytest.raises(ValueError, match="no opponent head"):
            evaluator.inference.logits(evaluator.encoding.encode(pieces, to_move), opponent=True)


def test_torch_compile_agrees_with_eager():
    rules = preset("small-5-3")
    eager, compiled = evaluators(rules, "general", ("eager", "compile"), size="tiny")
    assert_agree(eager, compiled, leaf_batches(rules, 3, games=4, moves=4))


def test_auto_is_int8_on_cpu_and_eager_on_cuda():
    assert resolve_backend("auto", "cpu") == "onnx-int8"
    assert resolve_backend("auto", "cuda") == "eager"
    rules = preset("paper")
    enc = encoding_for(rules, "paper", history=3)
    model = PolicyValueNet(NetConfig.for_rules(rules, enc.in_planes, "paper"))
    assert network_inference(rules, enc, model).backend == "onnx-int8"
    # Without positions of the game to calibrate on, auto stays in float32.
    assert Inference(model, device="cpu").backend == "onnx"
    with pytest.raises(ValueError, match="unknown inference backend 'tensorrt'"):
        Inference(PolicyValueNet(NetConfig.paper()), backend="tensorrt")


def test_new_weights_reach_the_onnx_session_in_place():
    rules = preset("cc49")
    (onnx,) = evaluators(rules, "general", ("onnx",))
    batch = leaf_batches(rules, 3, games=4, moves=4)[-1]
    before = onnx.evaluate(*batch)
    for seed in (1, 2):
        torch.manual_seed(seed)
        weights = PolicyValueNet(onnx.inference.config).state_dict()
        onnx.inference.load_state_dict(weights)
        (eager,) = evaluators(rules, "general", ("eager",), seed=seed)
        eager.inference.load_state_dict(weights)
        after = onnx.evaluate(*batch)
        expected = eager.evaluate(*batch)
        assert np.abs(after[0] - expected[0]).max() <= TOLERANCE
        assert np.abs(after[1] - expected[1]).max() <= TOLERANCE
        assert np.abs(after[1] - before[1]).max() > 1e-3  # it really changed
        before = after


def test_a_self_play_worker_takes_new_weights_without_restarting():
    rules = preset("small-4-3")
    enc = encoding_for(rules, "general", history=2)
    net = NetConfig.for_rules(rules, enc.in_planes, "tiny")
    worker = SelfPlayWorker(rules, games=4, search=SearchConfig(num_simulations=8, random_opening_plies=0),
                            net_config=net,
                            encoding="general", history=2, run_id="r", config_hash="c", actor="a", seed=1,
                            backend="onnx", eval_cache=1000)
    assert worker.network.inference.backend == "onnx"
    batch = leaf_batches(rules, 2, games=2, moves=4)[-1]
    for seed in (3, 4):
        torch.manual_seed(seed)
        model = PolicyValueNet(net)
        worker.set_weights(seed, {k: v.numpy() for k, v in model.state_dict().items()})
        worker.step()
        assert worker.cache.lookups > 0
        reference = NetworkEvaluator(rules, enc, Inference(model, backend="eager", threads=1))
        got, want = worker.network.evaluate(*batch), reference.evaluate(*batch)
        assert np.abs(got[0] - want[0]).max() <= TOLERANCE and np.abs(got[1] - want[1]).max() <= TOLERANCE


def test_the_config_and_the_spec_choose_the_backend():
    assert NetworkConfig().backend == "auto"
    assert set(BACKENDS) == {"auto", "eager", "compile", "onnx", "onnx-int8"}
    with pytest.raises(ValueError, match="backend"):
        NetworkConfig(backend="tpu")
    assert network_player is not None
    rules = preset("cc49")
    player = make_player("mcts:model=shipped,sims=4,backend=eager", rules, 1)
    assert player.evaluator.inner.inference.backend == "eager"  # behind the player's evaluation cache
    assert make_player("mcts:model=shipped,sims=4", rules, 1).evaluator.inner.inference.backend == "onnx-int8"
    with pytest.raises(PlayerSpecError, match="backend='gpu'.*a backend \\(auto, eager, compile, onnx, onnx-int8\\)"):
        make_player("mcts:model=shipped,sims=4,backend=gpu", rules, 1)


# ---- 8 bits ------------------------------------------------------------------------------------


def int8_gap(reference, int8, batches) -> dict[str, float]:
    """How far ``int8``'s priors (L1 per position) and values are from ``reference``'s."""
    l1, dv = [], []
    for batch in batches:
        (p0, v0), (p1, v1) = reference.evaluate(*batch), int8.evaluate(*batch)
        l1.append(np.abs(p0 - p1).sum(axis=1))
        dv.append(np.abs(v0 - v1))
    l1, dv = np.concatenate(l1), np.concatenate(dv)
    return {"l1_mean": l1.mean(), "l1_max": l1.max(), "value_mean": dv.mean(), "value_max": dv.max()}


@pytest.mark.parametrize(("name", "encoding"), [("paper", "paper"), ("cc49", "general"), ("star2", "general")])
def test_int8_stays_close_to_eager_on_the_leaves(name, encoding):
    rules = preset(name)
    eager, int8 = evaluators(rules, encoding, ("eager", "onnx-int8"))
    assert int8.inference.backend == "onnx-int8"
    gap = int8_gap(eager, int8, leaf_batches(rules, 3))
    # Measured: priors 0.005-0.012 apart (L1) on average, values 0.002-0.013.
    assert gap["l1_mean"] <= 0.03 and gap["l1_max"] <= 0.08, gap
    assert gap["value_mean"] <= 0.03 and gap["value_max"] <= 0.15, gap


@pytest.mark.parametrize("name", ["cc49", "star2"])
def test_int8_of_a_trained_network_stays_close(name):
    from learner.network_evaluator import load_network_evaluator

    rules = preset(name)
    eager, int8 = (load_network_evaluator(rules, shipped_model_path(rules), backend=b) for b in ("eager", "onnx-int8"))
    gap = int8_gap(eager, int8, leaf_batches(rules, 3))
    assert gap["l1_mean"] <= 0.12 and gap["value_mean"] <= 0.06, gap
    assert gap["l1_mean"] > 0  # really 8 bits, not float32


def test_new_weights_reach_the_int8_session():
    rules = preset("cc49")
    eager, int8 = evaluators(rules, "general", ("eager", "onnx-int8"))
    batches = leaf_batches(rules, 3, games=4, moves=4)
    before = int8.evaluate(*batches[-1])
    torch.manual_seed(7)
    weights = PolicyValueNet(int8.inference.config).state_dict()
    for evaluator in (eager, int8):
        evaluator.inference.load_state_dict(weights)
    gap = int8_gap(eager, int8, batches)
    assert gap["l1_mean"] <= 0.03 and gap["value_mean"] <= 0.03, gap
    assert np.abs(int8.evaluate(*batches[-1])[0] - before[0]).max() > 1e-2  # the new network


def test_int8_needs_calibration_and_the_cpu():
    model = PolicyValueNet(NetConfig.paper())
    with pytest.raises(ValueError, match="onnx-int8 backend needs calibration planes"):
        Inference(model, backend="onnx-int8", device="cpu")
    with pytest.raises(ValueError, match="runs on the CPU only, not on cuda"):
        resolve_backend("onnx-int8", "cuda")
    with pytest.raises(ValueError, match="calibration planes must be a non-empty"):
        Inference(model, backend="onnx-int8", device="cpu", calibration=np.zeros((0, 7, 7, 7), dtype=np.float32))


def test_calibration_planes_are_positions_of_the_game():
    from learner.onnx_backend import calibration_planes

    rules = preset("cc49")
    enc = encoding_for(rules, "general", history=3)
    planes = calibration_planes(rules, enc, positions=64, seed=3)
    assert planes.shape == (64, *enc.input_shape) and not planes.flags.writeable
    assert np.array_equal(planes, calibration_planes(rules, enc, positions=64, seed=3))
    assert not np.array_equal(planes, calibration_planes(rules, enc, positions=64, seed=4))
    assert set(np.unique(planes)) <= {0.0, 1.0}
    assert (planes[:, 0].sum(axis=(1, 2)) == rules.k).all() and (planes[:, 1].sum(axis=(1, 2)) == rules.k).all()
    player_one_to_move = planes[:, 2 * 3 + rules.k, 0, 0]  # the general encoding's side plane
    assert 0 < player_one_to_move.sum() < len(planes)  # both sides to move


# ---- hopzero export --onnx ----------------------------------------------------------------------

RUN_ALONE = r"""
import json, sys
import numpy as np
import onnxruntime as ort
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
planes = np.load(sys.argv[2])
logits, value = session.run(None, {"planes": planes})
print(json.dumps({"torch_loaded": "torch" in sys.modules,
                  "meta": session.get_modelmeta().custom_metadata_map,
                  "logits": logits.tolist(), "value": value.tolist()}))
"""


def hopzero(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(hopzero_command() + list(args), capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize("name", ["cc49", "star2"])
def test_exported_model_runs_in_onnx_runtime_alone(tmp_path, name):
    rules = preset(name)
    out = tmp_path / f"{name}.onnx"
    proc = hopzero("export", "--onnx", "shipped", str(out), "--preset", name, "--json")
    meta = json.loads(proc.stdout)["metadata"]
    assert meta["preset"] == name and meta["encoding"] == "general" and meta["history"] == "3"
    assert f"piece_id * {rules.cells} + destination" in meta["policy_index"]

    evaluator = evaluators(rules, "general", ("eager",))[0]
    from learner.network_evaluator import load_network_evaluator

    shipped = load_network_evaluator(rules, shipped_model_path(rules), backend="eager")
    pieces, to_move, _, _ = leaf_batches(rules, 3, games=4, moves=4)[-1]
    planes = evaluator.encoding.encode(pieces, to_move)
    np.save(tmp_path / "planes.npy", planes)
    alone = json.loads(subprocess.run([sys.executable, "-c", RUN_ALONE, str(out), str(tmp_path / "planes.npy")],
                                      capture_output=True, text=True, check=True, timeout=120, cwd=tmp_path).stdout)
    assert not alone["torch_loaded"]
    assert alone["meta"] == meta
    logits, values = shipped.inference.logits(planes)
    assert np.abs(np.asarray(alone["logits"]) - logits).max() <= TOLERANCE
    assert np.abs(np.asarray(alone["value"]).reshape(-1) - values).max() <= TOLERANCE


def test_export_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a model\n" * 10)
    out = tmp_path / "out.onnx"
    cases = [
        (("export", "--onnx", str(garbage), str(out)), "garbage.pt: refused"),
        (("export", "--onnx", str(shipped_model_path(preset("star2"))), str(out), "--preset", "cc49"),
         "plays 'star2', not 'cc49'"),
        (("export", "--onnx", "shipped", str(out)), "give --preset"),
        (("export", "--onnx", str(tmp_path / "missing.pt"), str(out)), "no such file"),
    ]
    for args, words in cases:
        proc = hopzero(*args, check=False)
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert not out.exists()
