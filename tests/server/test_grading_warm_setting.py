"""``CODERL_GRADING_WARM``: the service's repository graders keep that many grading runs started
ahead per task graded (``RepoGrader(warm=...)``, issue 49 item 5; what such a run is and that it
grades as a cold one: tests/swe/test_grading_ahead.py). Off by default in the service, one in a
training worker (tests/verl/test_episode_worker.py); a bad value is refused."""

from __future__ import annotations

import pytest

from coderl.errors import BadRequest
from coderl.server.session_registry import RegistryConfig
from coderl.swe.episodes import grading_warm_setting
from coderl.swe.task_ref import SNAPSHOT, TaskRef


def test_the_setting_reaches_the_repository_graders(tmp_path, monkeypatch):
    monkeypatch.setenv("CODERL_SESSION_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("CODERL_SWE_REPOS", str(tmp_path / "repos"))
    monkeypatch.delenv("CODERL_GRADING_WARM", raising=False)
    assert RegistryConfig.from_env().episodes().repo_grader(TaskRef(kind=SNAPSHOT)).warm == 0
    monkeypatch.setenv("CODERL_GRADING_WARM", "2")
    config = RegistryConfig.from_env()
    assert config.grading_warm == 2
    assert config.episodes().repo_grader(TaskRef(kind=SNAPSHOT)).warm == 2
    monkeypatch.setenv("CODERL_GRADING_WARM", "two")
    with pytest.raises(BadRequest, match="session service settings"):
        RegistryConfig.from_env()


def test_the_setting_read_once_for_the_service_and_the_training_worker():
    assert grading_warm_setting({}, 1) == 1 and grading_warm_setting({"CODERL_GRADING_WARM": " "}, 0) == 0
    assert grading_warm_setting({"CODERL_GRADING_WARM": "0"}, 1) == 0
    for bad in ("-1", "1.5", "on"):
        with pytest.raises(ValueError, match="CODERL_GRADING_WARM"):
            grading_warm_setting({"CODERL_GRADING_WARM": bad}, 1)
