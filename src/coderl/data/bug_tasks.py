"""A bug in a repository -> a task row in `coderl data swe-bench`'s schema, or the reason it is dropped.

Shared by `coderl data swe-smith` (SWE-smith's task branches) and `coderl data synth` (bugs made
here). A candidate is a clean commit and a diff that puts the bug in (with every test still there).
The suite runs twice in the task's environment (``coderl.swe.test_census``): on the clean tree
(once per commit) and with the bug. FAIL_TO_PASS: the tests passing clean and failing with the bug;
PASS_TO_PASS: the tests passing in both. A bug that breaks no test, or more than ``max_failing``,
is dropped with its reason.

The episode's starting tree is an orphan commit (no parent, so no history holds the bug commit
whose reverse is the fix) in the builder's own repository ``OUT/repos/<owner>__<name>`` (what
``--repos`` names for the gate and for training): the bugged tree less the test files the
candidate hides (those SWE-smith's "Remove F2P Tests" commit deleted, else the files of the
FAIL_TO_PASS tests, as SWE-smith does). The test patch restores them; the gold patch is the
bugged tree -> the clean tree, and must not touch a test file (else the row is dropped: the
grader would restore that file and the gold could never pass).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coderl.data.statements import failing_tests_statement
from coderl.sandbox.session import SessionHost
from coderl.swe.environment import build_env
from coderl.swe.patch import split_diff
from coderl.swe.store import RepoStore, git
from coderl.swe.task import EnvSpec, RepoTask
from coderl.swe.test_census import PASSING, Census, run_census

# a fixed author and date: the same tree always makes the same orphan commit (rebuilds agree)
_ORPHAN_ENV = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000"}


class Drop(Exception):
    """This candidate makes no task, for this reason."""


@dataclass(frozen=True)
class BugCandidate:
    """``bug_diff``: the clean commit's tree -> the bugged tree, every test in it. ``hidden``: the
    test files the starting tree leaves out (None: the files of the FAIL_TO_PASS tests)."""

    instance_id: str
    kind: str
    clean_commit: str
    bug_diff: str
    hidden: tuple[str, ...] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


class RepoBuilder:
    """One repository's candidates -> rows: its work repository under ``OUT/repos``, its
    environment (``spec``; None: inferred), and its clean runs (one per clean commit)."""

    def __init__(self, repo: str, out_repos: Path, cache: Path, spec: EnvSpec | None, test_cmd: str, host: SessionHost, *,
                 max_failing: int = 0, statements: dict[str, str] | None = None) -> None:
        self.repo, self.cache, self.spec, self.test_cmd, self.host = repo, cache, spec, test_cmd, host
        self.work = out_repos / repo.replace("/", "__")
        if not (self.work / "HEAD").is_file():
            self.work.mkdir(parents=True, exist_ok=True)
            git("init", "-q", "--bare", str(self.work))
        self.store = RepoStore(out_repos, cache)
        self.max_failing = max_failing
        self.statements = statements or {}
        self._clean: dict[str, asyncio.Task[Census]] = {}
        self._env: dict[str, Path] = {}
        self._specs: dict[str, EnvSpec] = {}
        self.runs, self.run_s = 0, 0.0  # suite runs and their summed wall time (each a single pytest process)

    def import_commit(self, source: Path, commit: str) -> str:
        """``commit`` of the git repository ``source`` into the work repository (kept by a ref)."""
        git("fetch", "-q", "--no-tags", f"file://{source.resolve()}", commit, cwd=self.work)
        sha = git("rev-parse", "FETCH_HEAD^{commit}", cwd=self.work).strip()
        git("update-ref", f"refs/coderl/clean/{sha}", sha, cwd=self.work)
        return sha

    def env_spec(self, clean_commit: str) -> EnvSpec:
        """The rows' environment: the given spec built from ``clean_commit``'s tree, or with none
        given (a repository SWE-smith's specifications lack), the one ``coderl.swe.env_infer`` reads
        from that tree as of the commit's date (``EnvBuildError`` with its reason when it cannot)."""
        if clean_commit not in self._specs:
            source = f"{self.repo}@{clean_commit}"
            if self.spec is not None:
                self._specs[clean_commit] = EnvSpec.from_value({**self.spec.to_dict(), "source": source})
            else:
                from coderl.swe.env_infer import infer_env

                date = git("show", "-s", "--format=%cI", clean_commit, cwd=self.work).strip()
                self._specs[clean_commit] = infer_env(self.store.snapshot(self.repo, clean_commit), source=source,
                                                      resolved_at=date)
        return self._specs[clean_commit]

    def environment(self, clean_commit: str) -> Path:
        """The environment of rows on ``clean_commit`` (built from its tree; once, then cached)."""
        if clean_commit not in self._env:
            self.store.snapshot(self.repo, clean_commit)  # the environment's source tree
            self._env[clean_commit] = build_env(self.env_spec(clean_commit), self.cache)
        return self._env[clean_commit]

    async def clean_run(self, clean_commit: str, env_dir: Path) -> Census:
        if clean_commit not in self._clean:
            self._clean[clean_commit] = asyncio.ensure_future(self._census(clean_commit, env_dir, ""))
        return await self._clean[clean_commit]

    async def _census(self, clean_commit: str, env_dir: Path, diff: str) -> Census:
        run = await run_census(self.host, self.store.snapshot(self.repo, clean_commit), env_dir, diff, self.test_cmd)
        self.runs, self.run_s = self.runs + 1, self.run_s + run.wall_s
        return run

    async def row(self, cand: BugCandidate, env_dir: Path) -> dict[str, Any]:
        """The task row of ``cand``, or ``Drop`` with the reason."""
        clean = await self.clean_run(cand.clean_commit, env_dir)
        if not clean.passing():
            raise Drop(f"no test passes on the clean tree (pytest exit {clean.exit_code}): the environment "
                       "or the test command does not fit the repository")
        bug = await self._census(cand.clean_commit, env_dir, cand.bug_diff)
        f2p = sorted(t for t in clean.passing() if bug.tests.get(t, "missing") not in PASSING)
        p2p = sorted(t for t in clean.passing() if bug.tests.get(t) in PASSING)
        if not f2p:
            raise Drop(f"the bug breaks no test ({len(p2p)} pass with and without it)")
        if self.max_failing and len(f2p) > self.max_failing:
            raise Drop(f"the bug breaks {len(f2p)} tests (more than {self.max_failing})")
        clean_tree = git("rev-parse", f"{cand.clean_commit}^{{tree}}", cwd=self.work).strip()
        bug_tree = self._tree(clean_tree, cand.bug_diff, ())
        hidden = cand.hidden if cand.hidden is not None else tuple(sorted({t.split("::", 1)[0] for t in f2p}))
        start_tree = self._tree(bug_tree, "", hidden)
        test_patch = git("diff", "--binary", start_tree, bug_tree, cwd=self.work)
        gold = git("diff", "--binary", bug_tree, clean_tree, cwd=self.work)
        test_paths = {*hidden, *(t.split("::", 1)[0] for t in (*f2p, *p2p))}
        touched = sorted({p for s in split_diff(gold) for p in s.paths} & test_paths)
        if touched:
            raise Drop(f"the bug changes test files ({', '.join(touched[:3])}): its reverse could never be graded")
        start = git("commit-tree", start_tree, "-m", "Initial commit", cwd=self.work, env=_ORPHAN_ENV).strip()
        git("update-ref", f"refs/tags/{cand.instance_id}", start, cwd=self.work)
        statement = self.statements.get(cand.instance_id) or failing_tests_statement(
            self.repo, f2p, bug.messages, gold)
        task = RepoTask(instance_id=cand.instance_id, repo=self.repo, base_commit=start, problem_statement=statement,
                        fail_to_pass=tuple(f2p), pass_to_pass=tuple(p2p), test_patch=test_patch, gold_patch=gold,
                        test_cmd=self.test_cmd, env=self.env_spec(cand.clean_commit))
        return {**task.to_row(), "version": "", "created_at": "", "kind": cand.kind, "clean_commit": cand.clean_commit,
                "statement_source": "given" if cand.instance_id in self.statements else "failing tests",
                "census_s": {"clean": clean.wall_s, "bug": bug.wall_s}, **cand.meta}

    def _tree(self, base_tree: str, diff: str, remove: tuple[str, ...]) -> str:
        """The tree ``base_tree`` with ``diff`` applied and the paths ``remove`` taken out, written
        in the work repository (a private index; no work tree)."""
        with tempfile.TemporaryDirectory() as tmp:
            env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            git("read-tree", base_tree, cwd=self.work, env=env)
            if diff:
                patch = Path(tmp) / "bug.patch"
                patch.write_text(diff)
                git("apply", "--cached", "--binary", str(patch), cwd=self.work, env=env)
            if remove:
                git("update-index", "--force-remove", "--", *remove, cwd=self.work,
                    env={**env, "GIT_WORK_TREE": tmp})  # an empty one: the index alone changes
            return git("write-tree", cwd=self.work, env=env).strip()
