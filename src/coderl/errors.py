"""The one exception tree of coderl.

Errors are split by who is at fault, like isolate's RE/XX split. A *program's* failure (wrong
answer, crash, timeout) is never an exception: it is a status in a result record. Exceptions are
for the two other parties::

Each class says what it becomes at the boundaries, as ``http_status`` (the server's and the
gateway's answer), ``exit_code`` (the `coderl` command's) and ``api_code`` (the machine-readable
code an API error body carries, e.g. OpenAI's ``context_length_exceeded``), so no boundary keeps
an isinstance ladder or reads a message's text::

    CoderlError                  (HTTP 500, exit 3)
    ├── BadRequest               the caller's fault: fix the request (HTTP 400, CLI exit 2)
    │   ├── UnknownLanguage      language not supported or its toolchain is missing (422)
    │   ├── InvalidTestSpec      tests in a form we cannot read (names what is wrong) (422)
    │   ├── UnsupportedProblem   e.g. interactive problems
    │   ├── NoCodeFound          a model response holds no program to run (422)
    │   ├── InvalidTask          a repository task row we cannot read (names the field)
    │   ├── EditRejected         a file edit the agent got wrong (no such file, text not found or not unique)
    │   ├── TooLarge             a file, body or request over a stated cap (413)
    │   ├── UntrustedInput       a request asks for what only the operator may (a shell step): names the field
    │   ├── CredentialRejected   a session credential that is not this session's (403)
    │   │   ├── NoCredential     a session route called without any credential (401)
    │   │   └── TokenRequired    a service route called without the operator's API token (401)
    │   ├── ContextExhausted     no room left in an agent's context or budget (context_length_exceeded)
    │   └── AgentFault           an agent's own doing: graded as an outcome (reward 0), never retried
    │       ├── MalformedDiff    a diff whose file headers cannot be read
    │       └── DiffUnavailable  the episode's files cannot be made into a diff (over the cap, unreadable)
    ├── SandboxError             our fault: infrastructure, retry or drop the sample (HTTP 503)
    │   ├── IsolationUnavailable the host cannot provide the security boundary
    │   ├── SlotFailure          a runner died, hung or answered nonsense
    │   ├── SessionFailure       an agent session's sandbox did not start, died or hung
    │   ├── ImageUnavailable     a task's container image cannot be had, built or unpacked here
    │   │   └── ImageNotPulled   a service's node lacks the image a request names: pre-pull it (409)
    │   ├── DeadlineExceeded     the request's deadline passed (HTTP 504: retry)
    │   └── Overloaded           the bounded queue is full (HTTP 429)
    ├── ClientDisconnected       the client went away (HTTP 499: only the log and metrics see it)
    ├── RepoUnavailable          a task's repository or commit is not on this node (409: the data's fault)
    ├── EnvBuildError            a task's environment could not be built (422: the task's fault)
    ├── GatewaySessionError      a gateway request for a closed or aborted session (HTTP 409)
    │   ├── UnknownSession       no session of that id (404)
    │   │   └── SessionExpired   a session that existed and was closed or reaped (410)
    │   └── SessionTimeout       the session ran past its time budget (408)
    └── ServiceError             talking to a coderl service over HTTP failed (client side)
        └── ServiceUnavailable   connection refused/reset, 429/503/504 after all retries
"""

from __future__ import annotations

from typing import Any


class CoderlError(Exception):
    """Base of every error coderl raises on purpose."""

    http_status: int = 500
    exit_code: int = 3
    api_code: str | None = None


class BadRequest(CoderlError):
    """The request is malformed; retrying it unchanged will fail again."""

    http_status = 400
    exit_code = 2


class UnknownLanguage(BadRequest):
    """A language we do not run; ``reason`` says why for one we know of (not packaged, ...)."""

    http_status = 422

    def __init__(self, language: str, supported: list[str] | tuple[str, ...], reason: str | None = None) -> None:
        self.language = language
        self.supported = list(supported)
        self.reason = reason
        what = f"language {language!r} is not available: {reason}" if reason else f"unknown language {language!r}"
        super().__init__(f"{what}; supported: {', '.join(sorted(supported))}")


