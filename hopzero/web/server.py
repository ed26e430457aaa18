"""The parts of one server, built once and shared by its routers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ccengine import Rules, preset
from ccengine.rules import RulesError

from .engines import Engines
from .hall import Hall
from .limits import ChoiceError, Limits
from .models import ModelLibrary
from .runs import RunDirs
from .searches import Pools
from .security import HostCheck
from .store import Store
from .tables import Tables

__all__ = ["Server", "rules_of"]


def rules_of(name: str) -> Rules:
    """The rules of preset ``name``; :class:`ChoiceError` for an unknown one."""
    try:
        return preset(name)
    except RulesError as exc:
        raise ChoiceError(str(exc)) from None


@dataclass
class Server:
    """Everything a request may need: caps, runs, tables, models, engines, games, pools, hosts."""

    limits: Limits
    runs: RunDirs
    tables: Tables
    library: ModelLibrary
    engines: Engines
    store: Store
    pools: Pools
    hall: Hall
    hosts: HostCheck

    @classmethod
    def build(cls, *, data_dir: str | Path, limits: Limits, run_dirs: list[str | Path], results: list[str | Path],
              allowed_hosts: list[str], room_ids: Callable[[], str] | None = None) -> Server:
        """The parts, checked (a bad ``--run-dir``, ``--results`` or ``--data`` fails here).
        ``room_ids`` makes new rooms' ids (default: unguessable random ones)."""
        runs = RunDirs(run_dirs)
        tables = Tables(results)
        library = ModelLibrary(limits.max_models)
        engines = Engines(runs, limits, library)
        store = Store(data_dir)
        pools = Pools(limits)
        hall = Hall(store, engines, limits, pools, room_ids)
        return cls(limits, runs, tables, library, engines, store, pools, hall, HostCheck(allowed_hosts))

    async def close(self) -> None:
        await self.hall.close()
        self.pools.shutdown()
        self.store.close()
