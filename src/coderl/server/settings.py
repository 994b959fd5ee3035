"""Service settings: every flag of `coderl serve` also comes from a ``CODERL_*`` variable."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from coderl.sandbox.compile_cache import switched_off


@dataclass(frozen=True, kw_only=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    slots: int | None = None  # default: CPU count
    isolation: str = "bwrap"
    queue: int = 512  # submissions admitted at once (running + waiting); past it: 429
    max_body_mb: float = 64.0
    default_memory_mb: int = 1024
    request_timeout_s: float = 600.0
    # how long a SandboxFusion /run_code request waits for a free slot before a 504 (which verl's
    # client retries); within verl's read timeout, compile_timeout + run_timeout + 10 s
    queue_wait_s: float = 8.0
    log_level: str = "info"
    # the compile cache's bound in MiB (CODERL_COMPILE_CACHE_MB, --compile-cache-mb); 0 is off
    # (CODERL_COMPILE_CACHE=0, --no-compile-cache); None: as the environment says (default 1024)
    compile_cache_mb: int | None = None
    # the operator's API token for coderl's own routes (CODERL_API_TOKEN, --api-token-file); empty:
    # none asked (coderl.server.auth). Never in the repr: settings are logged
    api_token: str = dataclasses.field(default="", repr=False)

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Defaults, then ``CODERL_<FIELD>`` variables, then explicit (non-None) overrides."""
        values: dict[str, object] = {}
        for f in dataclasses.fields(cls):
            raw = os.environ.get(f"CODERL_{f.name.upper()}")
            if raw not in (None, ""):
                values[f.name] = _convert(f.name, raw, f.type)
        if switched_off():
            values["compile_cache_mb"] = 0
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)  # type: ignore[arg-type]
        settings.validate()
        return settings

    def validate(self) -> None:
        if self.isolation not in ("bwrap", "none"):
            raise ValueError(f"isolation must be 'bwrap' or 'none', got {self.isolation!r}")
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be 1..65535, got {self.port}")
        if self.slots is not None and self.slots < 1:
            raise ValueError("slots must be >= 1")
        if self.queue < 1 or self.max_body_mb <= 0 or self.queue_wait_s <= 0:
            raise ValueError("queue, max_body_mb and queue_wait_s must be positive")
        if self.compile_cache_mb is not None and self.compile_cache_mb < 0:
            raise ValueError(f"compile_cache_mb must be >= 0 (0: off), got {self.compile_cache_mb}")


def _convert(name: str, raw: str, kind: object) -> object:
    text = str(kind)
    try:
        if "int" in text:
            return int(raw)
        if "float" in text:
            return float(raw)
    except ValueError:
        raise ValueError(f"CODERL_{name.upper()}={raw!r} is not a number") from None
    return raw
