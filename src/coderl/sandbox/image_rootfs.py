"""OCI images as root filesystems: unpacked once per image id into the cache, read-only, no engine at run time.

A task may name an image (SWE-bench's ``sweb.eval.*``, SWE-Gym's, SWE-smith's, R2E-Gym's, a Harbor
task's ``environment/Dockerfile``) instead of a repository snapshot. The container engine (podman,
or docker) is used here only, outside the boundary, to resolve the reference and hand over the
image's files: ``create`` (no process starts) then ``export``, a tar of the image's FLATTENED root
filesystem: the layers are already merged, so the whiteouts of the layer tars never reach us. GNU
tar unpacks it into ``<cache>/images/<id>/rootfs``; the files are owned by the unpacking user (the
sandbox's user namespace maps its identity to that user, so the image's user owns its files
inside), device nodes are deleted (the episode layer is also mounted ``nodev``), and the tree is
never written again: episodes mount it as the lower layer of their overlay
(``coderl.sandbox.session.SessionHost.open_image``).

An unpacked image is keyed by the engine's image id (the digest of its configuration), built under
a lock and marked complete last, so two processes never unpack the same image twice and a reader
never sees half of one. ``ImageRoot.pristine_git(workdir)`` is a git snapshot of the image's work
dir (made once, outside the rootfs): what an episode's diff is taken against and what a grading run
applies it to, whether or not the image's work dir is a git repository itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from coderl.cache import READY, default_cache_dir, ready_once
from coderl.errors import ImageNotPulled, ImageUnavailable

_ENGINE_TIMEOUT_S = 3600.0
#: who a task may say its episode runs as: name, uid, name:group or uid:gid (``ImageRoot.identity``)
USER_SPEC = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,63})?$"
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "coderl",
            "GIT_AUTHOR_EMAIL": "coderl@localhost", "GIT_COMMITTER_NAME": "coderl",
            "GIT_COMMITTER_EMAIL": "coderl@localhost", "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}


@dataclass(frozen=True)
class ImageRoot:
    """An unpacked image: ``rootfs`` (read-only by convention: only ever an overlay's lower layer)
    and what its configuration says an episode starts with."""

    image_id: str
    reference: str
    rootfs: Path
    workdir: str = "/"
    user: str = ""
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.rootfs.parent

    def identity(self, user: str | None = None) -> tuple[int, int, str]:
        """(uid, gid, home) of ``user`` (the image's own by default: ``name``, ``uid``, ``name:group``,
        ``uid:gid``; empty = root), looked up in the image's /etc/passwd and /etc/group."""
        spec = self.user if user is None else user
        name, _, group = (spec or "0").partition(":")
        passwd = _table(self.rootfs / "etc" / "passwd")
        entry = next((e for e in passwd if name in (e[0], e[2])), None)
        if entry is None and not name.isdigit():
            raise ImageUnavailable(f"image {self.reference}: user {name!r} is not in its /etc/passwd")
        uid = int(entry[2]) if entry else int(name)
        gid = int(entry[3]) if entry and len(entry) > 3 else uid
        if group:
            found = next((e for e in _table(self.rootfs / "etc" / "group") if group in (e[0], e[2])), None)
            if found is None and not group.isdigit():
                raise ImageUnavailable(f"image {self.reference}: group {group!r} is not in its /etc/group")
            gid = int(found[2]) if found else int(group)
        home = entry[5] if entry and len(entry) > 5 and entry[5] else ("/root" if uid == 0 else "/tmp")
        return uid, gid, home

    def pristine_git(self, workdir: str) -> Path:
        """A git directory (outside the rootfs) whose HEAD holds the image's ``workdir`` as the image
        has it: its own .git is ignored, its .gitignore honoured (as in the episode's capture)."""
        rel = os.path.normpath(workdir).strip("/")
        if not rel or rel.startswith(".."):
            raise ImageUnavailable(f"image {self.reference}: the work dir must be a directory below /, got {workdir!r}")
        tree = self.rootfs / rel
        real, root = os.path.realpath(tree), os.path.realpath(self.rootfs)
        if real != root and not real.startswith(root + "/"):  # e.g. Debian's /var/run -> /run: the HOST's /run here
            raise ImageUnavailable(f"image {self.reference}: the work dir {workdir} is a link out of the image")
        if not tree.is_dir():  # an engine makes a missing WORKDIR when a container starts: so do episodes
            if tree.exists() or tree.is_symlink():
                raise ImageUnavailable(f"image {self.reference}: {workdir} is not a directory")
            tree = self.own_dir() / "empty"
            tree.mkdir(parents=True, exist_ok=True)

        def build(dest: Path) -> str:
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_GIT_ENV, "GIT_DIR": str(dest),
                   "GIT_WORK_TREE": str(tree)}
            for argv in (["init", "-q"], ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "add", "-A"],
                         ["commit", "-q", "--allow-empty", "--no-verify", "-m", "pristine"]):
                proc = subprocess.run(["git", "-c", "safe.directory=*", *argv], env=env, capture_output=True,
                                      text=True, timeout=_ENGINE_TIMEOUT_S)
                if proc.returncode != 0:
                    raise ImageUnavailable(f"cannot snapshot {workdir} of {self.reference}: {proc.stderr.strip()[-300:]}")
            return ""

        return ready_once(self.own_dir() / "git" / (rel.replace("/", "_") + ".git"), build)

    def own_dir(self) -> Path:
        """Where this process keeps what it makes for the image (its work dirs' pristine snapshots):
        beside the rootfs, or, where the node's image cache is mounted read-only (every pod that
        runs episodes: docs/deploy.md), under this process's own cache, by the image's id."""
        if os.access(self.home, os.W_OK):
            return self.home
        return default_cache_dir() / "image-own" / self.image_id[:24]


