"""Admission control: a bounded number of submissions in the service (running or waiting for a
slot). Past it requests are refused at once with 429 + Retry-After instead of queueing without
bound: backpressure the client can see, and memory that stays flat under load."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from coderl.errors import BadRequest, Overloaded


class Admission:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.admitted = 0

    @contextlib.contextmanager
    def admit(self, n: int = 1) -> Iterator[None]:
        if n > self.capacity:
            raise BadRequest(f"a batch of {n} submissions exceeds the queue capacity {self.capacity}; split it")
        if self.admitted + n > self.capacity:
            raise Overloaded(f"queue full ({self.admitted}/{self.capacity} submissions in flight)")
        self.admitted += n
        try:
            yield
        finally:
            self.admitted -= n
