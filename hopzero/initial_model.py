"""``hopzero train --init-model``: a new run that starts from a network trained before.

The network (a network file, a run directory's best model or ``shipped``) becomes the new run's
first best model, exactly as stage 1's network would: it gets its model file and ``best.json``
in the run directory, the learner goes on from its weights in stage 2 (``LearnerService``
adopts the best model when it finds no checkpoint) and the actors play self-play with it at
once. Its version carries over, so the new run's candidates stay newer than it. ``run.json``
records where it came from (``initial_model``: the source, its SHA-256 and version), so the
run's provenance reaches back to the run that trained it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopzero.config import ConfigError, TrainConfig

__all__ = ["InitialModel", "load_initial_model"]


@dataclass(frozen=True)
class InitialModel:
    """A checked network to start a run from."""

    source: str
    """What the user named (a path or ``shipped``)."""
    path: Path
    """The file it resolved to."""
    sha256: str
    version: int
    state: dict[str, Any]
    """The network (``learner.model.net_state`` format)."""

    def provenance(self) -> dict[str, Any]:
        """What ``run.json`` records about it."""
        return {"source": self.source, "path": str(self.path.resolve()), "sha256": self.sha256,
                "version": self.version}

    def seed(self, run_dir: Path, config: TrainConfig) -> None:
        """Make it ``run_dir``'s best model: its model file, then the pointer (a promotion with
        no gating games, as the evaluator records stage 1's network)."""
        from evaluator.promotion import promote
        from learner.model import load_net
        from learner.model_files import promoted_model_path, save_promoted_model

        path = promoted_model_path(run_dir, self.version)
        save_promoted_model(path, load_net(self.state), network=config.network, preset=config.preset,
                            version=self.version, config_hash=config.hash(), c_puct=config.search.c_puct,
                            algo=config.algo)
        promote(run_dir, self.version, path, score=0.0, games=0, expect_current="")


def load_initial_model(config: TrainConfig, source: str) -> InitialModel:
    """The network ``source`` names, checked against ``config``: same preset, network shape,
    input encoding and algorithm. Every problem is one :class:`ConfigError`."""
    from learner.model import NetConfig
    from learner.model_files import read_model_file, resolve_model_source
    from plumbing.run_files import sha256_file

    rules = config.training_rules()
    try:
        path = resolve_model_source(rules, source)
        state, meta = read_model_file(path)
        shape = NetConfig.from_dict(state["config"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"--init-model {source}: {exc}") from None
    recorded = state.get("input") if isinstance(state.get("input"), dict) else {}
    wanted = {"preset": config.preset, "encoding": config.network.encoding, "history": config.network.history,
              "algo": config.algo}
    for key, value in wanted.items():
        found = recorded.get(key, meta.get(key))
        if found is not None and found != value:
            raise ConfigError(f"--init-model {source}: the network was trained with {key}={found!r}, "
                              f"this run has {key}={value!r}")
    expected = config.network.net_config(rules)
    if shape != expected:
        theirs, ours = shape.to_dict(), expected.to_dict()
        differ = ", ".join(f"{k} {theirs.get(k)!r} (this run: {ours.get(k)!r})" for k in ours if theirs.get(k) != ours[k])
        raise ConfigError(f"--init-model {source}: the network's shape differs: {differ} "
                          "(network.size, network.encoding and the game decide it)")
    version = recorded.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ConfigError(f"--init-model {source}: recorded model version {version!r} is not a whole number >= 0")
    return InitialModel(source=source, path=Path(path), sha256=sha256_file(path), version=version, state=state)
