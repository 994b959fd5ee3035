"""`coderl data synth`: procedural bugs in a repository at a commit -> task rows (the schema and
checks of `coderl data swe-smith`: ``coderl.data.bug_tasks``).

The repository's library files (Python files outside its tests, docs and build scripts) are
mutated by ``coderl.data.mutations``; the candidates, shuffled by ``--seed``, are tried until
``--max-tasks`` are kept or ``--max-tries`` were run. A bug is kept when it breaks between 1 and
``--max-failing`` tests and the rest still pass, and when no bug kept before broke exactly the
same tests (the failing-test signature: two bugs that fail the same tests teach the same lesson).
The environment is the repository's entry in ``--specs`` (repos.json shaped, as SWE-smith's),
else the one ``coderl.swe.env_infer`` reads from the repository's tree.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from coderl.data.bug_tasks import BugCandidate, Drop, RepoBuilder
from coderl.data.common import write_jsonl
from coderl.data.decontam import overlap_report
from coderl.data.mutations import Mutation, mutations
from coderl.data.swe_smith import (
    MIRROR_NAME,
    mirror_git,
    read_specs,
    read_statements,
    smith_spec,
    upstream_repo,
)
from coderl.errors import BadRequest, CoderlError
from coderl.sandbox.session import SessionHost
from coderl.swe.store import git
from coderl.swe.task import DEFAULT_TEST_CMD

_NOT_LIBRARY = ("test", "tests", "testing", "docs", "doc", "examples", "benchmarks", "scripts", "build")


def library_files(source: Path, commit: str) -> list[str]:
    """The Python files of the library: not tests, docs, examples or build scripts."""
    out = []
    for path in git("ls-tree", "-r", "--name-only", commit, cwd=source).splitlines():
        parts = path.split("/")
        name = parts[-1]
        if not name.endswith(".py") or name in ("setup.py", "conftest.py", "noxfile.py") or name.startswith("test_") \
                or name.endswith("_test.py") or any(p in _NOT_LIBRARY for p in parts[:-1]):
            continue
        out.append(path)
    return out


def build_synth(repo_dir: str | Path, commit: str, out: str | Path, *, cache_dir: str | Path, max_tasks: int = 30,
                max_tries: int | None = None, max_failing: int = 20, seed: int = 0, name: str | None = None,
                specs: str | None = None, statements: str | None = None, jobs: int = 2,
                bench_rows: str | None = None, drop_overlaps: bool = False) -> dict[str, Any]:
    """Write ``out/tasks.jsonl``, ``out/report.json`` and the starting commits in ``out/repos``."""
    path, cache, out = Path(repo_dir).resolve(), Path(cache_dir).resolve(), Path(out).resolve()
    if not path.exists():
        raise BadRequest(f"--repo {path}: no such bundle or git directory")
    source = mirror_git(path, cache)
    try:
        sha = git("rev-parse", "--verify", "-q", f"{commit}^{{commit}}", cwd=source).strip()
    except CoderlError as exc:
        raise BadRequest(f"--commit {commit}: not a commit of {path}") from exc
    stem = Path(repo_dir).name.removesuffix(".bundle").removesuffix(".git")  # as named, not a link's target
    # beside the repository as the user named it (a link's target may sit beside another repos.json)
    entries = read_specs(Path(specs) if specs else Path(repo_dir).absolute().parent / "repos.json")
    entry = entries.get(stem) or next((e for e in entries.values() if e.get("repo") == name), None)
    if entry is None and name is None and not MIRROR_NAME.match(stem):
        raise BadRequest(f"--repo {path.name}: pass --name owner/name (no --specs entry, not a mirror's name)")
    repo = name or str((entry or {}).get("repo") or upstream_repo(stem))
    spec, test_cmd = smith_spec(entry) if entry else (None, DEFAULT_TEST_CMD)  # None: inferred from the tree
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    report = asyncio.run(_synth(source, sha, repo, spec, test_cmd, out, cache, max_tasks=max_tasks,
                                max_tries=max_tries or 8 * max_tasks, max_failing=max_failing, seed=seed,
                                statements=read_statements(statements), jobs=jobs))
    rows = report.pop("rows")
    overlaps = overlap_report(rows, bench_rows)
    if drop_overlaps:
        report["dropped"].update({i: f"overlaps SWE-bench: {'; '.join(o['overlaps'])}"
                                  for i, o in overlaps.items() if o["overlaps"]})
        rows = [r for r in rows if not overlaps[r["instance_id"]]["overlaps"]]
    write_jsonl(rows, out / "tasks.jsonl")
    report.update({"served": len(rows), "instances": [r["instance_id"] for r in rows], "overlap": overlaps,
                   "wall_s": round(time.monotonic() - t0, 1), "repos": str(out / "repos"),
                   "tasks": str(out / "tasks.jsonl"), "cache": str(cache), "repo": repo, "commit": sha})
    (out / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True))
    return report


async def _synth(source: Path, commit: str, repo: str, spec: Any, test_cmd: str, out: Path, cache: Path, *,
                 max_tasks: int, max_tries: int, max_failing: int, seed: int, statements: dict[str, str],
                 jobs: int) -> dict[str, Any]:
    stem = f"{repo.replace('/', '__')}.{commit[:8]}"
    async with SessionHost() as host:
        builder = RepoBuilder(repo, out / "repos", cache, spec, test_cmd, host, max_failing=max_failing,
                              statements=statements)
        clean = builder.import_commit(source, commit)
        env_dir = await asyncio.to_thread(builder.environment, clean)
        candidates = [(f, m) for f in library_files(builder.work, clean)
                      for m in mutations(git("show", f"{clean}:{f}", cwd=builder.work).encode())]
        random.Random(f"{seed}/{stem}").shuffle(candidates)
        rows: list[dict[str, Any]] = []
        dropped: dict[str, str] = {}
        signatures: dict[tuple[str, ...], str] = {}
        ops: dict[str, dict[str, int]] = {}
        tried = 0
        gate = asyncio.Semaphore(jobs)

        async def one(path: str, mutation: Mutation) -> None:
            nonlocal tried
            async with gate:
                if len(rows) >= max_tasks or tried >= max_tries:
                    return
                tried += 1
                stats = ops.setdefault(mutation.op, {"tried": 0, "kept": 0})
                stats["tried"] += 1
                digest = hashlib.sha256(f"{path}:{mutation}".encode()).hexdigest()[:8]
                iid = f"{stem}.synth_{mutation.op}__{digest}"
                try:
                    cand = BugCandidate(iid, mutation.op, clean, _bug_diff(builder.work, clean, path, mutation),
                                        meta={"source": "synth", "layout": "synth"})
                    row = await builder.row(cand, env_dir)
                except Drop as why:
                    dropped[iid] = str(why)
                    return
                except CoderlError as exc:
                    dropped[iid] = f"{type(exc).__name__}: {str(exc)[:500]}"
                    return
                signature = tuple(row["FAIL_TO_PASS"])
                if signature in signatures or len(rows) >= max_tasks:
                    git("update-ref", "-d", f"refs/tags/{iid}", cwd=builder.work)
                    dropped[iid] = (f"the same failing tests as {signatures[signature]}" if signature in signatures
                                    else "--max-tasks reached")
                    return
                signatures[signature] = iid
                stats["kept"] += 1
                rows.append(row)
                print(f"synth: kept {iid} ({len(signature)} failing tests; {len(rows)}/{max_tasks})", flush=True)

        await asyncio.gather(*(one(p, m) for p, m in candidates))
    rows.sort(key=lambda r: r["instance_id"])
    return {"rows": rows, "dropped": dropped, "candidates": len(candidates), "tried": tried, "operators": ops,
            "environment": str(env_dir), "suite_runs": builder.runs, "suite_run_s": round(builder.run_s, 1)}


def _bug_diff(work: Path, commit: str, path: str, mutation: Mutation) -> str:
    """The diff from ``commit``'s tree to the tree with ``mutation`` applied to ``path``."""
    original = git("show", f"{commit}:{path}", cwd=work).encode()
    with tempfile.TemporaryDirectory() as tmp:
        changed = Path(tmp) / "file"
        changed.write_bytes(mutation.apply(original))
        blob = git("hash-object", "-w", str(changed), cwd=work).strip()
        mode = git("ls-tree", commit, "--", path, cwd=work).split()[0]
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git("read-tree", commit, cwd=work, env=index)
        git("update-index", "--cacheinfo", f"{mode},{blob},{path}", cwd=work, env={**index, "GIT_WORK_TREE": tmp})
        tree = git("write-tree", cwd=work, env=index).strip()
    return git("diff", "--binary", commit, tree, cwd=work)
