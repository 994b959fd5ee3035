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


def test_a_new_slot_group_object_raises_limits_the_old_one_set():
    """A slot replaced after its runner died gets a new SlotCgroup over the same group, which still
    holds the last limits. On v1 memory+swap must stay >= memory at every write, so raising the
    limits needs memsw written first: a fresh object that assumed nothing was set wrote them in the
    wrong order (EINVAL), and every later run on that slot with a higher limit was a sandbox error
    (found as tests/sandbox/test_tracebacks.py failing after test_threats.py in one session)."""
    manager = CgroupManager()
    if manager.support.version != "v1" or not (manager.root / "memory" / "memory.memsw.limit_in_bytes").exists():
        return  # the ordering rule is v1's with swap accounting (this machine's case, and CI's)
    manager.start()
    try:
        manager.slot(0).set_limits(64 << 20, 32)
        manager.slot(0).set_limits(256 << 20, 32)  # a new object over the same group: raises it
        assert (manager.root / "memory" / manager.base_name / "slot0" / "memory.limit_in_bytes").read_text().strip() \
            == str(256 << 20)
    finally:
        manager.close()
