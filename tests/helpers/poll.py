"""Bounded polling for tests that wait on something asynchronous (a service, a subprocess, a
sandbox's timers): wait for exactly the state the test then asserts, never a fixed sleep, and on
failure say what was awaited and what was last seen, so a failure on a loaded machine is a
diagnosis rather than a bare ``assert False``.

The bound is a failure bound, not a timing claim: it is generous (a loaded 2-core machine can be
slow by seconds), and a test that passes never waits for it."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0
INTERVAL_S = 0.05


def _truthy(value: object) -> bool:
    return bool(value)


async def wait_for_async(read: Callable[[], Awaitable[T] | T], until: Callable[[T], bool] = _truthy, *, what: str,
                         timeout_s: float = DEFAULT_TIMEOUT_S, interval_s: float = INTERVAL_S,
                         ignore: tuple[type[BaseException], ...] = ()) -> T:
    """Call ``read()`` (and await what it returns, if awaitable) until ``until(value)`` holds;
    return that value. Exceptions of the types in ``ignore`` count as "not yet" (a file not written
    yet, a connection refused) and are reported as what was last seen; any other propagates at once
    (a read can fail fast when the awaited thing died). Inside an event loop: the loop keeps running
    the tasks the test waits on between reads."""
    deadline = time.monotonic() + timeout_s
    last = "nothing read yet"
    while True:
        try:
            value = read()
            if inspect.isawaitable(value):
                value = await value
        except ignore as exc:
            last = f"{type(exc).__name__}: {exc}"
        else:
            if until(value):
                return value
            last = repr(value)
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout_s:g} s for {what}; last saw {last}")
        await asyncio.sleep(interval_s)


def wait_for(read: Callable[[], T], until: Callable[[T], bool] = _truthy, *, what: str,
             timeout_s: float = DEFAULT_TIMEOUT_S, interval_s: float = INTERVAL_S,
             ignore: tuple[type[BaseException], ...] = ()) -> T:
    """``wait_for_async`` for a test outside an event loop (or in a thread of its own)."""
    return asyncio.run(wait_for_async(read, until, what=what, timeout_s=timeout_s, interval_s=interval_s,
                                      ignore=ignore))
