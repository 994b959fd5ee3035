"""Admission control: a bounded number of submissions in the service (running or waiting for a
slot). Past it requests are refused at once with 429 + Retry-After instead of queueing without
bound: backpressure the client can see, and memory that stays flat under load."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from coderl.errors import BadRequest, Overloaded, SandboxError


class Admission:
    def __init__(self, capacity: int, on_reject: Callable[[], object] | None = None) -> None:
        self.capacity = capacity
        self.admitted = 0
        self.on_reject = on_reject  # counts refusals (the coderl_rejected_total metric)

    @contextlib.contextmanager
    def admit(self, n: int = 1, *, when_full: type[SandboxError] = Overloaded) -> Iterator[None]:
        """``when_full``: what a full queue raises (Overloaded: 429; a route whose clients retry
        only on 504 asks for DeadlineExceeded)."""
        if n > self.capacity:
            raise BadRequest(f"a batch of {n} submissions exceeds the queue capacity {self.capacity}; split it")
        if self.admitted + n > self.capacity:
            if self.on_reject is not None:
                self.on_reject()
            raise when_full(f"queue full ({self.admitted}/{self.capacity} submissions in flight); retry")
        self.admitted += n
        try:
            yield
        finally:
            self.admitted -= n
