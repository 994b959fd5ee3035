"""`coderl serve`: the sandbox service (uvicorn), or a Ray Serve application with ``--ray``."""

from __future__ import annotations

import argparse
import os
import socket

from coderl.api_token import token_from
from coderl.argtypes import positive_int
from coderl.errors import BadRequest


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the sandbox service (flags also from CODERL_* env vars)")
    p.add_argument("--host", help="bind address (CODERL_HOST, default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (CODERL_PORT, default 8080)")
    p.add_argument("--fd", type=int, metavar="FD",
                   help="serve on this inherited, already bound and listening TCP socket instead of binding "
                        "--host/--port (a launcher that picked a free port keeps it from the moment it picked it)")
    p.add_argument("--slots", type=int, help="isolated slots (CODERL_SLOTS, default: CPU count)")
    p.add_argument("--isolation", choices=("bwrap", "none"),
                   help="bwrap (default) or none: NO security boundary, reported in every response")
    p.add_argument("--queue", type=int, help="submissions admitted at once before 429 (CODERL_QUEUE, default 512)")
    p.add_argument("--max-body-mb", type=float, help="largest request body (CODERL_MAX_BODY_MB, default 64)")
    p.add_argument("--queue-wait-s", type=float,
                   help="/run_code: longest wait for a free slot before a 504, which verl retries (default 8)")
    p.add_argument("--default-memory-mb", type=int, help="memory limit when a request gives none (default 1024)")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--compile-cache-mb", type=positive_int, metavar="MB",
                       help="bound of the compile cache, least recently used entries evicted past it "
                            "(CODERL_COMPILE_CACHE_MB, default 1024; docs/sandbox.md)")
    cache.add_argument("--no-compile-cache", dest="compile_cache_mb", action="store_const", const=0,
                       help="compile every submission, even one compiled before (CODERL_COMPILE_CACHE=0)")
    p.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    p.add_argument("--api-token-file", metavar="PATH",
                   help="require this file's token (Authorization: Bearer, or X-Coderl-Token) on coderl's own routes; "
                        "health, metrics and the SandboxFusion/ScaleBox routes stay open (CODERL_API_TOKEN)")
    p.add_argument("--ray", action="store_true", default=os.environ.get("CODERL_RAY", "").lower() in ("1", "true"),
                   help="deploy on the Ray cluster as a Ray Serve application (CODERL_RAY=1)")
    p.add_argument("--replicas", type=positive_int, default=_env_int("CODERL_REPLICAS"),
                   help="with --ray: replicas (CODERL_REPLICAS, default: one per node)")
    p.add_argument("--episodes-per-replica", type=positive_int, default=_env_int("CODERL_EPISODES_PER_REPLICA"),
                   help="with --ray: session replicas as Ray actors on the nodes that advertise coderl_sandbox, each "
                        "taking this many units of it and binding the first free port from --port; prints their "
                        "URLs (CODERL_EPISODES_PER_REPLICA; docs/deploy.md)")
    p.set_defaults(func=_serve)
    h = subparsers.add_parser("health", help="is the sandbox service at URL ready? (exit 0 yes, 1 no)",
                              description="Ask URL/readyz (a canary program judged right) once, or with --wait "
                                          "until it answers or the time is up. Exit 0 ready, 1 not ready, 3 the "
                                          "--while-alive process exited first.")
    h.add_argument("url", help="the service, e.g. http://127.0.0.1:8080")
    h.add_argument("--wait", type=float, default=0.0, metavar="SECONDS", help="keep asking for this long")
    h.add_argument("--while-alive", type=positive_int, metavar="PID",
                   help="stop waiting as soon as this process (the service or its supervisor) is gone")
    h.add_argument("--quiet", "-q", action="store_true", help="no output, only the exit code")
    h.set_defaults(func=_health)


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name)
    return positive_int(raw) if raw else None


def _serve(args: argparse.Namespace) -> int:
    from coderl.errors import IsolationUnavailable
    from coderl.sandbox.engine import isolation_problem
    from coderl.server.settings import Settings

    settings = Settings.from_env(host=args.host, port=args.port, slots=args.slots, isolation=args.isolation,
                                 queue=args.queue, max_body_mb=args.max_body_mb, queue_wait_s=args.queue_wait_s,
                                 default_memory_mb=args.default_memory_mb, log_level=args.log_level,
                                 compile_cache_mb=args.compile_cache_mb,
                                 api_token=token_from(args.api_token_file) if args.api_token_file else None)
    if settings.isolation == "bwrap" and (problem := isolation_problem()):
        raise IsolationUnavailable(f"{problem}; refusing to start without isolation "
                                   "(see `coderl sandbox doctor`, or pass --isolation none explicitly)")
    listener = None if args.fd is None else _inherited_listener(args.fd)
    if args.ray:
        if listener is not None:
            raise BadRequest("--fd serves one process on an inherited socket; Ray Serve binds its own proxy port")
        if args.episodes_per_replica:
            from coderl.server.ray_sessions import deploy_sessions

            return deploy_sessions(settings, episodes_per_replica=args.episodes_per_replica, replicas=args.replicas)
        from coderl.server.ray_serve import deploy

        return deploy(settings, replicas=args.replicas)
    import logging

    import uvicorn

    from coderl.server.app import create_app

    logging.basicConfig(level=settings.log_level.upper(), format="%(message)s")
    app = create_app(settings)
    options = {"log_level": settings.log_level, "access_log": False, "timeout_graceful_shutdown": 30}
    if listener is None:
        uvicorn.run(app, host=settings.host, port=settings.port, **options)
    else:
        uvicorn.Server(uvicorn.Config(app, **options)).run(sockets=[listener])
    return 0


def _inherited_listener(fd: int) -> socket.socket:
    """The socket behind ``fd``, checked to be a listening TCP socket (not a file or a pipe passed
    by mistake, which would fail later with an asyncio traceback)."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise BadRequest(f"--fd {fd}: not an open socket ({exc.strerror})") from None
    if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6) \
            or not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        raise BadRequest(f"--fd {fd}: not a listening TCP socket")
    sock.set_inheritable(False)  # the sandbox's processes must not hold the service's port
    return sock


def _health(args: argparse.Namespace) -> int:
    import sys

    from coderl.client import wait_ready

    def alive() -> bool:
        if args.while_alive is None:
            return True
        try:
            os.kill(args.while_alive, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # someone else's process: alive
        return True

    why = wait_ready(args.url, args.wait, alive)
    if not args.quiet:
        print(f"ready: {args.url}" if why is None else f"coderl health: {why}", file=sys.stdout if why is None else sys.stderr)
    if why is None:
        return 0
    return 3 if not alive() else 1