class InvalidTestSpec(BadRequest):
    """Tests that cannot be parsed; the message names the field and what is wrong with it."""

    http_status = 422


class UnsupportedProblem(BadRequest):
    """A problem kind we deliberately do not judge (interactive problems)."""


class NoCodeFound(BadRequest):
    """A model response without any program in it."""

    http_status = 422


class InvalidTask(BadRequest):
    """A repository task row that lacks a field or holds one of the wrong shape (names which)."""


class EditRejected(BadRequest):
    """A file-edit request the agent got wrong (no such file, text not found or not unique)."""


class TooLarge(BadRequest):
    """A file, body or output request over a cap the service states in the message."""

    http_status = 413


class UntrustedInput(BadRequest):
    """A request over the network asks for something only the node's operator may give: a shell
    step, a build variable, a package URL, an install target other than the project (names the field). Such input runs
    on the host when the environment is built, so it comes from the operator's task files or the
    bundled environment tables only (docs/deploy.md, "Who may call")."""


class CredentialRejected(BadRequest):
    """A credential that does not belong to the session it is used for: one session's token can
    act on that session only (a sandbox must never reach another episode's sandbox or model calls)."""

    http_status = 403


class NoCredential(CredentialRejected):
    """A per-session route called without the session's credential."""

    http_status = 401


class TokenRequired(CredentialRejected):
    """A service route called without the operator's API token (``CODERL_API_TOKEN``) or with
    another one (401 either way: a wrong token says nothing about the right one)."""

    http_status = 401


class ContextExhausted(BadRequest):
    """No room left to generate: the request plus one token exceeds the context or budget."""

    api_code = "context_length_exceeded"


class AgentFault(BadRequest):
    """What an agent did wrong in an episode (its diff, its files): the episode's outcome, scored 0
    under a named status, never an infrastructure failure that masks the sample."""


class MalformedDiff(AgentFault):
    """A diff whose file headers cannot be read."""


class DiffUnavailable(AgentFault):
    """The episode's files cannot be turned into a diff (unreadable files, a diff over the size
    cap): the agent's doing, so the outcome is "no valid patch", not an infrastructure failure."""


class SandboxError(CoderlError):
    """The sandbox failed, not the program: the caller should retry or drop the sample."""

    http_status = 503


class IsolationUnavailable(SandboxError):
    """The host lacks a kernel feature the security boundary needs."""


NOT_RECEIVED: Any = object()  # a SlotFailure's compile record: the reply had not arrived


class SlotFailure(SandboxError):
    """An isolated runner died, hung, or broke the protocol. What did arrive before it failed
    travels with it, so the engine can resume after it on a fresh slot: ``compiled`` (the compile
    record, a ``sandbox.result.CompileResult``; None when nothing was compiled, `NOT_RECEIVED` when
    no reply came), ``partial`` (the ``RunResult`` records that came), ``oom_killed`` (the slot's
    cgroup saw an out-of-memory kill: the program's doing, a verdict rather than our fault) and
    ``stopped`` (the stop rule had already fired on a record in ``partial``: the rest is skipped, not
    resumed). The records are typed ``Any`` here, as this module imports nothing from the layers above it."""

    def __init__(self, message: str, *, compiled: Any = NOT_RECEIVED, partial: list[Any] | None = None,
                 oom_killed: bool = False, stopped: bool = False) -> None:
        super().__init__(message)
        self.compiled = compiled
        self.partial = partial or []
        self.oom_killed = oom_killed
        self.stopped = stopped


class SessionFailure(SandboxError):
    """An agent session's sandbox failed (did not start, died, hung): our fault, never the agent's."""


class ImageUnavailable(SandboxError):
    """A task's container image cannot be pulled, built or unpacked on this machine (or names a
    user or work dir it does not have): the data's fault or ours, never the agent's."""


