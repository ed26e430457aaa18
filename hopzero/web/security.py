"""Who may talk to the server: the ``Host`` and ``Origin`` of every request and websocket.

- **Host** (against DNS rebinding: a page of another site whose name is made to resolve to this
  server's address sends its own name as ``Host``): the host part must be ``localhost``, an IP
  address (a rebinding attacker controls names, not the addresses a browser shows as the host),
  or a name given with ``--allow-host`` (what people type to reach a server run with
  ``--host 0.0.0.0``).
- **Origin** (against another site's page sending requests or opening sockets with a visitor's
  browser): when the browser sends one, it must be this same server (scheme ``http`` or
  ``https`` and the request's own ``Host``). Browsers send it on every websocket and every
  ``POST``; a request without one (a script, ``curl``) is not a browser acting for another site.

A request that fails gets status 403 with one line saying why; a websocket that fails is
refused before it opens.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["HostCheck"]


def _host_name(host: str) -> str:
    """The name or address of a ``Host`` value, without its port (IPv6 in brackets)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class HostCheck:
    """The allowed hosts of one server: loopback names, IP addresses, and ``allowed`` names."""

    def __init__(self, allowed: list[str] | tuple[str, ...] = ()) -> None:
        self.allowed = {a.strip().lower().rstrip(".") for a in allowed if a.strip()}

    def host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        name = _host_name(host).rstrip(".")
        if name == "localhost" or name in self.allowed:
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    def refusal(self, host: str | None, origin: str | None) -> str | None:
        """Why a request with these headers is refused; None when it is allowed."""
        if not self.host_allowed(host):
            return (f"Host {host!r} is not this server's: open it by its address, or start the server with "
                    f"--allow-host NAME")
        if origin is None:
            return None
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.netloc.lower() != (host or "").strip().lower():
            return f"requests from the page at {origin!r} are not accepted (only this server's own pages)"
        return None
