"""The certificate of an environment's TLS test services (``TestService.tls_port``).

A suite that sends ``https://`` requests to its local test service (requests 2.0-2.8's
``test_mixed_case_scheme_acceptable``: every scheme to its httpbin's host and port) needs a
certificate the tests trust. Each such environment gets its own, made when it is built, with the
host's ``openssl`` (docker/swe-build-apt.txt): self-signed, for 127.0.0.1 and localhost, kept in
``<env>/coderl-tls`` with its key (read-only in every sandbox; it is trusted by this environment
only and served on a sandbox's own loopback, which nothing outside reaches). It is trusted where
the tests look: appended to the environment's certifi bundle when it has one (what requests'
``certs.where()`` returns, and what a ``Session.send`` verifies with), and named by
``SSL_CERT_FILE`` in the tests' environment (OpenSSL's default verify paths:
``grading_run.service_env``). The services' starter (``pytest_inside/services.py``) serves it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from coderl.errors import EnvBuildError

TLS_DIR = "coderl-tls"
CERT, KEY = "cert.pem", "key.pem"
_DAYS = "36500"
_TIMEOUT_S = 120


def tls_dir(env: Path) -> Path:
    return env / TLS_DIR


def make_certificate(env: Path) -> None:
    """``env``'s certificate and key in ``env/coderl-tls``, the certificate appended to the
    environment's certifi bundle when there is one (see the module docstring)."""
    out = tls_dir(env)
    out.mkdir()
    cert, key = out / CERT, out / KEY
    argv = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", _DAYS, "-subj", "/CN=coderl test service",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvBuildError(f"cannot make the test services' certificate (openssl, docker/swe-build-apt.txt): {exc}") \
            from exc
    if proc.returncode != 0:
        raise EnvBuildError(f"cannot make the test services' certificate: {proc.stderr.strip()[-300:]}")
    key.chmod(0o644)  # the sandbox's uid runs the service that reads it
    for bundle in env.glob("lib/python*/site-packages/certifi/cacert.pem"):
        with bundle.open("a") as fh:
            fh.write(f"\n# coderl: this environment's test services (coderl.swe.service_tls)\n{cert.read_text()}")
