"""What an unpacked image's work dir and a request's image reference may be, checked without an engine
(default suite, milliseconds): a work dir that is a link out of the image (Debian's /var/run -> /run
names the HOST's /run when followed on the host) is refused before our git reads anything there,
one that links inside it is used; a reference that would be read as an option is refused; a
service finds what `coderl images pull` unpacked into its cache with no engine at all."""

from __future__ import annotations

import json
import os

import pytest

from coderl.cache import READY
from coderl.errors import ImageNotPulled, ImageUnavailable
from coderl.sandbox.image_rootfs import ImageRoot, inspect, unpacked


def test_a_work_dir_linking_out_of_the_image_is_refused(tmp_path):
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    (host_dir / "secret.txt").write_text("HOST")
    rootfs = tmp_path / "images" / "x" / "rootfs"
    (rootfs / "srv" / "app").mkdir(parents=True)
    (rootfs / "srv" / "app" / "m.py").write_text("X = 1\n")
    os.symlink(str(host_dir), rootfs / "out")  # an absolute link: resolved on the host, it leaves the image
    os.symlink("srv/app", rootfs / "app")  # a relative one inside the image
    image = ImageRoot(image_id="x" * 64, reference="test/x", rootfs=rootfs)
    for workdir in ("/out", "/out/", "/app/../out"):
        with pytest.raises(ImageUnavailable, match="a link out of the image"):
            image.pristine_git(workdir)
    assert not (rootfs.parent / "git").exists() or not any((rootfs.parent / "git").iterdir())
    assert (image.pristine_git("/app") / "HEAD").is_file()


@pytest.mark.parametrize("reference", ["--help", "-q", "a b", ""])
def test_a_reference_read_as_an_option_is_refused(reference):
    with pytest.raises(ImageUnavailable, match="not an image reference"):
        inspect(reference, pull=False)


def _unpacked_entry(cache, image_id: str, reference: str, ready_at: float) -> None:
    """An image as `unpack` leaves it in the cache: rootfs, image.json, the ready marker last."""
    home = cache / "images" / image_id[:24]
    (home / "rootfs" / "work").mkdir(parents=True)
    (home / "image.json").write_text(json.dumps({"reference": reference, "id": image_id,
                                                 "config": {"WorkingDir": "/work", "Env": ["A=1"]}}))
    (home / READY).write_text("")
    os.utime(home / READY, (ready_at, ready_at))


def test_a_service_finds_unpacked_images_without_an_engine(tmp_path, monkeypatch):
    """A node whose cache `coderl images pull` filled (a service in a container has no podman): the
    image is found by its reference (the newest unpack of it) or its id, with no engine on PATH; one
    the cache lacks is ImageNotPulled, saying what to run."""
    monkeypatch.delenv("CODERL_CONTAINER_ENGINE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-engine-here"))
    cache = tmp_path / "cache"
    old, new = "a" * 64, "b" * 64
    _unpacked_entry(cache, old, "registry/task:latest", 1000.0)
    _unpacked_entry(cache, new, "registry/task:latest", 2000.0)  # the tag re-pulled: a newer image
    found = unpacked("registry/task:latest", cache)
    assert (found.image_id, found.workdir, found.env) == (new, "/work", {"A": "1"})
    assert found.rootfs == cache / "images" / new[:24] / "rootfs"
    assert unpacked(f"sha256:{old}", cache).image_id == old and unpacked(old[:12], cache).image_id == old
    with pytest.raises(ImageNotPulled, match="coderl images pull registry/other:1"):
        unpacked("registry/other:1", cache)
    monkeypatch.setenv("CODERL_CONTAINER_ENGINE", "no-such-engine")
    with pytest.raises(ImageUnavailable, match="no such command"):
        inspect("registry/other:1", pull=False)


def test_a_read_only_image_cache_keeps_the_snapshots_in_the_services_own(tmp_path, monkeypatch):
    """A pod that runs episodes mounts the node's image cache read-only (docs/deploy.md): the work
    dir's pristine snapshot is then made under the process's own cache, and the image is untouched.
    The mount's refusal is what ``os.access`` says of it (root passes mode bits, not a read-only mount)."""
    monkeypatch.setenv("CODERL_CACHE", str(tmp_path / "own"))
    home = tmp_path / "images" / "y"
    (home / "rootfs" / "app").mkdir(parents=True)
    (home / "rootfs" / "app" / "m.py").write_text("X = 1\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).startswith(str(home)) else real_access(p, mode))
    image = ImageRoot(image_id="y" * 64, reference="test/y", rootfs=home / "rootfs")
    snapshot = image.pristine_git("/app")
    assert snapshot.is_relative_to(tmp_path / "own") and (snapshot / "HEAD").is_file()
    assert sorted(p.name for p in home.iterdir()) == ["rootfs"]
