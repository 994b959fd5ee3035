"""coderl.sandbox: isolated, warm, batched execution of untrusted programs.

See `runner` for the theory of operation (processes, pipes, who kills whom), `isolation` for what
the boundary is made of, `cgroups` for the memory/process limits and `result` for the record
every run returns.
"""

from coderl.sandbox.engine import Engine, Program, RunInput
from coderl.sandbox.languages import LanguageInfo
from coderl.sandbox.result import CompileResult, Execution, Limits, RunResult, RunStatus

__all__ = [
    "CompileResult",
    "Engine",
    "Execution",
    "LanguageInfo",
    "Limits",
    "Program",
    "RunInput",
    "RunResult",
    "RunStatus",
]
