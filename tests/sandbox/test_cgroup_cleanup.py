"""Removing the slot groups an engine (or a dead one) left behind, on either hierarchy. This host
has cgroup v1; v2's cleanup is checked on a directory laid out like v2 (where the kill's write
lands shows which group it addressed): it raised KeyError('unified') before."""

from __future__ import annotations

from pathlib import Path

from coderl.sandbox.cgroups import CgroupManager, CgroupSupport


def _manager_on(root: Path, version: str) -> CgroupManager:
    manager = CgroupManager(root)
    manager.support = CgroupSupport(version, "laid out by the test")
    return manager


def test_v2_leftovers_are_killed_through_the_unified_group(tmp_path):
    base = tmp_path / "coderl-1-1"
    (base / "slot0").mkdir(parents=True)
    manager = _manager_on(tmp_path, "v2")
    manager._bases = [base]
    manager.close()  # a plain directory keeps the kill's file, so it is not removed: that is fine here
    assert (base / "slot0" / "cgroup.kill").read_text() == "1"
    assert manager._bases == []


def test_v1_leftovers_of_each_controller_are_removed(tmp_path):
    bases = [tmp_path / c / "coderl-1-1" for c in ("memory", "pids")]
    for b in bases:
        (b / "slot0").mkdir(parents=True)
    manager = _manager_on(tmp_path, "v1")
    manager._bases = bases
    manager.close()
    assert not any(b.exists() for b in bases)
