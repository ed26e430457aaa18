"""Seats of a room: a person's or an engine's, and the secrets that hold them.

A person seat is held by a secret: the server makes a random token when a browser takes the seat,
hands it to that browser once (which keeps it in ``localStorage``) and keeps only its SHA-256. A
move, an undo or a resignation for the seat must carry the token, so a watcher (who has the link
but not the token) cannot play for a player, and neither can a reader of the database. The room's
creator has a token of the same kind, which lets it hand a seat nobody plays to an engine.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from .engines import Engine
from .palette import seat_name

__all__ = ["PERSON", "ENGINE", "Seat", "new_token", "token_hash", "token_matches"]

PERSON = "person"
ENGINE = "engine"
#: Random bytes of a seat's or a creator's token (and of a room's id).
TOKEN_BYTES = 16


def new_token() -> str:
    """A fresh secret (URL-safe text)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """What the server keeps of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_matches(token: str | None, kept: str | None) -> bool:
    """Whether ``token`` is the one whose hash is ``kept`` (compared in constant time)."""
    if not token or not kept:
        return False
    return hmac.compare_digest(token_hash(token), kept)


@dataclass
class Seat:
    """One seat: ``kind`` person or engine; an engine seat's :class:`Engine`; a person seat's
    ``holder`` (its token's hash, None while free) and ``name``."""

    kind: str
    engine: Engine | None = None
    holder: str | None = None
    name: str | None = None

    @property
    def free(self) -> bool:
        """A person seat nobody has taken."""
        return self.kind == PERSON and self.holder is None

    def stored(self) -> dict[str, Any]:
        """The seat as the database keeps it (the holder's hash included)."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.engine is not None:
            out["engine"] = self.engine.choice()
            out["label"] = self.engine.label
        if self.holder is not None:
            out["holder"] = self.holder
        if self.name is not None:
            out["name"] = self.name
        return out

    def public(self, seat: int, connected: bool) -> dict[str, Any]:
        """The seat as every browser sees it: never the holder's hash."""
        out: dict[str, Any] = {"seat": seat, "colour": seat_name(seat), "kind": self.kind}
        if self.kind == ENGINE and self.engine is not None:
            out["label"] = self.engine.label
            out["engine"] = self.engine.choice()
            out["spec"] = self.engine.spec
        else:
            out["label"] = self.name or ("free seat" if self.holder is None else "person")
            out["taken"] = self.holder is not None
            out["connected"] = connected
        return out
