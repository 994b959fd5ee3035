"""verl 0.9.1 agent loop that trains an unmodified agent harness through the interception gateway.

Registered two supported ways (no patch): verl's ``register("coderl_gateway_agent")`` (once this
module is imported) and, for Ray workers that never import it, the agent-loop YAML
``tool_config/agent_loop.yaml`` named by ``actor_rollout_ref.rollout.agent.agent_loop_config_path``
(its entry's extra keys are this class's options). A row picks it with ``agent_name``. The YAML's
entry wins: verl's worker loads it into the registry before its first episode imports this module,
so the import registers the class only under a name the registry does not hold yet.

Per sample: open a gateway session whose sampling parameters are verl's (the harness's own are
ignored) and whose budget is verl's prompt/response lengths; run the harness (`harness`), in a
session sandbox by default; close the session; score; return the session's final branch as the
`AgentLoopOutput` (prompt ids, response ids, response mask, logprobs straight from the record).

Multi-branch trajectories are REDUCED to the final branch, slime's demotion included: verl's
`AgentLoopWorker` takes exactly one `AgentLoopOutput` per sample (the batch is prompts x
rollout.n), so siblings cannot be returned. The final branch holds every token that conditioned
the outcome the reward scores; its retained prefix keeps its masks (a turn cut by the fork is
demoted to 0). What that drops (earlier branches' turns past their fork) is counted in
``extra_fields["dropped_sampled_tokens"]`` with ``num_branches`` and ``drifts``.

Scoring (``score`` option): ``code`` - the code reward (`coderl.verl.reward`) of the
harness's answer: ``solution.py`` in its work dir if it wrote one, else its last assistant message;
``repo`` - the episode's grader (`coderl.swe.episodes`: every task kind, here or on the session service) on its diff,
in a fresh sandbox (rows from ``coderl data swe``: ``extra_info`` names the snapshot and env);
``none`` - leave the reward to verl's reward loop. A failure of OUR side (the sandbox did not
start, the gateway or backend failed, the grader's sandbox did) masks the whole response (nothing
trains on it) and is reported as ``sandbox_error`` = 1, never as a wrong answer. Whatever the
AGENT did is an outcome, never an exception out of ``run``: its exit code, time-out or flooded
output (``agent_output_limit``) are recorded and its diff is scored; files that make no diff (one
over the size cap, unreadable ones) score 0 as ``grade_status: no_patch`` (no valid patch), with
the reason in ``agent_error``. The extras keep the two scorers' words apart: ``verdict`` is only
ever the judge's (``score: code``), ``grade_status`` only the repository grader's (``score: repo``).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    _agent_loop_registry,
    register,
)

from coderl.errors import CoderlError, InvalidTask
from coderl.gateway.chat import ChatFormat
from coderl.gateway.core import SessionConfig
from coderl.records.agent import record_episode
from coderl.swe.grade_status import GradeResult, GradeStatus
from coderl.swe.hack_signals import episode_signals
from coderl.swe.harness import HarnessResult, run_on_host
from coderl.swe.task_ref import AGENT_NAME, TaskRef
from coderl.verl.episode_worker import EpisodeWorker

logger = logging.getLogger(__name__)

class GatewayAgentLoop(AgentLoopBase):
    def __init__(self, *args: Any, command: str = "", placement: str = "sandbox", timeout_s: float = 600.0,
                 score: str = "code", score_kwargs: dict | None = None, harness_binds: list[str] | None = None,
                 env: dict[str, str] | None = None, model_name: str = "coderl-policy", sessions_url: str = "",
                 gateway_url: str = "", gateway_listen: str = "127.0.0.1:0", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not command:
            raise ValueError(f"{AGENT_NAME} needs a harness `command` (agent loop YAML)")
        if placement not in ("sandbox", "host"):
            raise ValueError(f"placement must be sandbox or host, got {placement!r}")
        if score not in ("code", "repo", "none"):
            raise ValueError(f"score must be code, repo or none, got {score!r}")
        self.command, self.placement, self.timeout_s = command, placement, float(timeout_s)
        self.score, self.score_kwargs = score, dict(score_kwargs or {})
        self.harness_binds = tuple(harness_binds or ())
        self.env = dict(env or {})
        self.model_name = model_name
        # remote sessions (issue 28): the session service on the sandbox nodes, and the gateway as
        # they reach it (default: this worker's loopback listener, for a service on this machine)
        self.sessions_url, self.gateway_url = sessions_url, gateway_url
        # the worker's TCP listener: 127.0.0.1 unless sandbox nodes on other machines must reach it
        self.gateway_listen = gateway_listen
        self._grade: Any = None  # the repo grader's result, for the episode's record
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        worker = await EpisodeWorker.of(self.server_manager, self.tokenizer, self.apply_chat_template_kwargs,
                                        self.model_name, self.gateway_listen)
        gateway = worker.gateway
        messages = list(kwargs["raw_prompt"])
        task = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        sid = "ep-" + uuid.uuid4().hex
        config = SessionConfig(max_context=self.prompt_length + self.response_length, max_response=self.response_length,
                               max_prompt=self.prompt_length, timeout_s=self.timeout_s + 60,
                               sampling=dict(sampling_params))
        gateway.open(sid, config)
        self._grade = None  # this episode's grader result, once scored
        extra = {"agent_exit_code": -1, "agent_timed_out": 0, "agent_output_limit": 0, "sandbox_error": 0,
                 "agent_isolation": self.placement}
        workdir = Path(tempfile.mkdtemp(prefix="coderl-episode-"))
        started = time.monotonic()
        result: HarnessResult | None = None
        try:
            result = await self._run_harness(worker, workdir, task, sid, kwargs)
            extra.update(agent_exit_code=-1 if result.exit_code is None else result.exit_code,
                         agent_timed_out=int(result.timed_out), agent_isolation=result.isolation,
                         agent_output_limit=int(result.output_limit), agent_output_tail=result.output_tail[-2000:])
            if result.diff_error is not None:
                extra.update(agent_error=result.diff_error[:500])
        except CoderlError as exc:  # the sandbox failed to start or died: our fault
            extra.update(sandbox_error=1, agent_error=f"{type(exc).__name__}: {exc}"[:500])
            logger.warning("coderl agent episode %s: %s", sid, exc)
        finally:
            session = await gateway.close(sid)
        agent_s = time.monotonic() - started
        branch = session.trajectory.final()
        summary = session.summary()
        extra.update(num_branches=summary["branches"], drifts=summary["drifts"], agent_turns=summary["turns"],
                     dropped_sampled_tokens=summary["dropped_sampled_tokens"], demoted_tokens=summary["demoted_tokens"],
                     context_truncated=int(summary["truncated"]), ill_formed_tool_calls=summary["ill_formed_tool_calls"])
        # verl's trainer reads each trajectory's policy versions (staleness metrics); an episode that
        # never reached the model (masked, nothing trains) takes the newest version the worker saw.
        versions = session.weights_versions or [worker.last_weights_version or 0]
        extra.update(min_global_steps=min(versions), max_global_steps=max(versions))
        if branch.turns:
            prompt_ids = branch.ids[: branch.prompt_len]
            response_ids = branch.ids[branch.prompt_len:][: self.response_length]
            mask = branch.mask[branch.prompt_len:][: self.response_length]
            logprobs = branch.logprobs[branch.prompt_len:][: self.response_length]
        else:  # the harness never called the model: one masked token, nothing trains
            prompt_ids = ChatFormat(self.tokenizer, self.apply_chat_template_kwargs).encode(
                self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                   **self.apply_chat_template_kwargs))[-self.prompt_length:]
            response_ids, mask, logprobs = [self.tokenizer.eos_token_id], [0], [0.0]
        score_started = time.monotonic()
        reward = None
        extra.update(episode_signals())  # every path carries the telemetry keys
        if extra["sandbox_error"]:
            mask = [0] * len(mask)
            reward = 0.0
        elif self.score != "none":
            try:
                reward, info = await self._score(worker, session, workdir, result, kwargs)
            except CoderlError as exc:  # the scorer's own failure (its sandbox, the service): ours
                reward, info = 0.0, {"sandbox_error": 1, "agent_error": f"scoring: {type(exc).__name__}: {exc}"[:500]}
                logger.warning("coderl agent episode %s: scoring failed: %s", sid, exc)
            extra.update(info)
            extra.update(episode_signals(self._grade))  # reward-hack telemetry, all zeros without a grader
            if info.get("sandbox_error"):  # the grader's infrastructure failed: nothing trains on it
                mask, reward = [0] * len(mask), 0.0
        record_episode(kwargs, session, self.tokenizer, response_ids=response_ids, mask=mask, logprobs=logprobs,
                       prompt_len=len(prompt_ids), reward=reward, extra=extra, harness=result, grade=self._grade)
        shutil.rmtree(workdir, ignore_errors=True)
        metrics = AgentLoopMetrics(generate_sequences=session.generation_s,
                                   tool_calls=max(0.0, agent_s - session.generation_s),
                                   compute_score=time.monotonic() - score_started)
        return AgentLoopOutput(prompt_ids=prompt_ids, response_ids=response_ids, response_mask=mask,
                               response_logprobs=logprobs, reward_score=reward, num_turns=2 * summary["turns"] + 1,
                               metrics=metrics, extra_fields=extra)

    async def _run_harness(self, worker: EpisodeWorker, workdir: Path, task: str, sid: str,
                           kwargs: dict[str, Any]) -> HarnessResult:
        if self.placement == "host":
            return await run_on_host(self.command, workdir=workdir, task=task, gateway_url=worker.http_url,
                                     session_id=sid, model=self.model_name, timeout_s=self.timeout_s, env=self.env)
        ref = TaskRef.from_extra_info(kwargs.get("extra_info"))  # InvalidTask: the row's fault, a sandbox_error
        return await worker.episodes(self.sessions_url, self.gateway_url).run_harness(
            ref, self.command, task=task, session_id=sid, model=self.model_name, timeout_s=self.timeout_s,
            env=self.env, harness_binds=self.harness_binds)

    async def _score(self, worker: EpisodeWorker, session: Any, workdir: Path, result: HarnessResult | None,
                     kwargs: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        extra_info = dict(kwargs.get("extra_info") or {})
        if self.score == "repo":
            if result is not None and result.diff_error is not None:  # the agent's files made no diff
                if result.state is not None:
                    result.state.remove()
                return 0.0, {"grade_status": GradeStatus.NO_PATCH.value, "acc": 0.0, "sandbox_error": 0}
            try:
                ref = TaskRef.from_extra_info(extra_info)
            except InvalidTask as exc:
                graded = GradeResult.sandbox_error(str(extra_info.get("instance_id", "")), str(exc))
            else:
                graded = await worker.episodes(self.sessions_url, self.gateway_url).grade(
                    ref, result.diff if result else None, result.state if result else None)
            self._grade = graded
            return float(graded.reward or 0.0), {"grade_status": graded.status.value, "acc": float(graded.resolved),
                                                 "sandbox_error": int(graded.status == GradeStatus.SANDBOX_ERROR)}
        from coderl.verl.reward import compute_score

        answer = _answer(session, workdir, result)
        ground_truth = (kwargs.get("reward_model") or {}).get("ground_truth")
        out = await compute_score(str(kwargs.get("data_source", "")), answer, ground_truth, extra_info,
                                  **{**self.score_kwargs, "record_dir": ""})  # the episode's record has it
        return float(out["score"]), {"verdict": out.get("verdict", ""), "acc": out.get("acc", 0.0),
                                     "sandbox_error": int(out.get("sandbox_error", 0))}


# A plain @register would replace the YAML's entry (its options: the harness command) with a bare
# one the moment the first episode imports this module, and every later episode would fail.
if AGENT_NAME not in _agent_loop_registry:
    register(AGENT_NAME)(GatewayAgentLoop)


def _answer(session: Any, workdir: Path, result: HarnessResult | None) -> str:
    """The harness's answer: the solution.py it wrote (host placement), or a solution.py in its
    diff (sandbox), else its last assistant message (whose code block the reward extracts)."""
    solution = workdir / "solution.py"
    if solution.is_file():
        return f"```python\n{solution.read_text(errors='replace')}\n```"
    if result is not None and result.diff:
        code = _added_file(result.diff, "solution.py")
        if code is not None:
            return f"```python\n{code}\n```"
    for entry in reversed(session.log):
        message = entry["message"]
        if message["role"] == "assistant" and message["content"].strip():
            return message["content"]
    return ""


def _added_file(diff: str, name: str) -> str | None:
    """The text of a file the diff creates (``--- /dev/null`` ... ``+++ b/name``)."""
    lines, out, inside = diff.splitlines(), [], False
    for i, line in enumerate(lines):
        if line.startswith("diff --git"):
            if inside:
                break
            inside = line.endswith(f" b/{name}") and any(x.startswith("new file") for x in lines[i + 1:i + 3])
        elif inside and line.startswith("+") and not line.startswith("+++"):
            out.append(line[1:])
    return "\n".join(out) if inside or out else None


def check_agent_loops(path: str) -> list[str]:
    """What a training script's --dry-run checks in an agent-loop YAML before any GPU time: each
    coderl entry imports, its options are this class's and valid, its command's placeholders are
    known. Returns warnings (a harness install missing on this machine); raises ValueError."""
    import inspect

    from omegaconf import OmegaConf

    from coderl.swe.harness import render_command

    entries = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if not isinstance(entries, list):
        raise ValueError(f"{path}: an agent-loop YAML is a list of {{name, _target_, ...}}")
    warnings: list[str] = []
    known = set(inspect.signature(GatewayAgentLoop.__init__).parameters) - {"self", "args", "kwargs"}
    for entry in entries:
        if entry.get("_target_") != f"{GatewayAgentLoop.__module__}.{GatewayAgentLoop.__qualname__}":
            continue
        options = {k: v for k, v in entry.items() if k not in ("name", "_target_")}
        unknown = set(options) - known
        if unknown:
            raise ValueError(f"{path}: {entry['name']}: unknown option(s) {', '.join(sorted(unknown))}")
        if options.get("placement", "sandbox") not in ("sandbox", "host"):
            raise ValueError(f"{path}: {entry['name']}: placement must be sandbox or host")
        if options.get("score", "code") not in ("code", "repo", "none"):
            raise ValueError(f"{path}: {entry['name']}: score must be code, repo or none")
        if not options.get("command"):
            raise ValueError(f"{path}: {entry['name']}: no harness command")
        render_command(options["command"], {k: "x" for k in ("base_url", "anthropic_base_url", "api_key", "model",
                                                             "task_file", "workdir")})
        for bind in options.get("harness_binds") or []:
            if not Path(bind).exists():
                warnings.append(f"{entry['name']}: harness bind {bind} does not exist on this machine")
        if options.get("placement") == "host":
            warnings.append(f"{entry['name']}: placement host runs the harness WITHOUT isolation")
    return warnings
