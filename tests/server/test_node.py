"""One grading setup per service process (issue 46 item 2): ``/v1/swe/grade`` and the session registry
take the same node (`coderl.server.node`): its settings read once, one session host, one
`LocalEpisodes` whose one bound (``CODERL_SWE_CONCURRENCY``) every grader it makes shares."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI

from coderl.server.node import close_node, node_of
from coderl.server.session_registry import SessionRegistry
from coderl.swe.task import RepoTask
from coderl.swe.task_ref import TaskRef


def test_the_grade_route_and_the_sessions_share_one_host_and_one_bound(monkeypatch, tmp_path):
    monkeypatch.setenv("CODERL_SESSION_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("CODERL_SWE_REPOS", str(tmp_path / "repos"))
    monkeypatch.setenv("CODERL_SWE_CONCURRENCY", "3")
    app = FastAPI()
    task = RepoTask(instance_id="o__r-1", repo="o/r", base_commit="0" * 40, problem_statement="",
                    fail_to_pass=("t.py::t",), pass_to_pass=())

    async def main():
        first, again = await node_of(app), await node_of(app)
        registry = SessionRegistry(first.config, first.episodes)
        episodes = first.episodes
        graders = [episodes.repo_grader(TaskRef.of_repo_task(task)), episodes.image_grader(TaskRef.of_repo_task(task)),
                   episodes.runner(TaskRef.of_repo_task(task))]
        try:
            return first, again, registry, graders
        finally:
            await registry.http.aclose()
            await close_node(app)

    first, again, registry, graders = asyncio.run(main())
    assert first is again and registry.episodes is first.episodes and registry.host is first.episodes.host
    assert first.config.grade_concurrency == 3 and first.episodes.gate._value == 3
    assert all(g._gate is first.episodes.gate for g in graders)  # one bound for every kind's grader
    assert getattr(app.state, "node", None) is None  # closed with the app
