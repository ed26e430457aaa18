"""Redis URLs and their passwords: the password never lives in a URL that hopzero writes down.

A run's configuration (``config.yaml``, its hash, every checkpoint) and its command line (``ps``)
carry the Redis URL without a password; the password comes from the environment or a file
(``hopzero train``: ``HOPZERO_REDIS_PASSWORD`` or ``--redis-password-file``) and is put into the
URL in memory only, for the components that connect. Messages and logs show URLs through
:func:`redact_url`.
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit, urlunsplit

__all__ = ["PASSWORD_ADVICE", "PASSWORD_ENV", "has_password", "redact_url", "with_password"]

#: The environment variable ``hopzero train`` reads the Redis password from.
PASSWORD_ENV = "HOPZERO_REDIS_PASSWORD"
#: Where a Redis password goes instead of a URL (for the one-line refusals).
PASSWORD_ADVICE = (f"give the URL without it (redis://HOST:PORT/DB) and the password in the environment "
                   f"({PASSWORD_ENV}) or in a file (hopzero train --redis-password-file FILE)")


def has_password(url: str) -> bool:
    """Whether ``url`` holds a password: ``redis://:PW@host``, ``redis://user:PW@host`` or a
    ``?password=`` query (redis-py reads both)."""
    parts = urlsplit(url)
    return parts.password is not None or "password" in parse_qs(parts.query)


def redact_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***`` (for messages and logs)."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if sep and at:
        user, colon, _password = creds.partition(":")
        url = f"{scheme}://{user}{':***' if colon else ''}@{host}"
    if "password=" in url:
        head, _, query = url.partition("?")
        query = "&".join("password=***" if item.startswith("password=") else item for item in query.split("&"))
        url = f"{head}?{query}"
    return url


def with_password(url: str, password: str) -> str:
    """``url`` (without a password) with ``password`` in it, for a client to connect with; keep
    the result in memory only."""
    parts = urlsplit(url)
    user = quote(parts.username or "", safe="")
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))