class ImageNotPulled(ImageUnavailable):
    """The image a request names is not on the service's node, which never pulls or builds at
    request time (minutes, a registry at training time): an operator's step, not a retry (409)."""

    http_status = 409


class DeadlineExceeded(SandboxError):
    """The work did not finish within the request's deadline."""

    http_status = 504


class Overloaded(SandboxError):
    """The bounded work queue is full; retry after a short delay."""

    http_status = 429


class ClientDisconnected(CoderlError):
    """The client went away before its answer was ready; its work was cancelled."""

    http_status = 499  # nginx's "client closed request": nobody reads it, the log and metrics do


class RepoUnavailable(CoderlError):
    """A task's repository or base commit is not in the local mirror / tarball directory: the
    data's fault or ours, never the agent's. 409, as `ImageNotPulled`: the node lacks what the
    request names, an operator's step, not a retry."""

    http_status = 409


class EnvBuildError(CoderlError):
    """A task's environment could not be built (the message holds the failing step's output): the
    task's fault (its pins do not resolve, its step fails), answered 422, never a 500; a failure
    of the service itself (no build sandbox here) is a `SandboxError` instead."""

    http_status = 422


class GatewaySessionError(CoderlError):
    """A gateway request for a session that is closed or aborted (HTTP 409)."""

    http_status = 409
    api_code = "session_error"


class UnknownSession(GatewaySessionError):
    """No open session of that id (or none named at all)."""

    http_status = 404


class SessionTimeout(GatewaySessionError):
    """The session ran past its time budget."""

    http_status = 408


class SessionExpired(UnknownSession):
    """A session that did exist and is gone: closed, or reaped when its lease ran out (410, so a
    client can tell "I was too slow" from "I named the wrong session")."""

    http_status = 410


class ServiceError(CoderlError):
    """A request to a coderl service failed on the transport or HTTP level."""


class ServiceUnavailable(ServiceError):
    """The service could not be reached or kept refusing work after every retry."""


def to_wire(exc: CoderlError) -> dict[str, str]:
    """A per-item error as the service answers it: ``{"type": <class name>, "message"}``."""
    return {"type": type(exc).__name__, "message": str(exc)}


def from_wire(error: dict[str, str]) -> CoderlError:
    """The error a per-item ``{"type", "message"}`` stands for, as its class in this tree (a name
    the tree lacks: a plain CoderlError), so callers test it with isinstance, not by its name."""
    kind = _BY_NAME.get(str(error.get("type")), CoderlError)
    exc = kind.__new__(kind)
    Exception.__init__(exc, str(error.get("message", "")))
    return exc


__all__ = [
    "AgentFault",
    "BadRequest",
    "ClientDisconnected",
    "CoderlError",
    "ContextExhausted",
    "CredentialRejected",
    "DeadlineExceeded",
    "DiffUnavailable",
    "EditRejected",
    "EnvBuildError",
    "GatewaySessionError",
    "InvalidTask",
    "InvalidTestSpec",
    "IsolationUnavailable",
    "MalformedDiff",
    "NoCodeFound",
    "NoCredential",
    "Overloaded",
    "RepoUnavailable",
    "SandboxError",
    "ServiceError",
    "ServiceUnavailable",
    "SessionExpired",
    "SessionFailure",
    "SessionTimeout",
    "SlotFailure",
    "TokenRequired",
    "TooLarge",
    "UnknownLanguage",
    "UnknownSession",
    "UnsupportedProblem",
    "UntrustedInput",
    "from_wire",
    "to_wire",
]


def _tree(cls: type[CoderlError]) -> list[type[CoderlError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _tree(child))]


# every class of this module's tree, found by walking it (a class added above needs no entry here)
_BY_NAME: dict[str, type[CoderlError]] = {cls.__name__: cls for cls in _tree(CoderlError) if cls.__module__ == __name__}
