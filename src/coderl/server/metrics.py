"""Prometheus metrics of one service process (its own registry, so tests can run several)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("coderl_requests_total", "HTTP requests", ["route", "status"], registry=self.registry)
        self.latency = Histogram("coderl_request_seconds", "request latency", ["route"], registry=self.registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
        self.verdicts = Counter("coderl_verdicts_total", "submission verdicts", ["verdict"], registry=self.registry)
        self.test_cases = Counter("coderl_test_cases_total", "test cases run", registry=self.registry)
        self.sandbox_errors = Counter("coderl_sandbox_errors_total", "sandbox errors (our fault)", registry=self.registry)
        self.rejected = Counter("coderl_rejected_total", "submissions refused for a full queue", registry=self.registry)
        self.queue_depth = Gauge("coderl_queue_depth", "submissions admitted and not finished", registry=self.registry)
        self.slots_busy = Gauge("coderl_slots_busy", "slots running a submission", registry=self.registry)
        self.slots_total = Gauge("coderl_slots_total", "slots", registry=self.registry)
        self.slot_restarts = Gauge("coderl_slot_restarts", "slots replaced since start", registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
