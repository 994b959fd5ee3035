"""What an unpacked image's work dir and a request's image reference may be, checked without an engine
(default suite, milliseconds): a work dir that is a link out of the image (Debian's /var/run -> /run
names the HOST's /run when followed on the host) is refused before our git reads anything there,
one that links inside it is used; a reference that would be read as an option is refused."""

from __future__ import annotations

import os

import pytest

from coderl.errors import ImageUnavailable
from coderl.sandbox.image_rootfs import ImageRoot, inspect


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
