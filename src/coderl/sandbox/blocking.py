"""A thin synchronous face for the async engine: its own event loop on a daemon thread.

For callers that are not async (`coderl judge`, `coderl sandbox doctor`, tests): one loop owns
the slots' pipes, and every call is handed to it with ``run_coroutine_threadsafe``. (The reward
and the evaluator are async and use the engine, or the service, directly.)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from coderl.sandbox.engine import Engine, Program, RunInput, StopRule
from coderl.sandbox.result import Execution, Limits

T = TypeVar("T")


class BlockingEngine:
    """``with BlockingEngine(slots=2) as eng: eng.execute(Program(...), [b"1"])``."""

    def __init__(self, slots: int | None = None, isolation: str = "bwrap", **kwargs: Any) -> None:
        self.engine = Engine(slots=slots, isolation=isolation, **kwargs)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="coderl-engine", daemon=True)

    def __enter__(self) -> BlockingEngine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self._thread.start()
        try:
            self.call(self.engine.start())
        except BaseException:
            self._stop_loop()
            raise

    def close(self) -> None:
        if self._thread.is_alive():
            try:
                self.call(self.engine.close())
            finally:
                self._stop_loop()

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run any coroutine on the engine's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def execute(self, program: Program, inputs: Sequence[bytes | RunInput], limits: Limits = Limits(), *,
                compile_limits: Limits | None = None, stop: StopRule | None = None,
                total_time_s: float | None = None) -> Execution:
        return self.call(self.engine.execute(program, inputs, limits, compile_limits=compile_limits, stop=stop,
                                             total_time_s=total_time_s))

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
