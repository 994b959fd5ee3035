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

A service with a ``tls_port`` gets a front there (this file again, ``--front``, in a process of its
own): it accepts TLS and plain connections alike, telling them apart by their first byte (a TLS
ClientHello's record starts 0x16; no HTTP request does), ends TLS with the environment's
certificate (``tls_dir``: ``coderl.swe.service_tls``) and relays each connection to the service's
``port``.

``--hold`` (an agent episode's services, ``coderl.swe.episode_services``): once every service
accepts, the report goes to stdout, stdout and stderr are closed, and this process stays, the
parent of its services, until the episode ends (the session spares it and its children).
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import threading
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


def start(name: str, argv: list[str]) -> tuple[subprocess.Popen | None, str]:
    log = os.path.join(LOG_DIR, f"{name}.log")
    with open(log, "wb") as out:
        try:
            return subprocess.Popen(argv, cwd="/tmp", stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    close_fds=True), log
        except OSError as exc:
            sys.stderr.write(f"services: cannot start the test service {name}: {exc}\n")
            return None, log


def main() -> int:
    hold = sys.argv[2:] == ["--hold"]
    services = json.loads(sys.argv[1])
    os.makedirs(LOG_DIR, exist_ok=True)
    started = []
    for svc in services:
        proc, log = start(svc["name"], svc["argv"])
        if proc is None:
            return EXIT_SERVICE
        started.append((svc["name"], svc["port"], proc, log))
        if svc.get("tls_port"):
            front = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--front", str(svc["tls_port"]),
                     str(svc["port"]), svc["tls_dir"]]
            proc, log = start(f"{svc['name']}-tls", front)
            if proc is None:
                return EXIT_SERVICE
            started.append((f"{svc['name']} (its TLS front)", svc["tls_port"], proc, log))
    deadline = time.monotonic() + START_S
    for name, port, proc, log in started:
        while not accepts(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                why = f"exited with {proc.returncode}" if proc.returncode is not None else \
                    f"accepts no connection on 127.0.0.1:{port} after {START_S:.0f} s"
                sys.stderr.write(f"services: the test service {name} {why}; its log's tail:\n{tail(log)}\n")
                return EXIT_SERVICE
            time.sleep(0.1)
    report = "".join(f"services: {name} accepts on 127.0.0.1:{port}\n" for name, port, _, _ in started)
    if not hold:
        sys.stderr.write(report)
        return 0
    sys.stdout.write(report)
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    for _, _, proc, _ in started:
        proc.wait()
    return 0


def front(tls_port: int, port: int, tls_dir: str) -> None:
    """Accept on 127.0.0.1:tls_port, TLS or plain, and relay each connection to 127.0.0.1:port."""
    import ssl  # here: the services' starter itself needs no TLS

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(tls_dir, "cert.pem"), os.path.join(tls_dir, "key.pem"))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", tls_port))
    listener.listen(128)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=relay, args=(client, port, context), daemon=True).start()


def relay(client: socket.socket, port: int, context) -> None:  # type: ignore[no-untyped-def]
    """One connection: TLS ended here when its first byte says so, then bytes both ways until
    either side closes (one thread: an SSL socket is never read and written from two)."""
    import ssl

    upstream = None
    try:
        client.settimeout(60)
        if client.recv(1, socket.MSG_PEEK) == b"\x16":
            client = context.wrap_socket(client, server_side=True)
        client.settimeout(None)
        upstream = socket.create_connection(("127.0.0.1", port), timeout=60)
        upstream.settimeout(None)
        other = {client: upstream, upstream: client}
        while True:
            pending = isinstance(client, ssl.SSLSocket) and client.pending()
            ready = [client] if pending else select.select([client, upstream], [], [], 600)[0]
            if not ready:
                return
            for sock in ready:
                data = sock.recv(1 << 16)
                if not data:
                    return
                other[sock].sendall(data)
    except (OSError, ValueError):
        return
    finally:
        for sock in (client, upstream):
            if sock is not None:
                sock.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--front"]:
        front(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    sys.exit(main())