def engine() -> str:
    """The container engine that hands images over: ``CODERL_CONTAINER_ENGINE``, else podman, else docker."""
    chosen = os.environ.get("CODERL_CONTAINER_ENGINE")
    if chosen:
        if not shutil.which(chosen):
            raise ImageUnavailable(f"CODERL_CONTAINER_ENGINE={chosen}: no such command")
        return chosen
    for name in ("podman", "docker"):
        if shutil.which(name):
            return name
    raise ImageUnavailable("no container engine to read images with: install podman (scripts/install_podman.sh)")


def build_image(context: Path, tag: str, *, dockerfile: Path | None = None) -> str:
    """``tag`` built from a Dockerfile in ``context`` (task data: trusted like the images a task set
    ships); the engine's cache makes a second build of the same files cheap."""
    argv = [engine(), "build", "-q", "-t", tag]
    if engine() == "podman":
        argv.append("--pull=never" if os.environ.get("CODERL_IMAGE_PULL") == "never" else "--pull=missing")
    if dockerfile is not None:
        argv += ["-f", str(dockerfile)]
    _engine(argv + [str(context)], f"build {context}")
    return tag


def inspect(reference: str, *, pull: bool = True) -> dict:
    """The engine's description of ``reference``, pulled first when it is not on this machine."""
    if not reference or reference.startswith("-") or any(c.isspace() for c in reference):
        raise ImageUnavailable(f"not an image reference: {reference!r}")
    proc = subprocess.run([engine(), "image", "inspect", reference], capture_output=True, text=True,
                          timeout=_ENGINE_TIMEOUT_S)
    if proc.returncode != 0:
        if not pull:
            raise ImageNotPulled(f"image {reference} is not on this machine: pre-pull it here with `coderl images pull "
                                 f"{reference}` (on every sandbox node of a Ray cluster: add --ray)")
        _engine([engine(), "pull", "-q", reference], f"pull {reference}")
        return inspect(reference, pull=False)
    return json.loads(proc.stdout)[0]


def unpack(reference: str, cache_dir: Path, *, pull: bool = True) -> ImageRoot:
    """The image's root filesystem in the cache (unpacked now on its first use)."""
    info = inspect(reference, pull=pull)
    image_id = str(info["Id"]).removeprefix("sha256:")
    config = info.get("Config") or {}
    home = cache_dir / "images" / image_id[:24]
    root = _root(reference, image_id, config, home)

    def build(home: Path) -> str:
        tmp = home.with_name(home.name + ".unpacking")  # a half-exported tree never stands at ``home``
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "rootfs").mkdir(parents=True)
        try:
            _export_into(image_id, tmp / "rootfs")
            (tmp / "image.json").write_text(json.dumps({"reference": reference, "id": image_id, "config": config}))
            tmp.rename(home)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return ""

    ready_once(home, build)
    return root


