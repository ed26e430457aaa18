"""KataGo's network-side techniques (Wu 2019) in learner.model: global pooling blocks that pool
over the board's cells only, the auxiliary ownership and score heads, every inference backend
running such a network, and the ONNX export carrying the auxiliary heads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ccengine.encoding import encoding_for
from ccengine.rules import preset
from learner.model import GlobalPoolingBottleneck, NetConfig, NetworkConfig, PolicyValueNet, load_net, save_net
from learner.model_files import shipped_model_path
from learner.network_evaluator import network_inference
from learner.onnx_backend import AUX_OUTPUTS, OUTPUT_NAMES, calibration_planes, export_onnx
from torch_helpers import one_thread  # noqa: F401 (autouse fixture)

STAR2, CC49, STAR3 = preset("star2"), preset("cc49"), preset("star3")
ALL_ON = dict(global_pooling=2, ownership_head=True, score_head=True)


def net_config(rules, size="tiny", encoding="general", **options) -> NetConfig:
    return NetworkConfig(size=size, encoding=encoding, **options).net_config(rules)


def planes_of(rules, count=32, seed=0) -> np.ndarray:
    return np.array(calibration_planes(rules, encoding_for(rules, "general", history=3), positions=count, seed=seed))


def test_every_nth_block_pools_and_the_defaults_change_nothing():
    cfg = net_config(STAR2, size="fast", global_pooling=2)
    kinds = [type(b) is GlobalPoolingBottleneck for b in PolicyValueNet(cfg).blocks]
    assert kinds == [False, True, False, True]
    assert cfg.mask_plane == cfg.in_planes - 1  # the general encoding's on-board plane
    assert net_config(CC49, encoding="paper", global_pooling=1).mask_plane == -1  # the rhombus: every element
    plain = net_config(STAR2, size="fast")
    assert (plain.global_pooling, plain.mask_plane, plain.ownership_head, plain.score_head) == (0, -1, False, False)
    assert plain == NetConfig.for_rules(STAR2, plain.in_planes, "fast")  # options off: the network of before
    shipped = load_net(shipped_model_path(CC49))  # a file written before the options
    assert not shipped.config.global_pooling and not any(type(b) is GlobalPoolingBottleneck for b in shipped.blocks)
    with pytest.raises(ValueError, match="mask_plane=99"):
        NetConfig(mask_plane=99)


@pytest.mark.parametrize("size", ["tiny", "paper"])
def test_global_pooling_sees_the_stars_cells_only(size):
    cfg = net_config(STAR2, size=size, global_pooling=1)
    net = PolicyValueNet(cfg).eval()
    x = torch.from_numpy(planes_of(STAR2, 4))
    mask = net.pooling_mask(x)
    plane = x[:, cfg.mask_plane:cfg.mask_plane + 1]
    offset = cfg.trunk_offset   # 0 with a padded stem, 1 with the paper network's unpadded one
    assert torch.equal(mask, plane[..., offset:offset + cfg.trunk_size, offset:offset + cfg.trunk_size])
    assert 0 < int(mask[0].sum()) <= STAR2.cells and int(mask[0].sum()) < cfg.trunk_size ** 2
    block = next(b for b in net.blocks if isinstance(b, GlobalPoolingBottleneck))
    features = torch.rand(4, cfg.channels, cfg.trunk_size, cfg.trunk_size)
    with torch.no_grad():
        pooled = block.pooled(features, mask)
        g = torch.relu(block.pool_conv(features))
        on = mask.bool().expand_as(g)
        for b in range(4):
            cells = g[b][on[b]].reshape(g.shape[1], -1)
            np.testing.assert_allclose(pooled[b, : g.shape[1]], cells.mean(dim=1), rtol=1e-5)
            np.testing.assert_allclose(pooled[b, g.shape[1]:], cells.amax(dim=1), rtol=1e-6)
        # What lies off the star does not reach the pooled values; without the mask it would.
        noisy = features + 5.0 * (1 - mask) * torch.rand_like(features)
        assert torch.allclose(block.pooled(noisy, mask), pooled, atol=1e-6)
        assert not torch.allclose(block.pooled(noisy, None), block.pooled(features, None), atol=1e-3)


def test_the_auxiliary_heads_train_only_and_leave_the_rest_as_it_was():
    for rules in (CC49, STAR2, STAR3):
        torch.manual_seed(3)
        plain = PolicyValueNet(net_config(rules)).eval()
        torch.manual_seed(3)
        aux = PolicyValueNet(net_config(rules, ownership_head=True, score_head=True)).eval()
        x = torch.from_numpy(planes_of(rules, 6))
        with torch.no_grad():
            assert len(aux(x)) == 2  # forward: what the search asks for
            out = aux.outputs(x)
            for a, b in zip(plain(x), aux(x)):
                assert torch.equal(a, b)  # the heads are drawn after the rest: same start, same answers
        players = rules.players
        n = aux.config.n
        assert tuple(out["ownership"].shape) == (6, players + 1, n, n)
        assert tuple(out["score"].shape) == (6, players + 1)
    # the paper network's unpadded stem: the ownership logits still cover every input element
    cfg = net_config(CC49, size="paper", ownership_head=True)
    out = PolicyValueNet(cfg).outputs(torch.zeros(2, cfg.in_planes, 7, 7))
    assert tuple(out["ownership"].shape) == (2, 3, 7, 7)


@pytest.mark.parametrize("rules", [STAR2, CC49], ids=lambda r: r.name)
def test_every_backend_runs_a_network_with_every_technique(rules):
    cfg = net_config(rules, **ALL_ON, opponent_head=True)
    torch.manual_seed(1)
    model = PolicyValueNet(cfg)
    planes = planes_of(rules, 48)
    legal = np.tile(np.arange(24, dtype=np.int32), (len(planes), 1))
    counts = np.full(len(planes), 24, np.int32)
    enc = encoding_for(rules, "general", history=3)
    backends = ("eager", "onnx", "onnx-int8") + (("compile",) if rules.is_star else ())  # compiling takes seconds
    results = {b: network_inference(rules, enc, model, backend=b).evaluate(planes, legal, counts) for b in backends}
    eager = results.pop("eager")
    for backend, (priors, values) in results.items():
        tol = 0.05 if backend == "onnx-int8" else 1e-4
        assert np.abs(priors - eager.priors).max() <= tol, backend
        assert np.abs(values - eager.values).max() <= tol, backend


def test_the_onnx_export_carries_the_auxiliary_heads(tmp_path):
    import onnxruntime as ort

    for rules in (STAR2, STAR3):
        cfg = net_config(rules, **ALL_ON)
        torch.manual_seed(4)
        model = PolicyValueNet(cfg)
        src, out = tmp_path / f"{rules.name}.pt", tmp_path / f"{rules.name}.onnx"
        save_net(model, src, input={"encoding": "general", "history": 3, "preset": rules.name})
        meta = export_onnx(src, out)
        assert "goal cells" in meta[AUX_OUTPUTS["ownership"]] and "move limit" in meta[AUX_OUTPUTS["score"]]
        session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        assert names == [*OUTPUT_NAMES, AUX_OUTPUTS["ownership"], AUX_OUTPUTS["score"]]
        planes = planes_of(rules, 5)
        got = dict(zip(names, session.run(None, {"planes": planes})))
        with torch.no_grad():
            want = model.eval().outputs(torch.from_numpy(planes))
        for key, name in (("policy", OUTPUT_NAMES[0]), ("value", OUTPUT_NAMES[1]), *AUX_OUTPUTS.items()):
            np.testing.assert_allclose(got[name].reshape(want[key].shape), want[key].numpy(), atol=1e-4)
