"""``hopzero train --init-model``: a new run that starts from a network trained before.

The network (a network file, a run directory's best model or ``shipped``) becomes the new run's
first best model, exactly as stage 1's network would: it gets its model file and ``best.json``
in the run directory, the learner goes on from its weights in stage 2 (``LearnerService``
adopts the best model when it finds no checkpoint) and the actors play self-play with it at
once. Its version carries over, so the new run's candidates stay newer than it. ``run.json``
records where it came from (``initial_model``: the source, its SHA-256 and version), so the
run's provenance reaches back to the run that trained it.

Seeding is all or nothing. ``RUN_DIR/.seeding.json`` (the provenance) is written first, then the
model file and ``best.json``; ``run.json``, written last with ``initial_model``, commits it and
the marker goes. A failure undoes what was written (one line names the cause); a process killed
half way leaves the marker, and the next start settles it (:func:`settle_seeding`): the same
``--init-model`` completes the seeding, anything else undoes it first. A ``run.json`` that claims
an initial model its run never got as its first best model (written before this order was kept)
is settled the same way.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from hopzero.config import ConfigError, TrainConfig
from hopzero.rundir import RunDir

__all__ = ["SEEDING_FILE", "InitialModel", "SeedingFailed", "load_initial_model", "settle_seeding"]

#: The marker of a seeding in progress: the initial model's provenance, until run.json has it.
SEEDING_FILE = ".seeding.json"


class SeedingFailed(ConfigError):
    """Writing the initial model into the run directory failed; what was written is undone."""


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
    added_parts: tuple[str, ...] = ()
    """What this run added to the file's network (``NetConfig`` flags: auxiliary heads, global
    pooling), new weights."""

    def provenance(self) -> dict[str, Any]:
        """What ``run.json`` records about it."""
        record = {"source": self.source, "path": str(self.path.resolve()), "sha256": self.sha256,
                  "version": self.version}
        if self.added_parts:
            record["added_parts"] = list(self.added_parts)
        return record

    def seed(self, run_dir: Path, config: TrainConfig) -> None:
        """Make it ``run_dir``'s best model: the marker, its model file, then the pointer (a
        promotion with no gating games, as the evaluator records stage 1's network). Idempotent.
        On any failure what was written is undone and :class:`SeedingFailed` names the cause;
        :meth:`committed` ends it once ``run.json`` records the model."""
        from evaluator.promotion import promote
        from learner.model import load_net
        from learner.model_files import promoted_model_path, save_promoted_model
        from plumbing.run_files import atomic_write_text, read_pointer

        path = promoted_model_path(run_dir, self.version)
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(run_dir / SEEDING_FILE, json.dumps(self.provenance(), indent=2) + "\n")
            save_promoted_model(path, load_net(self.state), network=config.network, preset=config.preset,
                                version=self.version, config_hash=config.hash(), c_puct=config.search.c_puct,
                                algo=config.algo)
            # a pointer to this version already: an unfinished seeding that this one completes
            current = read_pointer(run_dir)
            promote(run_dir, self.version, path, score=0.0, games=0,
                    expect_current="" if current is None else str(self.version))
        except BaseException as exc:
            _undo(run_dir, self.version)
            if isinstance(exc, Exception):
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
                raise SeedingFailed(
                    f"--init-model {self.source}: writing v{self.version} into {run_dir} failed ({why}); it was "
                    "undone: fix the cause (disk space, the file size limit, permissions) and run the same command again"
                ) from None
            raise

    @staticmethod
    def committed(run_dir: Path) -> None:
        """``run.json`` records the model now: the seeding is done."""
        (run_dir / SEEDING_FILE).unlink(missing_ok=True)


def _undo(run_dir: Path, version: int) -> None:
    """Remove what seeding model ``version`` wrote: its model file, ``best.json`` and the history
    line when they name it, and the marker. Nothing else of a run exists before it is seeded."""
    from evaluator.promotion import HISTORY_FILE
    from learner.model_files import promoted_model_path
    from plumbing.run_files import BEST_FILE, read_jsonl

    best = run_dir / BEST_FILE
    with contextlib.suppress(OSError, ValueError):
        if str(json.loads(best.read_text())["version"]) == str(version):
            best.unlink()
    history = run_dir / HISTORY_FILE
    if history.is_file() and all(str(e.get("version")) == str(version) for e in read_jsonl(history)):
        history.unlink()
    promoted_model_path(run_dir, version).unlink(missing_ok=True)
    (run_dir / SEEDING_FILE).unlink(missing_ok=True)


def settle_seeding(rundir: RunDir, initial: InitialModel | None, out: TextIO) -> bool:
    """Finish or undo a seeding that stopped half way in ``rundir``, before a run starts there.

    Returns True when ``initial`` (this start's ``--init-model``) is the model whose seeding is
    unfinished and nothing else was promoted since: the caller seeds it again, which completes
    it. Any other unfinished seeding is undone (a line on ``out`` says so): its files go, and a
    ``run.json`` that claims an initial model the run never got as its first best model loses
    the claim (the checkpoints and models of a run that trained meanwhile stay).
    """
    from evaluator.promotion import HISTORY_FILE
    from learner.model_files import promoted_model_path
    from plumbing.run_files import read_jsonl, read_pointer

    path = rundir.path
    pending = _read_json(path / SEEDING_FILE)
    info = _read_json(path / "run.json") if rundir.exists else None
    claimed = info.get("initial_model") if info is not None else None
    history = read_jsonl(path / HISTORY_FILE)
    if pending is not None and claimed == pending:  # killed after run.json was written: it is done
        InitialModel.committed(path)
        return False
    if pending is None and isinstance(claimed, dict):
        if history and str(history[0].get("version")) == str(claimed.get("version")):
            return False  # seeded as claimed
        pending = claimed
    if pending is None:
        return False
    version = pending.get("version")
    best = read_pointer(path) if (path / "best.json").is_file() else None
    if initial is not None and initial.sha256 == pending.get("sha256") and (best is None or best.version == str(version)):
        return True
    if info is None or claimed is None:  # the marker's seeding: nothing else of the run exists yet
        if isinstance(version, int):
            _undo(path, version)
    else:
        if not history and isinstance(version, int):  # a partial model file of the failed seeding
            promoted_model_path(path, version).unlink(missing_ok=True)
        del info["initial_model"]
        rundir.write_info(info)
    (path / SEEDING_FILE).unlink(missing_ok=True)
    out.write(f"hopzero train: undid the unfinished seeding of {path} with v{version} from "
              f"{pending.get('source')!r} (--init-model): this run goes on without it\n")
    return False


def _read_json(path: Path) -> dict[str, Any] | None:
    """A small JSON object file of ours; None when absent or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def load_initial_model(config: TrainConfig, source: str) -> InitialModel:
    """The network ``source`` names, checked against ``config``: same preset, network shape,
    input encoding and algorithm. Every problem is one :class:`ConfigError`."""
    from learner.model import NetConfig, net_state, with_added_parts
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
    added: list[str] = []
    if shape != expected:
        # A run may add auxiliary heads or global pooling to a trained network; nothing else may differ.
        try:
            grown, added = with_added_parts(state, expected, seed=config.seed)
        except ValueError as exc:
            raise ConfigError(f"--init-model {source}: {exc} "
                              "(network.size, network.encoding and the game decide it)") from None
        state = net_state(grown, state.get("input"))
    version = recorded.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ConfigError(f"--init-model {source}: recorded model version {version!r} is not a whole number >= 0")
    return InitialModel(source=source, path=Path(path), sha256=sha256_file(path), version=version, state=state,
                        added_parts=tuple(added))
