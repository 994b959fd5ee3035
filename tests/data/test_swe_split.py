"""The builtin repository tasks' train / held-out split (each task.json's `split`): disjoint, every
task in one of them, and selectable by `coderl data swe --split` and `coderl eval swe --split`;
a split asked of anything but the builtin set is a one-line error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from coderl.errors import BadRequest
from coderl.swe.task_set import build_task_set, task_dirs


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "CODERL_NO_PROGRESS": "1"})


def test_split_is_declared_once_per_task_and_partitions_the_set(tmp_path):
    declared = {json.loads((d / "task.json").read_text())["instance_id"]: json.loads((d / "task.json").read_text())
                .get("split") for d in task_dirs()}
    assert set(declared.values()) == {"train", "heldout"}, declared  # no task left without a split
    train = {t.instance_id for t in build_task_set(tmp_path / "t", "train")}
    heldout = {t.instance_id for t in build_task_set(tmp_path / "h", "heldout")}
    everything = {t.instance_id for t in build_task_set(tmp_path / "a")}
    assert train.isdisjoint(heldout) and train | heldout == everything == set(declared)
    assert (len(train), len(heldout)) == (8, 4)
    with pytest.raises(BadRequest, match="unknown split"):
        build_task_set(tmp_path / "x", "test")


def test_data_swe_builds_one_split(tmp_path):
    out = tmp_path / "heldout"
    done = _cli("data", "swe", "--source", "builtin", "--split", "heldout", "--out", str(out),
                "--cache", str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    ids = {r["extra_info"]["instance_id"] for r in pq.read_table(out / "train.parquet").to_pylist()}
    assert ids == {t.instance_id for t in build_task_set(tmp_path / "h", "heldout")}
    bad = _cli("data", "swe", "--source", str(out / "tasks.jsonl"), "--repos", str(out / "builtin" / "repos"),
               "--split", "train", "--out", str(tmp_path / "bad"))
    assert bad.returncode != 0 and "--source builtin" in bad.stderr and "Traceback" not in bad.stderr
    bad = _cli("eval", "swe", "--tasks", "builtin", "--split", "validation", "--gold", "--out", str(tmp_path / "e"))
    assert bad.returncode != 0 and "unknown split 'validation'" in bad.stderr and "Traceback" not in bad.stderr
