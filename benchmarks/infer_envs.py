"""Inferred environments on real repositories no table covers: ``coderl.swe.env_infer`` end to end.

For each git bundle (``<owner>__<name>[.<anything>].bundle``, its ``main`` or HEAD the commit):
the snapshot is made in the cache, the environment inferred from the tree (as of the commit's
committer date), built by uv, and validated by running the suite at that commit in a session
sandbox. Prints and writes one record per repository: Python, install target, requirement files,
build and validation seconds, collection, counts, pass share, or why it was refused.

    python benchmarks/infer_envs.py ../shared/data/swe-smith/*.bundle --cache /tmp/infer --out infer.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import time
from pathlib import Path

from coderl.errors import CoderlError
from coderl.swe.env_infer import infer_env, validate_env
from coderl.swe.environment import build_env
from coderl.swe.store import snapshot_path


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def one(bundle: Path, cache: Path) -> dict:
    repo = bundle.name.split(".", 1)[0].replace("__", "/", 1)
    heads = _git("bundle", "list-heads", str(bundle)).splitlines()
    ref = next((h for h in heads if h.endswith(("refs/heads/main", "refs/heads/master", " HEAD"))), heads[0])
    commit, name = ref.split()
    snapshot = snapshot_path(cache, repo, commit)
    if not (snapshot / ".git").is_dir():
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "-q", "--no-tags", "-b", name.removeprefix("refs/heads/"), str(bundle), str(snapshot))
    date = _git("log", "-1", "--format=%cI", commit, cwd=snapshot)
    rec: dict = {"repo": repo, "commit": commit, "date": date}
    t0 = time.monotonic()
    try:
        spec = infer_env(snapshot, source=f"{repo}@{commit}", resolved_at=date)
        rec.update(python=spec.python, install=spec.install, requirement_files=list(spec.requirement_files),
                   requirements=list(spec.requirements))
        env = build_env(spec, cache)
        rec["build_s"] = round(time.monotonic() - t0, 1)
        t1 = time.monotonic()
        rec.update(asyncio.run(validate_env(snapshot, env)), validate_s=round(time.monotonic() - t1, 1))
    except CoderlError as exc:
        rec.update(refused=str(exc)[:400], s=round(time.monotonic() - t0, 1))
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundles", nargs="+", type=Path)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    records = []
    for bundle in args.bundles:
        rec = one(bundle, args.cache.resolve())
        records.append(rec)
        print(json.dumps({k: v for k, v in rec.items() if k not in ("requirements", "run_tail")}), flush=True)
        args.out.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
