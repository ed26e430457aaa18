"""What the compiled engine's differential tests share."""

from __future__ import annotations

from ccengine import _core


def scratch_hash(state: _core.State) -> int:
    """The Zobrist hash recomputed in Python from the published keys."""
    tables = state.tables
    h = tables.zobrist_turn(state.to_move)
    for cell, owner in enumerate(state.board):
        if owner >= 0:
            h ^= tables.zobrist(owner, cell)
    return h
