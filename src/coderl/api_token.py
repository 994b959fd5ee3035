"""The operator's API token: who may call the service's own routes, the session service and the
gateway's admin routes (docs/deploy.md, "Who may call").

Optional. The operator sets it with ``CODERL_API_TOKEN`` (or a file: ``--api-token-file``, e.g. a
Kubernetes Secret's key mounted as a file); a caller sends it as ``Authorization: Bearer <token>``
or, where ``Authorization`` already carries a session's own token, as ``X-Coderl-Token``.
`coderl.client` sends it whenever ``CODERL_API_TOKEN`` is set in its environment, so the trainer's
workers (verl's reward, tool and agent loop) pass it without a setting of their own.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from pathlib import Path

from coderl.errors import BadRequest

ENV = "CODERL_API_TOKEN"
HEADER = "x-coderl-token"


def token_from(file: str | None = None) -> str:
    """The token: ``file``'s content when given, else ``$CODERL_API_TOKEN``; empty: no token."""
    if file:
        try:
            token = Path(file).read_text().strip()
        except OSError as exc:
            raise BadRequest(f"--api-token-file {file}: {exc.strerror}") from None
        if not token:
            raise BadRequest(f"--api-token-file {file} is empty")
        return token
    return os.environ.get(ENV, "").strip()


def presented(headers: Mapping[str, str]) -> list[str]:
    """The tokens a request carries (lower-case header names): ``X-Coderl-Token`` and the bearer one."""
    found = [headers[HEADER]] if headers.get(HEADER) else []
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        found.append(auth[7:].strip())
    return found


def accepted(headers: Mapping[str, str], token: str) -> bool:
    """Whether the request carries ``token`` (compared in constant time)."""
    return any(hmac.compare_digest(given.encode(), token.encode()) for given in presented(headers))