def cached(reference: str, cache_dir: Path) -> ImageRoot | None:
    """The image unpacked in ``cache_dir`` under ``reference`` (as first unpacked) or its id (whole or
    12+ hex digits), the newest such, read WITHOUT an engine: a service in a container, whose node's
    cache `coderl images pull` filled from outside, needs none. None when the cache has none."""
    wanted = reference.removeprefix("sha256:")
    best: tuple[float, ImageRoot] | None = None
    for meta in (cache_dir / "images").glob("*/image.json"):
        home = meta.parent
        try:
            ready = (home / READY).stat().st_mtime
            info = json.loads(meta.read_text())
        except (OSError, ValueError):  # not ready yet, or not ours
            continue
        image_id = str(info.get("id", ""))
        named = reference == info.get("reference") or (len(wanted) >= 12 and image_id.startswith(wanted))
        if named and (best is None or ready > best[0]):
            best = (ready, _root(str(info["reference"]), image_id, info.get("config") or {}, home))
    return None if best is None else best[1]


def unpacked(reference: str, cache_dir: Path) -> ImageRoot:
    """The image from the cache (no engine), else unpacked now from the engine's local copy, never
    pulled: `ImageNotPulled` when neither this cache nor this machine's engine has it."""
    found = cached(reference, cache_dir)
    if found is not None:
        return found
    try:
        engine()
    except ImageUnavailable:
        raise ImageNotPulled(f"image {reference} is not in this node's cache ({cache_dir}/images) and no container "
                             f"engine is here to read it: unpack it into that cache with `coderl images pull "
                             f"{reference}` (where podman runs, the cache shared)") from None
    return unpack(reference, cache_dir, pull=False)


def _root(reference: str, image_id: str, config: dict, home: Path) -> ImageRoot:
    return ImageRoot(image_id=image_id, reference=reference, rootfs=home / "rootfs",
                     workdir=config.get("WorkingDir") or "/", user=config.get("User") or "",
                     env=dict(e.split("=", 1) for e in config.get("Env") or [] if "=" in e))


def _export_into(image_id: str, dest: Path) -> None:
    created = _engine([engine(), "create", "--pull=never", image_id, "/coderl-never-run"], f"create from {image_id}")
    cid = created.strip().splitlines()[-1]
    try:
        export = subprocess.Popen([engine(), "export", cid], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        tar = subprocess.run(["tar", "-x", "-f", "-", "-C", str(dest), "--no-same-owner", "--preserve-permissions",
                              "--numeric-owner", "--delay-directory-restore"], stdin=export.stdout,
                             capture_output=True, timeout=_ENGINE_TIMEOUT_S)
        assert export.stdout is not None and export.stderr is not None
        export.stdout.close()
        why = export.stderr.read().decode(errors="replace")
        if export.wait() != 0 or tar.returncode != 0:
            raise ImageUnavailable(f"cannot unpack image {image_id[:12]}: {(why or tar.stderr.decode(errors='replace'))[-300:]}")
    finally:
        subprocess.run([engine(), "rm", "-f", cid], capture_output=True, timeout=_ENGINE_TIMEOUT_S)
    for top, _dirs, files in os.walk(dest):  # device nodes have no business in a task's files
        for name in files:
            path = os.path.join(top, name)
            mode = os.lstat(path).st_mode
            if not (os.path.stat.S_ISREG(mode) or os.path.stat.S_ISLNK(mode)):  # devices, fifos, sockets
                os.unlink(path)


def _engine(argv: list[str], what: str) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=_ENGINE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ImageUnavailable(f"cannot {what}: {exc}") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ImageUnavailable(f"cannot {what}: {' / '.join(tail) or f'exit {proc.returncode}'}")
    return proc.stdout


def _table(path: Path) -> list[list[str]]:
    try:
        return [line.split(":") for line in path.read_text(errors="replace").splitlines() if line and line[0] != "#"]
    except OSError:
        return []
