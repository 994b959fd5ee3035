"""`coderl data swe`: SWE-bench-shaped rows (JSON-string lists, as SWE-bench's parquet has them) with
repositories from a tarball directory; missing repositories, unknown commits and bad rows are
counted drops, never a crash."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile

import pyarrow.parquet as pq

from coderl.swe.task_set import build_task_set


def test_swe_rows_to_parquet_with_tarball_repos(tmp_path):
    built = build_task_set(tmp_path / "own")
    tarballs = tmp_path / "tarballs"
    tarballs.mkdir()
    for task in built[:2]:  # two repositories as tarballs, the rest missing
        name = task.repo.replace("/", "__")
        with tarfile.open(tarballs / f"{name}.tar.gz", "w:gz") as tf:
            tf.add(tmp_path / "own" / "repos" / name, arcname=name)
    rows = []
    for task in built:
        row = task.to_row()
        row["FAIL_TO_PASS"], row["PASS_TO_PASS"] = json.dumps(row["FAIL_TO_PASS"]), json.dumps(row["PASS_TO_PASS"])
        rows.append(row)
    rows.append({**built[0].to_row(), "instance_id": "bad-commit", "base_commit": "0" * 40})
    rows.append({"instance_id": "no-tests", "repo": built[0].repo, "base_commit": built[0].base_commit})
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "coderl.cli", "data", "swe", "--source", str(source), "--repos",
                           str(tarballs), "--cache", str(tmp_path / "cache"), "--out", str(out)],
                          capture_output=True, text=True, env={"CODERL_NO_PROGRESS": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["kept"] == 2 and report["read"] == len(rows)
    assert report["dropped"] == {"repository missing from --repos": len(built) - 2,
                                 "base commit not in the mirror": 1, "invalid task row": 1}
    table = pq.read_table(out / "train.parquet").to_pylist()
    assert {r["agent_name"] for r in table} == {"coderl_gateway_agent"}
    first = table[0]["extra_info"]
    task = json.loads(first["task"])
    assert task["instance_id"] == built[0].instance_id and task["FAIL_TO_PASS"] == list(built[0].fail_to_pass)
    snapshot = first["repo_dir"]
    log = subprocess.run(["git", "-C", snapshot, "log", "--all", "--format=%H"], capture_output=True, text=True)
    assert log.stdout.split() == [built[0].base_commit]  # the fix commit of the mirror is not in the snapshot


def test_swe_without_repos_is_a_one_line_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "coderl.cli", "data", "swe", "--source", str(tmp_path),
                           "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert proc.returncode != 0 and "--repos" in proc.stderr and "Traceback" not in proc.stderr


def test_swe_rows_with_their_images(tmp_path):
    """`--image TEMPLATE` on SWE-bench Lite's real rows: no mirror needed, each row names its image
    (SWE-bench's naming through {sweb_id}), its interpreter and /testbed (in the prompt too), and
    images.txt lists the references for `coderl images pull`; wrong combinations are one-line errors."""
    from tests.helpers.images import SWE_LITE

    out = tmp_path / "out"
    template = "docker.io/swebench/sweb.eval.x86_64.{sweb_id}:latest"
    argv = [sys.executable, "-m", "coderl.cli", "data", "swe", "--source", str(SWE_LITE / "rows.json"), "--out", str(out),
            "--cache", str(tmp_path / "cache"), "--image", template, "--image-python", "/opt/miniconda3/envs/testbed/bin/python",
            "--image-user", "nobody"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rows = {r["extra_info"]["instance_id"]: r for r in pq.read_table(out / "train.parquet").to_pylist()}
    assert len(rows) == 48, sorted(rows)
    flask = rows["pallets__flask-4992"]
    assert flask["extra_info"]["image"] == "docker.io/swebench/sweb.eval.x86_64.pallets_1776_flask-4992:latest"
    assert (flask["extra_info"]["image_python"], flask["extra_info"]["workdir"]) == (
        "/opt/miniconda3/envs/testbed/bin/python", "/testbed")
    assert flask["extra_info"]["image_user"] == "nobody"
    assert "checked out at /testbed" in flask["prompt"][0]["content"] and "repo_dir" not in flask["extra_info"]
    images = (out / "images.txt").read_text().splitlines()
    assert len(images) == 48 and flask["extra_info"]["image"] in images
    for extra, why in ((["--repos", str(tmp_path)], "no --source builtin, --repos"),
                       (["--image", "x/{nope}"], "only {instance_id} and {sweb_id}"),
                       (["--image-user", "a b"], "--image-user must be")):
        bad = subprocess.run([*argv, *extra], capture_output=True, text=True)
        assert bad.returncode == 2 and why in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr
