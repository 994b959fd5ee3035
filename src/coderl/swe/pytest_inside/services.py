"""The task's test services, started in the grading sandbox before the launcher (stdlib only).

Run as ``<env>/bin/python -I -S services.py '<services JSON>'`` by the grading command
(``coderl.swe.grading_run.launch``), with stdin from /dev/null and stdout onto stderr: the
command's stdin holds the launcher's spec (its nonce) and its stdout is the supervisor's records
channel, so neither this script nor a service ever holds them. Each service (``TestService``:
``name``, ``argv``, ``port``) is started from ``/tmp`` with the session's environment, its output
to ``/tmp/coderl-services/<name>.log`` (never the command's streams), and waited for until
something accepts connections on ``127.0.0.1:<port>`` (the sandbox's own loopback: its network
namespace has nothing else). The services stay up while the tests run and are killed with the
rest of the command when it returns. Exit 0 once every one accepts; ``EXIT_SERVICE`` (with the
log's tail on stderr) when one exits or does not accept in ``START_S``: the grader then reports a
sandbox error (the task's environment, not the agent's diff, is at fault; never scored).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

EXIT_SERVICE = 72
START_S = 120.0  # a loaded machine starts a Flask app in seconds; this is a bound, not a wait
LOG_DIR = "/tmp/coderl-services"


def accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def tail(path: str, n: int = 2000) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read()[-n:].decode("utf-8", "replace")
    except OSError:
        return ""


def main() -> int:
    services = json.loads(sys.argv[1])
    os.makedirs(LOG_DIR, exist_ok=True)
    started = []
    for svc in services:
        log = os.path.join(LOG_DIR, f"{svc['name']}.log")
        with open(log, "wb") as out:
            try:
                proc = subprocess.Popen(svc["argv"], cwd="/tmp", stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, close_fds=True)
            except OSError as exc:
                sys.stderr.write(f"services: cannot start the test service {svc['name']}: {exc}\n")
                return EXIT_SERVICE
        started.append((svc, proc, log))
    deadline = time.monotonic() + START_S
    for svc, proc, log in started:
        while not accepts(svc["port"]):
            if proc.poll() is not None or time.monotonic() > deadline:
                why = f"exited with {proc.returncode}" if proc.returncode is not None else \
                    f"accepts no connection on 127.0.0.1:{svc['port']} after {START_S:.0f} s"
                sys.stderr.write(f"services: the test service {svc['name']} {why}; its log's tail:\n{tail(log)}\n")
                return EXIT_SERVICE
            time.sleep(0.1)
    sys.stderr.write("".join(f"services: {svc['name']} accepts on 127.0.0.1:{svc['port']}\n" for svc, _, _ in started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
