"""Error messages show the submission's own lines, never another submission's and never a frame of
the sandbox's own code (``/coderl/zygote.py``): a model trained on the tool's feedback must not be
told about code it did not write. Every slot runs the earlier submission first (the idle queue is
FIFO), so a later one lands on a slot whose work dir and zygotes have seen it."""

from __future__ import annotations

import asyncio

import pytest

from coderl.sandbox import Limits, Program

LIMITS = Limits(cpu_s=2, wall_s=4, memory_mb=256)
EARLIER = "BBB_second = 2\nCCC_third = 3\nDDD_fourth = 4\n"


def _on_every_slot(engine, source: str, prelude: bool = False) -> None:
    async def all_slots():
        return await asyncio.gather(*(engine.engine.execute(Program("python", source, prelude=prelude), [b""], LIMITS)
                                      for _ in range(engine.engine.size)))

    for ex in engine.call(all_slots()):
        assert ex.results[0].status.value == "ok", ex.results[0].stderr


def _ours_or_earlier(text: bytes) -> list[bytes]:
    return [w for w in (b"BBB_second", b"CCC_third", b"DDD_fourth", b"zygote", b"/coderl/", b"runner.py") if w in text]


@pytest.mark.parametrize("prelude", [False, True], ids=["lean", "prelude"])
@pytest.mark.parametrize("earlier_imports", [False, True], ids=["plain", "importing"])
def test_syntax_error_shows_its_own_line(engine, prelude, earlier_imports):
    _on_every_slot(engine, ("import json\n" if earlier_imports else "") + EARLIER, prelude=prelude)
    ex = engine.execute(Program("python", "x = 1\ndef f(:\n    pass\n", prelude=prelude), [b""], LIMITS)
    message = ex.compile.run.stderr
    assert not ex.compile.ok and b"def f(:" in message and b"line 2" in message, message
    assert not _ours_or_earlier(message), message
    assert not message.startswith(b"Traceback"), message  # what `python main.py` prints for a syntax error


def test_syntax_error_of_a_big_source_shows_its_own_line(engine):
    """Sources over 256 KiB compile in a throw-away child, not in the zygote."""
    _on_every_slot(engine, EARLIER)
    source = "# " + "x" * 300_000 + "\nx = 1\nDDD_fourth = (\n"
    ex = engine.execute(Program("python", source), [b""], LIMITS)
    message = ex.compile.run.stderr
    assert not ex.compile.ok and b"DDD_fourth = (" in message and b"line 3" in message, message
    assert not [w for w in (b"zygote", b"/coderl/", b"BBB_second") if w in message], message


@pytest.mark.parametrize("prelude", [False, True], ids=["lean", "prelude"])
def test_runtime_traceback_shows_its_own_lines(engine, prelude):
    _on_every_slot(engine, "import json\n" + EARLIER + "raise SystemExit(0)\n", prelude=prelude)
    source = "import json\n\ndef g(x):\n    return 1 // x\n\nprint(g(0))\n"
    result = engine.execute(Program("python", source, prelude=prelude), [b"", b""], LIMITS).results
    for r in result:
        assert r.status.value == "runtime_error"
        assert b'main.py", line 4, in g' in r.stderr and b"return 1 // x" in r.stderr, r.stderr
        assert b'line 6, in <module>' in r.stderr and b"print(g(0))" in r.stderr, r.stderr
        assert not _ours_or_earlier(r.stderr), r.stderr


def test_traceback_module_shows_its_own_lines(engine):
    """`traceback.print_exc()` reads lines through linecache (which the warm zygote holds)."""
    _on_every_slot(engine, "import traceback\n" + EARLIER)
    source = "import traceback\ntry:\n    {}['missing_key']\nexcept KeyError:\n    traceback.print_exc()\n"
    r = engine.execute(Program("python", source), [b""], LIMITS).results[0]
    assert r.status.value == "ok" and b"{}['missing_key']" in r.stderr, r.stderr
    assert not _ours_or_earlier(r.stderr), r.stderr
