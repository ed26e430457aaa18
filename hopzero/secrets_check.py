"""Refuse the deployment's secrets when they are missing, short or placeholders.

``docker-compose.yml`` runs ``python -m hopzero.secrets_check REDIS_PASSWORD RAY_AUTH_TOKEN
GRAFANA_ADMIN_PASSWORD`` as a one-shot service that every other service waits for: a secret
left empty, shorter than :data:`MIN_LENGTH` characters, or holding a placeholder word (the
``change-me`` kind) stops the whole deployment with one line per secret that names it and says
how to make one, and never echoes the value. Compose's own check
(``${VAR:?}``) already stops at an empty one; this one also stops at a weak one, which Ray's
token authentication, Redis and Grafana would each accept.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

__all__ = ["MIN_LENGTH", "PLACEHOLDER_WORDS", "main", "weakness"]

#: The shortest secret accepted: ``openssl rand -hex 24`` gives 48 characters.
MIN_LENGTH = 16
#: Words that mark a value someone meant to replace (compared without case, "-" and "_").
PLACEHOLDER_WORDS = ("changeme", "change", "replace", "example", "placeholder", "password", "secret", "default",
                     "token", "todo", "xxx")


def weakness(value: str) -> str | None:
    """Why ``value`` is no secret (empty, short, a placeholder, one repeated character), or None."""
    if not value:
        return "is empty"
    if len(value) < MIN_LENGTH:
        return f"is {len(value)} characters long, fewer than {MIN_LENGTH}"
    folded = value.lower().replace("-", "").replace("_", "")
    word = next((w for w in PLACEHOLDER_WORDS if w in folded), None)
    if word is not None:
        return f"looks like a placeholder (it contains {word!r})"
    if len(set(value)) == 1:
        return "is one character repeated"
    return None


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ) -> int:
    """Check the secrets named in ``argv`` (environment variables); 0 when every one is fit, 1
    (one line on stderr per unfit secret) otherwise, 2 when no name is given."""
    names = list(sys.argv[1:] if argv is None else argv)
    if not names:
        sys.stderr.write("usage: python -m hopzero.secrets_check NAME [NAME ...] (environment variables)\n")
        return 2
    failed = 0
    for name in names:
        why = weakness(environ.get(name, ""))
        if why is not None:
            failed += 1
            sys.stderr.write(f"hopzero: refusing to start: {name} {why}; set a random value in .env "
                             f"(e.g. openssl rand -hex 24) and start again\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
