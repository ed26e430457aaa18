"""A tiny training run with every KataGo technique on, in one process (seconds): the run config
with the options set, self-play with playout cap randomization, forced playouts and surprise
weights on the network the config builds (global pooling, auxiliary heads, the config's backend),
the replay window with the auxiliary targets, learner steps, new weights back to self-play, and
the ONNX export of the result. The Ray system around these parts is the one the other training
tests run; the parts are built here as the actor and learner services build them."""

from __future__ import annotations

import numpy as np
import pytest

from actors.selfplay import SelfPlayWorker, technique_options
from ccengine.encoding import encoding_for
from hopzero.config import load_config
from learner.aux_targets import aux_store
from learner.model import save_net
from learner.onnx_backend import AUX_OUTPUTS, export_onnx
from learner.replay import WindowMirror
from learner.training import Trainer
from torch_helpers import one_thread  # noqa: F401 (autouse fixture)

EVERY_TECHNIQUE = [
    "selfplay.full_search_prob=0.5", "selfplay.fast_simulations=4", "selfplay.surprise_weighting=true",
    "search.forced_playouts=2", "network.global_pooling=1", "network.ownership_head=true",
    "network.score_head=true", "network.opponent_head=true",
]
TINY = ["network.size=tiny", "network.backend=onnx-int8", "search.num_simulations=12", "selfplay.games_per_actor=6",
        "learner.batch_size=32", "learner.warmup_steps=0", "selfplay.rules.adjudicate=distance"]


@pytest.mark.parametrize(("preset_name", "max_plies"), [("star2", 60), ("cc49", 50)])
def test_a_tiny_run_trains_with_every_technique_on(preset_name, max_plies, tmp_path):
    config = load_config("demo", preset_name=preset_name, seed=2,
                         overrides=[*TINY, *EVERY_TECHNIQUE, f"selfplay.rules.max_plies={max_plies}"])
    rules, network = config.training_rules(), config.network
    net = network.net_config(rules)
    encoding = encoding_for(rules, network.encoding, history=network.history)
    worker = SelfPlayWorker(rules, games=config.selfplay.games_per_actor, search=config.search, net_config=net,
                            encoding=network.encoding, history=network.history, run_id="run", config_hash=config.hash(),
                            actor="a", seed=config.seed, backend=network.backend, **technique_options(config.selfplay))
    trainer = Trainer(net, config.learner, seed=config.seed, device="cpu")
    mirror = WindowMirror(None, encoding, window_positions=5000, opponent_target=net.opponent_head,
                          aux=aux_store(net, encoding, 5000))
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(2):  # play, learn, hand the new weights to self-play, again
        worker.set_weights(*trainer.export_weights())
        records = []
        while len(records) < 6:
            records += worker.step()
        for rec in records:
            assert rec.keep is not None and not rec.keep.all() and rec.weight is not None
            mirror.add_record(rec)
        for _ in range(4):
            losses.append(trainer.step(mirror.sample(32, rng)))
    assert worker.network.inference.backend == "onnx-int8"
    stats = worker.stats()
    assert 0.3 < stats["fast_searches"] / stats["searches"] < 0.7
    for key in ("policy_ce", "value_mse", "opponent_ce", "ownership_ce", "score_mse"):
        assert all(np.isfinite(step[key]) for step in losses), key
    assert losses[-1]["total"] < losses[0]["total"]

    save_net(trainer.model, tmp_path / "net.pt", input={"encoding": "general", "history": 3, "preset": preset_name})
    meta = export_onnx(tmp_path / "net.pt", tmp_path / "net.onnx", config.game_rules())
    assert set(AUX_OUTPUTS.values()) <= set(meta)
