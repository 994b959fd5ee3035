"""Runs LiveCodeBench's official judge (nvidia-livecodebench's testing_util) on (problem, program)
pairs read as JSON from stdin; prints one verdict per pair. Each pair runs in a forked child,
because the official judge disables os/shutil functions in the process that calls it."""

import json
import os
import sys


def verdict(results) -> str:
    if results and all(r is True for r in results):
        return "accepted"
    first = next((r for r in results if r is not True), -4) if results else -4
    if first is False:  # call-based wrong answers are False, not -2
        return "wrong_answer"
    return {-1: "time_limit", -2: "wrong_answer", -3: "time_limit", -4: "runtime_error"}.get(first, "runtime_error")


def main() -> None:
    from livecodebench.evaluation.testing_util import run_test

    pairs = json.load(sys.stdin)
    out = []
    for pair in pairs:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            try:
                results, _ = run_test({"input_output": json.dumps(pair["tests"])}, test=pair["code"], timeout=2)
                text = verdict(list(results))
            except BaseException:  # noqa: BLE001
                text = "runtime_error"
            os.write(w, text.encode())
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 1024):
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        out.append(data.decode() or "runtime_error")
    json.dump(out, sys.__stdout__)


if __name__ == "__main__":
    main()
