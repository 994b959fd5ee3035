"""Task images built from a Dockerfile: a Harbor task's ``environment/``, or a repository row whose
``image`` names a Dockerfile or a build context (an absolute path) instead of a reference.

Such an image is tagged by the content of its Dockerfile and build context
(``localhost/coderl-build/<name>:<hash>``; Harbor's ``localhost/coderl-harbor/...``): a changed file is
a new image, an unchanged one is built once per process (a cached engine build still costs 0.3-0.5 s
here), and the trainer and a service node that hold the same files name the same image without
talking to each other. That is what lets a service, which never builds at request time, be asked
for a row's Dockerfile by its tag: ``coderl images pull PATH`` builds and unpacks it on the node
ahead (`coderl.server.image_tasks`).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

from coderl.errors import ImageUnavailable
from coderl.sandbox.image_rootfs import ImageRoot, build_image, unpack

BUILT_REPOSITORY = "localhost/coderl-build"
_BUILT: set[str] = set()
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def names_dockerfile(image: str) -> bool:
    """A row's ``image`` that is an absolute path names a Dockerfile (or its build context): no image
    reference starts with '/'."""
    return image.startswith("/")


@dataclass(frozen=True)
class DockerfileImage:
    """A Dockerfile and its build context: ``context``'s own Dockerfile unless ``dockerfile`` names one."""

    context: Path
    dockerfile: Path | None = None

    @classmethod
    def from_path(cls, path: str | Path) -> DockerfileImage:
        """A build context holding a Dockerfile, or a Dockerfile (its directory the context)."""
        given = Path(path).resolve()
        if given.is_dir():
            if not (given / "Dockerfile").is_file():
                raise ImageUnavailable(f"{path}: a build context without a Dockerfile")
            return cls(given)
        if given.is_file():
            return cls(given.parent, None if given.name == "Dockerfile" else given)
        raise ImageUnavailable(f"{path}: no such Dockerfile or build context on this machine")

    def tag(self, repository: str = BUILT_REPOSITORY, name: str | None = None) -> str:
        """``repository/<name>:<hash of the context's files and which Dockerfile>``; ``name``
        defaults to the Dockerfile's (its context's when it is just ``Dockerfile``)."""
        digest = hashlib.sha256()
        for path in sorted(p for p in self.context.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(self.context)).encode() + b"\0" + path.read_bytes())
        if self.dockerfile is not None:  # which file of the context (or one outside it): never where the context is,
            which = self.dockerfile.relative_to(self.context) if self.dockerfile.is_relative_to(self.context) \
                else self.dockerfile.name  # so that a node's copy of the same files names the same image
            digest.update(b"\0-f\0" + str(which).encode() + b"\0" + self.dockerfile.read_bytes())
        label = name or (self.dockerfile.name if self.dockerfile else self.context.name)
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in label.lower()).strip("-.") or "image"
        return f"{repository}/{safe}:{digest.hexdigest()[:12]}"

    def built(self, tag: str | None = None) -> str:
        """``tag`` (default ``self.tag()``) built by the engine unless this process built it already."""
        tag = tag or self.tag()
        with _LOCKS_GUARD:
            lock = _LOCKS.setdefault(tag, threading.Lock())
        with lock:
            if tag not in _BUILT:
                build_image(self.context, tag, dockerfile=self.dockerfile)
                _BUILT.add(tag)
        return tag


def reference_of(image: str) -> str:
    """The reference a row's ``image`` is looked up by: itself, or a Dockerfile's tag (not built)."""
    return DockerfileImage.from_path(image).tag() if names_dockerfile(image) else image


def obtained(image: str, cache_dir: Path) -> ImageRoot:
    """A row's image unpacked in ``cache_dir``: a Dockerfile built first (once per process), a
    reference pulled when this machine lacks it. For a machine that may fetch (not a service)."""
    return unpack(DockerfileImage.from_path(image).built() if names_dockerfile(image) else image, cache_dir)
