"""Request bodies, validated by pydantic (a bad body is a 422 naming the field path)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from coderl.sandbox import Limits


class LimitsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cpu_s: float | None = Field(default=None, gt=0, le=300)
    wall_s: float | None = Field(default=None, gt=0, le=600)
    memory_mb: int | None = Field(default=None, gt=0, le=65536)
    max_processes: int | None = Field(default=None, gt=0, le=4096)
    stdout_kb: int | None = Field(default=None, gt=0, le=1 << 20)
    stderr_kb: int | None = Field(default=None, gt=0, le=1 << 20)
    file_size_kb: int | None = Field(default=None, gt=0, le=1 << 22)
    open_files: int | None = Field(default=None, gt=0, le=65536)

    def apply(self, base: Limits) -> Limits:
        return base.replace(**self.model_dump(exclude_none=True))


class SubmissionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    language: str | None = None
    code: str | None = Field(default=None, max_length=1 << 20)
    response: str | None = Field(default=None, max_length=4 << 20)
    tests: Any = Field(description="tests in the normalised schema or any supported format")
    format: str | None = Field(default=None, description="test format name; auto-detected when absent")
    fn_name: str | None = None
    limits: LimitsIn = LimitsIn()
    stop_on_first_failure: bool = True
    total_time_s: float | None = Field(default=None, gt=0, le=3600)
    include_output: bool = False


class JudgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    submissions: list[SubmissionIn] = Field(min_length=1, max_length=4096)
    timeout_s: float | None = Field(default=None, gt=0, le=3600)


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str
    code: str = Field(max_length=1 << 20)
    stdin: str = ""
    limits: LimitsIn = LimitsIn()
    # the request's deadline, its wait for a slot included (504 past it); default request_timeout_s
    timeout_s: float | None = Field(default=None, gt=0, le=3600)


class RunCodeRequest(BaseModel):
    """SandboxFusion ``/run_code``."""

    model_config = ConfigDict(extra="ignore")
    compile_timeout: float = Field(default=10, gt=0, le=600)
    run_timeout: float = Field(default=10, gt=0, le=600)
    memory_limit_MB: int = -1
    code: str
    stdin: str | None = None
    language: str
    files: dict[str, str | None] = {}  # a null content writes nothing, as in SandboxFusion
    fetch_files: list[str] = []


class EvalConfig(BaseModel):
    """ScaleBox's ``TestConfig``: null or absent timeouts take ScaleBox's defaults for the kind of
    test (the route decides); ``mem_limit`` (MB) is honoured (ScaleBox drops it)."""

    model_config = ConfigDict(extra="ignore")
    language: str
    compile_timeout: float | None = Field(default=None, gt=0, le=600)
    run_timeout: float | None = Field(default=None, gt=0, le=600)
    mem_limit: int | None = Field(default=None, le=65536)
    custom_extract_logic: str | None = None
    provided_data: dict[str, Any]
    extra: dict[str, Any] = {}


class EvalRequest(BaseModel):
    """ScaleBox ``/common_evaluate_batch`` and ``/common_evaluate``."""

    model_config = ConfigDict(extra="ignore")
    id: int | str = 0
    completion: str
    config: EvalConfig
