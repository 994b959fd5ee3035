"""SandboxFusion programs write to ``/mnt`` and fetch it back by its absolute path
(its own test_python_fetch_files). Ours is a private, size-capped tmpfs per slot inside the
boundary, emptied between submissions; a fetch resolves in the sandbox's view and never follows a
link out. Real service, real sandbox."""

from __future__ import annotations

import base64

import httpx


def run_code(url: str, **body) -> dict:
    r = httpx.post(url + "/run_code", json={"language": "python", **body}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_a_file_written_to_mnt_is_fetched_by_its_absolute_path(service_url):
    code = "open('a.txt', 'w').write('secret'); open('/mnt/b', 'w').write('sauce')"
    r = run_code(service_url, code=code, fetch_files=["a.txt", "/mnt/b", "/box/a.txt", "/mnt/missing"])
    assert r["status"] == "Success", r
    assert r["files"] == {"a.txt": b64("secret"), "/mnt/b": b64("sauce"), "/box/a.txt": b64("secret")}, r


def test_a_leftover_mnt_file_never_reaches_the_next_submission(service_url):
    for i in range(4):  # every slot of the service's two ends dirty
        r = run_code(service_url, code=f"import os\nos.makedirs('/mnt/d', exist_ok=True)\n"
                                       f"open('/mnt/left', 'w').write('{i}'); open('/mnt/d/x', 'w').write('x')")
        assert r["status"] == "Success", r
    for _ in range(4):
        r = run_code(service_url, code="import os\nprint(os.listdir('/mnt'))", fetch_files=["/mnt/left", "/mnt/d/x"])
        assert r["status"] == "Success" and r["run_result"]["stdout"] == "[]\n" and r["files"] == {}, r


def test_links_in_mnt_are_not_followed_out(service_url):
    code = ("import os\nos.symlink('/etc/hostname', '/mnt/h'); os.symlink('/etc', '/mnt/etc')\n"
            "os.symlink('/mnt/real', '/mnt/inside'); open('/mnt/real', 'w').write('ok')")
    fetch = ["/mnt/h", "/mnt/etc/passwd", "/mnt/etc/hosts", "/mnt/../etc/hosts", "/mnt/inside", "/mnt/real"]
    r = run_code(service_url, code=code, fetch_files=fetch)
    assert r["status"] == "Success", r
    assert r["files"] == {"/mnt/inside": b64("ok"), "/mnt/real": b64("ok")}, r


def test_mnt_is_size_capped(service_url):
    """Filling /mnt ends in ENOSPC at the slot's tmpfs cap (512 MiB by default), not the host's disk;
    the pages count against the run's memory cgroup like the work dir's."""
    code = ("import errno, os\nchunk, n = b'x' * (1 << 20), 0\ntry:\n"
            "    while n < 2048:\n"  # files of 32 MiB: each stays under the file-size limit
            "        with open(f'/mnt/f{n // 32}', 'ab', buffering=0) as f:\n"
            "            f.write(chunk); n += 1\n"
            "except OSError as e:\n    print(errno.errorcode[e.errno], n)\n")
    r = run_code(service_url, code=code, memory_limit_MB=1024, run_timeout=30)
    assert r["status"] == "Success", r
    err, mib = r["run_result"]["stdout"].split()
    assert err == "ENOSPC" and mib.isdigit() and int(mib) <= 512, r
