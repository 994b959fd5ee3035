"""SandboxFusion's test-runner languages on /run_code (go_test, junit, pytest): the program is a test
file, its runner decides. Golden programs in ``tests/golden/runners/<language>/<case>/`` with
``expect.json``: the response's ``status``, the ``compile_result``/``run_result`` status and return
code, text the runner's stdout must hold (``stdout_has``), the request's ``run_timeout``. A failing
test is the program's failure (Failed, the runner's exit status), a hung test a time limit, a
compile error the compile's; a runner that is not installed is never offered (422 with its reason).

Cost: pytest's cases ~0.5 s each run in the default suite; go_test (``go test -c`` on testify) and
junit (javac, then the JUnit launcher's JVM) take 1-3 s each on 2 vCPUs and are ``slow``.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from coderl.errors import UnknownLanguage
from coderl.sandbox import languages
from coderl.sandbox.languages import go_test
from coderl.server.scalebox import go_test_program
from tests.helpers.assert_route import accepted
from tests.helpers.require import require

ROOT = Path(__file__).parents[1] / "golden" / "runners"
CASES = sorted(p.parent for p in ROOT.glob("*/*/expect.json"))
SLOW = {"go_test", "junit"}


def _post(url: str, case: Path) -> dict:
    expect = json.loads((case / "expect.json").read_text())
    body = {"language": case.parent.name, "code": next(case.glob("program.*")).read_text(),
            "run_timeout": expect.get("run_timeout", 20), "compile_timeout": 60}
    for _ in range(5):  # a 504 is the queue's "no free slot in time" on a loaded machine: retried, as verl does
        resp = httpx.post(url + "/run_code", json=body, timeout=180)
        if resp.status_code != 504:
            break
    assert resp.status_code == 200, resp.text
    return resp.json()


def _answers(url: str, cases: list[Path]) -> dict[Path, dict]:
    """The cases posted two at a time, one per slot of the service: more would wait in its queue,
    which answers 504 after 8 s when compiles are slow on a loaded machine."""
    offered = httpx.get(url + "/v1/capabilities", timeout=60).json()["languages"]
    present = [c for c in cases if c.parent.name in offered]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(present, pool.map(lambda c: _post(url, c), present), strict=True))


@pytest.fixture(scope="module")
def fast_answers(service_url) -> dict[Path, dict]:
    return _answers(service_url, [c for c in CASES if c.parent.name not in SLOW])


@pytest.fixture(scope="module")
def slow_answers(service_url) -> dict[Path, dict]:
    return _answers(service_url, [c for c in CASES if c.parent.name in SLOW])


def _check(answers: dict[Path, dict], case: Path) -> None:
    require(case in answers, f"{case.parent.name} is not installed on this host (scripts/setup.sh installs it)")
    expect = json.loads((case / "expect.json").read_text())
    got = answers[case]
    assert got["status"] == expect["status"], got
    for step in ("compile_result", "run_result"):
        if step in expect:
            want = expect[step]
            have = got[step] and {k: got[step][k] for k in ("status", "return_code")}
            assert have == want, (step, got)
    assert expect.get("stdout_has", "") in (got["run_result"] or {}).get("stdout", ""), got


@pytest.mark.parametrize("case", [c for c in CASES if c.parent.name not in SLOW],
                         ids=lambda c: f"{c.parent.name}/{c.name}")
def test_runner_golden(fast_answers, case):
    _check(fast_answers, case)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.parent.name in SLOW],
                         ids=lambda c: f"{c.parent.name}/{c.name}")
def test_runner_golden_compiled(slow_answers, case):
    _check(slow_answers, case)


def test_every_test_runner_has_golden_cases():
    assert {c.parent.name for c in CASES} == {lang.name for lang in languages.TEST_RUNNERS}
    for lang in languages.TEST_RUNNERS:
        have = {c.name for c in CASES if c.parent.name == lang.name}
        assert {"pass", "fail"} <= have and ({"compile_error"} <= have) == (lang.compile_argv is not None), have


def test_a_runner_without_its_library_is_not_offered(monkeypatch):
    """No testify: go_test is not offered (a 422 naming it), never a compile error of the program."""
    monkeypatch.setattr(go_test, "_TESTIFY", "/nonexistent/testify")
    assert not go_test.GoTest.available()
    with pytest.raises(UnknownLanguage, match="go_test"):
        languages.resolve("go_test", {})


def test_jest_is_named_with_its_reason(service_url):
    body = {"language": "jest", "code": "test('x', () => {});"}
    resp = httpx.post(service_url + "/run_code", json=body, timeout=60)
    assert resp.status_code == 422 and "jest" in resp.json()["detail"], resp.text


def test_the_judge_does_not_take_a_test_runner(service_url):
    """The judge brings its own tests: a test file is refused (an error, never a verdict)."""
    sub = {"language": "pytest", "code": "def test_x():\n    pass\n",
           "tests": {"mode": "stdio", "cases": [{"input": "", "output": ""}]}}
    (result,) = httpx.post(service_url + "/v1/judge", json={"submissions": [sub]}, timeout=60).json()["results"]
    assert result["verdict"] is None and result["error"]["type"] == "BadRequest", result
    assert "runs the program's own tests" in result["error"]["message"]


MULTIPLE_GO_TESTS = """func TestAdd(t *testing.T) {
  candidate := add
	type test struct {
		actual   interface{}
		expected interface{}
	}
   tests := []test{
     { actual: candidate(2, 3), expected: 5 },
     { actual: candidate(-4, 4), expected: 0 },
   }

	for i, tc := range tests {
		t.Run(fmt.Sprintf("test num % d", i), func(t *testing.T) {
			if fmt.Sprintf("%v", tc.actual) != fmt.Sprintf("%v", tc.expected) {
				t.Errorf("expected '%s', got '%s'", tc.expected, tc.actual)
			}
		})
	}
}
"""
MULTIPLE_GO = 'package add_test\n\nimport (\n    "testing"\n    "fmt"\n)\n\nfunc add(x int, y int) int {\n    return x OP y\n}\n'


def test_multiple_go_program_is_scaleboxs():
    """One package clause on top, the imports merged after it (ScaleBox's postprocess_full_code)."""
    program = go_test_program(MULTIPLE_GO.replace("OP", "+"), MULTIPLE_GO_TESTS)
    assert program.startswith('package add_test\n\nimport "fmt"\nimport "testing"\n\n')
    assert program.count("package ") == 1 and program.count("import") == 2 and program.endswith(MULTIPLE_GO_TESTS)


@pytest.mark.slow
def test_multiple_go_runs_under_go_test_on_scaleboxs_assert_route(service_url):
    """MultiPL-E's Go tests (``func TestX(t *testing.T)``) run as ScaleBox runs them, under go_test."""
    require("go_test" in httpx.get(service_url + "/v1/capabilities", timeout=60).json()["languages"],
            "go_test is not installed on this host (scripts/setup.sh installs go)")
    right, wrong = (f"```go\n{MULTIPLE_GO.replace('OP', op)}```" for op in "+-")
    assert accepted(service_url, "go", right, MULTIPLE_GO_TESTS, ["\n}"]) is True
    assert accepted(service_url, "go", wrong, MULTIPLE_GO_TESTS, ["\n}"]) is False
