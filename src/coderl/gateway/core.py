"""The interception gateway's core: sessions, and one chat turn turned into one token-level
generation whose exact ids land in the session's `Trajectory`.

Per turn, under the session's lock:
1. The agent's messages are matched against the session's canonical log. A message the gateway
   produced and the agent echoed back is replaced by the record (raw sampled text, reasoning
   kept), so the model sees exactly what it sampled.
2. The log is re-rendered with the chat template (one render of the whole request) and checked
   against the token record: the text the recorded ids were built from, plus the template glue
   the model did not sample (the newline after ``<|im_end|>``), must be a prefix of the render.
   Then only the new suffix (that glue, tool results, user turns, the generation prompt) is
   tokenized and appended with mask 0.
3. Anything else is a drift: the request is rendered and tokenized whole and the trajectory forks
   (`Trajectory.fork`). Nothing is ever silently re-tokenized in place.
4. ``max_new_tokens`` is the smallest of the agent's ``max_tokens``, the context left and the
   response budget left; a request with no room gets `ContextExhausted` (HTTP 400,
   ``context_length_exceeded``) and marks the session truncated.
5. The generation runs within the session's deadline; past it the session is aborted.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from coderl.errors import BadRequest, ContextExhausted, GatewaySessionError, SessionTimeout, UnknownSession
from coderl.gateway.backends import TokenBackend
from coderl.gateway.chat import AssistantTurn, ChatFormat, canonical, same_message
from coderl.gateway.trajectory import Branch, Trajectory, common_prefix


@dataclass
class SessionConfig:
    max_context: int = 32768  # prompt + everything after it, in tokens
    max_response: int | None = None  # tokens after the first prompt (verl's response_length)
    max_prompt: int | None = None  # the first prompt's tokens (verl's prompt_length)
    timeout_s: float = 3600.0
    sampling: dict[str, Any] = field(default_factory=dict)  # forced: the agent's own knobs are ignored


@dataclass
class GatewaySession:
    id: str
    config: SessionConfig
    deadline: float
    trajectory: Trajectory = field(default_factory=Trajectory)
    # canonical messages of the current branch: {message, render (as the template saw it), at (the
    # wall-clock time it reached the gateway, or was sampled)}
    log: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    text: str = ""  # the text the current branch's ids were built from
    pending: str = ""  # template text after the last output that the model did not sample
    state: str = "open"  # open | closed | aborted
    reason: str = ""
    truncated: bool = False
    turns: int = 0
    ill_formed: int = 0
    generation_s: float = 0.0
    weights_versions: list[int] = field(default_factory=list)  # of each generation, where the backend says
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    task: asyncio.Task | None = None

    def summary(self) -> dict[str, Any]:
        final = self.trajectory.final()
        return {"id": self.id, "state": self.state, "reason": self.reason, "turns": self.turns,
                "branches": len(self.trajectory.branches), "drifts": self.trajectory.drifts,
                "truncated": self.truncated, "ill_formed_tool_calls": self.ill_formed,
                "prompt_tokens": final.prompt_len, "response_tokens": final.response_len,
                "sampled_tokens": final.sampled_tokens(), "demoted_tokens": final.demoted,
                "dropped_sampled_tokens": self.trajectory.dropped_sampled_tokens(),
                "generation_s": round(self.generation_s, 3)}


class Gateway:
    """Sessions and turns, independent of HTTP (the server module speaks the dialects)."""

    def __init__(self, fmt: ChatFormat, backend: TokenBackend, *, default: SessionConfig | None = None,
                 auto_open: bool = False, model_name: str = "coderl-policy") -> None:
        self.fmt = fmt
        self.backend = backend
        self.default = default or SessionConfig()
        self.auto_open = auto_open
        self.model_name = model_name
        self.sessions: dict[str, GatewaySession] = {}

    def open(self, session_id: str, config: SessionConfig | None = None) -> GatewaySession:
        if not session_id:
            raise BadRequest("a session id must be a non-empty string")
        if session_id in self.sessions and self.sessions[session_id].state == "open":
            raise BadRequest(f"session {session_id!r} is already open")
        config = config or self.default
        session = GatewaySession(session_id, config, time.monotonic() + config.timeout_s)
        self.sessions[session_id] = session
        return session

    def get(self, session_id: str | None) -> GatewaySession:
        if not session_id:
            raise UnknownSession("no session id: send it as the API key, the X-Coderl-Session header "
                                 "or the /s/<session>/v1 base URL")
        session = self.sessions.get(session_id)
        if session is None:
            if not self.auto_open:
                raise UnknownSession(f"unknown session {session_id!r}")
            session = self.open(session_id)
        return session

    def abort(self, session_id: str, reason: str) -> None:
        session = self.sessions.get(session_id)
        if session is None or session.state != "open":
            return
        session.state, session.reason = "aborted", reason
        if session.task is not None and not session.task.done():
            session.task.cancel()

    async def close(self, session_id: str) -> GatewaySession:
        """End a session and hand back its record; an in-flight turn is cancelled first."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            raise UnknownSession(f"unknown session {session_id!r}")
        if session.state == "open":
            if session.task is not None and not session.task.done():
                session.task.cancel()
            session.state = "closed"
        async with session.lock:  # wait for the cancelled turn to unwind
            pass
        return session

    async def turn(self, session_id: str | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                   max_tokens: int | None) -> AssistantTurn:
        session = self.get(session_id)
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list")
        msgs = [canonical(m) for m in messages]
        async with session.lock:
            self._check_open(session)
            session.task = asyncio.current_task()
            try:
                return await self._turn(session, msgs, tools or None, max_tokens)
            except asyncio.CancelledError:
                if session.state == "open":
                    raise
                raise SessionTimeout(f"session {session.id!r} was {session.state}: {session.reason}") from None
            finally:
                session.task = None

    def _check_open(self, session: GatewaySession) -> None:
        if session.state != "open":
            raise GatewaySessionError(f"session {session.id!r} is {session.state}"
                                      + (f": {session.reason}" if session.reason else ""))
        if time.monotonic() > session.deadline:
            self.abort(session.id, "timeout")
            raise SessionTimeout(f"session {session.id!r} ran past its {session.config.timeout_s:g} s budget")

    async def _turn(self, session: GatewaySession, msgs: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                    max_tokens: int | None) -> AssistantTurn:
        fmt = self.fmt
        matched = 0
        restored = list(msgs)
        for i, (incoming, recorded) in enumerate(zip(msgs, session.log, strict=False)):
            if not same_message(incoming, recorded["message"]):
                break
            restored[i] = recorded["render"]
            matched = i + 1
        full = fmt.render(restored, tools, True)
        branch = session.trajectory.current
        suffix_ids: list[int] | None = None
        suffix_text = ""
        recorded = session.text + session.pending
        if branch.ids and matched == len(session.log) and tools == session.tools and full.startswith(recorded):
            suffix_text = full[len(session.text):]
            suffix_ids = fmt.encode(suffix_text)
        prompt_ids = branch.ids + suffix_ids if suffix_ids is not None else fmt.encode(full)
        budget = self._budget(session, branch, prompt_ids, extends=suffix_ids is not None)
        want = budget if max_tokens is None else min(int(max_tokens), budget)
        if want < 1:
            session.truncated = True
            # OpenAI's own wording: litellm (mini-swe-agent's client) recognises a context overflow by
            # it and stops; with any other text it retries a 400 ten times, backing off up to 60 s
            raise ContextExhausted(f"This model's maximum context length is {session.config.max_context} tokens: "
                                   f"the request is {len(prompt_ids)} tokens and leaves no room to generate "
                                   f"(response budget {session.config.max_response}, prompt budget "
                                   f"{session.config.max_prompt}; context_length_exceeded)")
        if suffix_ids is not None:
            branch.extend_context(suffix_ids)
            session.text += suffix_text
        else:
            if branch.ids:
                branch = session.trajectory.fork(prompt_ids)
            else:
                branch.extend_context(prompt_ids)
            session.text = full
        arrived = time.time()  # wall clock, for the record: when each message reached the gateway
        session.log = session.log[:matched] + [{"message": m, "render": m, "at": arrived} for m in msgs[matched:]]
        session.tools = tools
        started = time.monotonic()
        remaining = session.deadline - started
        try:
            gen = await asyncio.wait_for(self.backend.generate(prompt_ids, want, session.config.sampling, session.id),
                                         timeout=max(remaining, 0.001))
        except TimeoutError:
            self.abort(session.id, "timeout")
            raise SessionTimeout(f"session {session.id!r} ran past its {session.config.timeout_s:g} s budget") from None
        session.generation_s += time.monotonic() - started
        if gen.weights_version is not None:
            session.weights_versions.append(gen.weights_version)
        branch.extend_sampled(gen.ids, gen.logprobs, "length" if gen.stopped_by_length else "stop")
        turn, pending = fmt.parse(gen.ids, gen.stopped_by_length)
        turn.prompt_tokens = len(prompt_ids)
        session.text += fmt.decode(gen.ids)
        session.pending = pending
        session.log.append({"message": turn.message(), "render": {"role": "assistant", "content": turn.raw},
                            "at": time.time()})
        session.turns += 1
        session.ill_formed += turn.ill_formed
        if gen.stopped_by_length and want == budget:
            session.truncated = True
        return turn

    def _budget(self, session: GatewaySession, branch: Branch, prompt_ids: list[int], *, extends: bool) -> int:
        """Tokens this turn may generate. The response budget counts from the branch's first
        prompt: the current one's, or after a fork, the parent's if the fork keeps a sampled turn."""
        cfg = session.config
        if extends and branch.turns:
            prompt_len = branch.prompt_len
        else:
            k = common_prefix(branch.ids, prompt_ids)
            keeps_turn = any(t.start + t.length <= k for t in branch.turns)
            prompt_len = branch.prompt_len if keeps_turn else len(prompt_ids)
            if not keeps_turn and cfg.max_prompt is not None and prompt_len > cfg.max_prompt:
                return 0
        budget = cfg.max_context - len(prompt_ids)
        if cfg.max_response is not None:
            budget = min(budget, cfg.max_response - (len(prompt_ids) - prompt_len))
        return budget
