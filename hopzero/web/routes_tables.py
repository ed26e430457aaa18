"""The Tables view: the cross tables and ratings of the ``--results`` files (match results and
tournaments, the multi-player ladder among them)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from .server import Server

__all__ = ["router"]


def router(server: Server) -> APIRouter:
    """The Tables view's route over ``server``."""
    api = APIRouter()

    @api.get("/api/tables")
    async def tables(preset: Annotated[str | None, Query(max_length=16, pattern=r"^[a-z0-9-]+$")] = None) -> Any:
        return server.tables.view(preset)

    return api
