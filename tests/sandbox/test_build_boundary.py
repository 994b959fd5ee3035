"""Where an environment's build steps run, and what the service writes for its sandboxes (issue 42):

- an operator's ``pre_install`` step runs in the build sandbox (uid 65534, read-only root, only the
  tree's copy writable, none of the host's secrets), never on the host;
- a request's row may carry the bundled tables' shell steps (they are the node's own text) and
  nothing else of the kind;
- the image sessions' interpreter wrapper is made in the service's cache, exclusively: a file
  planted where it goes (a script, a link) is replaced, never run; a directory of another user's
  there is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coderl.cache import exclusive_file, private_dir
from coderl.errors import EnvBuildError, SandboxError, UntrustedInput
from coderl.sandbox import image_session
from coderl.sandbox.build_box import run_boxed
from coderl.swe.env_tables import table_spec
from coderl.swe.environment import build_env, run_pre_install
from coderl.swe.request_rows import task_from_request
from coderl.swe.task import EnvSpec
from tests.helpers.require import needs

ROW = {"instance_id": "x-1", "repo": "sphinx-doc/sphinx", "base_commit": "a" * 40, "FAIL_TO_PASS": ["t.py::t"]}


def test_a_build_step_sees_only_its_tree(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    step = (f"id -u > uid; touch {outside} 2>/dev/null; echo x > /usr/x 2>/dev/null; "
            "cat /etc/shadow 2>/dev/null; ls /root 2>/dev/null; exit 0")
    done = run_boxed(["bash", "-c", step], writable=tree, timeout_s=60)
    assert done.returncode == 0 and done.stdout == "", done
    assert (tree / "uid").read_text() == "65534\n"
    assert not outside.exists() and not Path("/usr/x").exists()


def test_an_operators_pre_install_runs_boxed(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    (tree / "setup.py").write_text("Jinja2>=2.3\n")
    spec = EnvSpec(python="3.11", pre_install=("sed -i 's/Jinja2>=2.3/Jinja2<3.0/' setup.py", "id -u > uid"))
    run_pre_install(spec, tree)
    assert (tree / "setup.py").read_text() == "Jinja2<3.0\n" and (tree / "uid").read_text() == "65534\n"
    run_pre_install(EnvSpec(python="3.11", pre_install=(f"touch {outside}",)), tree)  # the box's own /tmp
    assert not outside.exists()
    with pytest.raises(EnvBuildError, match="pre-install step 'touch /var/coderl-x': touch: cannot touch"):
        run_pre_install(EnvSpec(python="3.11", pre_install=("touch /var/coderl-x",)), tree)
    assert not Path("/var/coderl-x").exists()


def test_a_request_may_carry_the_tables_shell_steps_only():
    """Exactly the tables' spec for the row: trusted (the operator's environment, same key); the
    tables' shell fields with other requirements: allowed, untrusted (wheels only); any other
    shell field, or another repository's: refused."""
    source = "sphinx-doc/sphinx@" + "a" * 40
    exact = table_spec("sphinx-doc/sphinx", "3.5", source=source, resolved_at="2021-01-21T15:36:24Z")
    assert exact is not None and exact.pre_install
    task = task_from_request({**ROW, "environment_setup": exact.to_dict()})
    assert task.env == exact and task.env.trusted
    changed = {**exact.to_dict(), "requirements": [*exact.requirements, "pytest-xdist>=2"]}
    task = task_from_request({**ROW, "environment_setup": changed})
    assert task.env.pre_install == exact.pre_install and not task.env.trusted
    with pytest.raises(UntrustedInput, match="environment_setup.pre_install"):
        task_from_request({**ROW, "environment_setup": {**changed, "pre_install": [*exact.pre_install, "id"]}})
    with pytest.raises(UntrustedInput, match="environment_setup.pre_install"):  # another repository's steps
        task_from_request({**ROW, "repo": "pallets/flask", "environment_setup": changed})
    with pytest.raises(UntrustedInput, match="environment_setup.build_env"):  # checked again at the build
        build_env(EnvSpec(python="3.9", build_env=(("LD_PRELOAD", "/x"),), trusted=False), Path("/nonexistent"))
    inferred = task_from_request({**ROW, "environment_setup": {"python": "3.9", "install": ".[test]"}})
    assert inferred.env.install == ".[test]" and not inferred.env.trusted  # the project of the node's mirror
    with pytest.raises(UntrustedInput, match="environment_setup.install"):
        task_from_request({**ROW, "environment_setup": {"python": "3.9", "install": "./../../srv/other"}})
    plain = task_from_request({**ROW, "environment_setup": {"python": "3.9", "requirements": ["pytest>=7; python_version>'3'"]}})
    assert not plain.env.trusted


def test_a_planted_wrapper_is_replaced_never_used(tmp_path, monkeypatch):
    monkeypatch.setenv("CODERL_CACHE", str(tmp_path / "cache"))
    image_session.interpreter_wrapper.cache_clear()
    try:
        path = Path(image_session.interpreter_wrapper())
        real = path.read_text()
        assert path.is_relative_to(tmp_path / "cache") and "--library-path" in real
        assert (path.parent.stat().st_mode & 0o777) == 0o700
        for plant in ("script", "link"):
            path.unlink()
            if plant == "script":
                path.write_text(f"#!/bin/sh\ntouch {tmp_path}/planted\n")
            else:
                (tmp_path / "evil").write_text(real)  # even with the right text: a link is not ours to trust
                path.symlink_to(tmp_path / "evil")
            image_session.interpreter_wrapper.cache_clear()
            assert image_session.interpreter_wrapper() == str(path)
            assert not path.is_symlink() and path.read_text() == real, plant
    finally:
        image_session.interpreter_wrapper.cache_clear()


@needs(os.getuid() == 0, "making a directory of another user's needs root (CI runs as root)")
def test_a_directory_of_another_users_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 12345, 12345)
    with pytest.raises(SandboxError, match="not a directory of this user's"):
        private_dir(theirs)
    with pytest.raises(SandboxError):
        exclusive_file(theirs / "wrapper", "x")
    assert not (theirs / "wrapper").exists()
