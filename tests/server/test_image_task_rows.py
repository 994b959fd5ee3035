"""What a repository row's image may name besides a reference, checked without an engine (default suite,
milliseconds): a Dockerfile or a build context, tagged by its content (the tag a trainer sends and a
service node looks up: a node lacking it answers ImageNotPulled naming the pre-build command), and
the user an episode runs as (a user the image lacks: a 400 naming it, never a retry on another node).
The builds and sessions themselves: tests/server/test_sessions_remote_images.py (slow)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest
from pydantic import ValidationError

from coderl.cache import READY
from coderl.errors import ImageNotPulled, ImageUnavailable, InvalidTask
from coderl.sandbox.image_build import BUILT_REPOSITORY, DockerfileImage, names_dockerfile, reference_of
from coderl.sandbox.session import SessionHost, SessionLimits
from coderl.server.image_tasks import ImageIn
from coderl.server.ray_images import unpack_here
from coderl.swe.episodes import LocalEpisodes
from coderl.swe.harbor import HarborTask
from coderl.swe.task_ref import ImageRef, TaskRef
from tests.helpers.images import ROOT, swe_lite_task


def _context(tmp_path):
    ctx = tmp_path / "flask-4992"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("FROM localhost/coderl-base/debian:bookworm\nCOPY a.txt /work/a.txt\n")
    (ctx / "a.txt").write_text("a\n")
    return ctx


def test_a_dockerfile_is_tagged_by_its_content(tmp_path):
    ctx = _context(tmp_path)
    tag = reference_of(str(ctx))
    assert tag.startswith(f"{BUILT_REPOSITORY}/flask-4992:") and reference_of(str(ctx / "Dockerfile")) == tag
    assert names_dockerfile(str(ctx)) and not names_dockerfile("docker.io/swebench/sweb.eval.x86_64.a:latest")
    (ctx / "a.txt").write_text("b\n")  # a context file changed: another image
    assert reference_of(str(ctx)) != tag
    (ctx / "other.dockerfile").write_text("FROM scratch\n")  # which Dockerfile is part of what is built
    named = DockerfileImage.from_path(ctx / "other.dockerfile")
    assert named.context == ctx and named.tag().startswith(f"{BUILT_REPOSITORY}/other.dockerfile:")
    assert named.tag().split(":")[1] != reference_of(str(ctx)).split(":")[1]
    copy = tmp_path / "elsewhere" / "flask-4992"  # the node's copy of the same files: the same images
    shutil.copytree(ctx, copy)
    assert (reference_of(str(copy / "other.dockerfile")), reference_of(str(copy))) == (named.tag(), reference_of(str(ctx)))
    (tmp_path / "empty").mkdir()
    for bad, why in ((tmp_path / "absent", "no such Dockerfile"), (tmp_path / "empty", "without a Dockerfile")):
        with pytest.raises(ImageUnavailable, match=why):
            reference_of(str(bad))
        assert why in unpack_here([str(bad)], str(tmp_path / "cache"))["images"][str(bad)]["error"]  # coderl images pull
    hello = HarborTask.from_dir(ROOT / "tests" / "fixtures" / "harbor" / "hello-shell")  # Harbor's: the same code
    assert hello.image_tag == DockerfileImage(hello.environment_dir).tag("localhost/coderl-harbor", "hello-shell")


def test_the_service_is_sent_the_tag_and_the_user(tmp_path):
    ctx = _context(tmp_path)
    task = swe_lite_task("pallets__flask-4992")
    info = {"task": json.dumps(task.to_row()), "image": str(ctx / "Dockerfile"), "workdir": "/work",
            "image_user": "nobody"}
    sent = TaskRef.from_extra_info(info).to_request()["image"]
    assert sent == {"reference": reference_of(str(ctx)), "python": None, "workdir": "/work", "user": "nobody"}
    assert ImageIn(**sent).user == "nobody" and ImageIn(reference="a/b:1", user="1000:1000").user == "1000:1000"
    for bad in ("-u", "a b", "x:y:z", ""):
        with pytest.raises(ValidationError):
            ImageIn(reference="a/b:1", user=bad)


def test_a_node_lacking_a_built_image_or_the_user_says_so(tmp_path, monkeypatch):
    """No engine here (a service in a container): a Dockerfile's tag the cache lacks is ImageNotPulled
    naming `coderl images pull DOCKERFILE`; an image in the cache whose /etc/passwd lacks the row's
    user is InvalidTask (400) naming the user, before any sandbox starts."""
    monkeypatch.delenv("CODERL_CONTAINER_ENGINE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-engine-here"))
    cache = tmp_path / "cache"
    home = cache / "images" / ("c" * 24)
    (home / "rootfs" / "etc").mkdir(parents=True)
    (home / "rootfs" / "work").mkdir()
    (home / "rootfs" / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n")
    (home / "image.json").write_text(json.dumps({"reference": "registry/t:1", "id": "c" * 64,
                                                 "config": {"WorkingDir": "/work", "User": "nobody"}}))
    (home / READY).write_text("")
    episodes = LocalEpisodes(SessionHost(tmp_path / "sessions"), cache=cache, fetch=False)  # a node
    repo = swe_lite_task("pallets__flask-4992")

    async def open_(image: str, user: str | None) -> None:
        await episodes.open(TaskRef.of_repo_task(repo, image=ImageRef(image, user=user or "")), env={},
                            limits=SessionLimits())

    built = reference_of(str(_context(tmp_path)))
    with pytest.raises(ImageNotPulled, match=r"built from a row's Dockerfile.*`coderl images pull DOCKERFILE`"):
        asyncio.run(open_(built, None))
    with pytest.raises(InvalidTask, match=r"the task's user: image registry/t:1: user 'agent' is not in its /etc/passwd"):
        asyncio.run(open_("registry/t:1", "agent"))
    asked = ImageIn(reference="registry/t:1", user="agent").model_dump()
    assert TaskRef.from_request(repo.to_row(), asked, None, harbor_dir=None).image.user == "agent"
    assert not os.path.exists(tmp_path / "sessions")  # refused before a sandbox was made
