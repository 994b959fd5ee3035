"""The viewer page in a real browser (Debian's chromium through Playwright): it loads without a
console error, its plots are drawn, each filter changes the visible rows to exactly the matching
samples, a sample page shows the conversation, tool runs and per-test verdicts, and bad run
directories still give a page that lists what was skipped. Screenshots go to the test's tmp dir
(CODERL_VIEW_SCREENSHOTS=DIR saves them there instead)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coderl.cli import main
from coderl.view.reader import read_run
from tests.helpers.browser import chromium, open_page
from tests.helpers.view_runs import write_code_run

SAMPLES = 240


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("CODERL_VIEW_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def code_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    run = tmp_path_factory.mktemp("run")
    write_code_run(run / "records", SAMPLES, group_size=4, steps=6)
    assert main(["view", str(run)]) == 0
    return run / "view.html", read_run(run).samples


def expected(samples: list[dict], keep) -> str:
    return f"{sum(1 for s in samples if keep(s))} of {len(samples)} samples"


def set_filter(page, selector: str, value: str, kind: str = "fill") -> None:
    if kind == "select":
        page.select_option(selector, value)
    else:
        page.fill(selector, value)


def visible_rows(page) -> list[int]:
    return [int(x) for x in page.eval_on_selector_all("#table .row", "rows => rows.map(r => r.dataset.row)")]


def test_overview_and_filters(browser, code_run, tmp_path):
    from playwright.sync_api import expect

    html, samples = code_run
    errors: list[str] = []
    page = open_page(browser, str(html), errors)
    expect(page.locator("#summary")).to_have_text(f"{SAMPLES} samples, 0 skipped")
    expect(page.locator("#overview .plot")).to_have_count(6)  # the reward-hack signals' plot among them
    assert page.locator("#overview .plot svg circle").count() >= 6  # a point per step
    ended = sum(s["hack"]["ended_early"] for s in samples)
    assert ended > 0 and sum(int(t) for t in page.locator("#overview td.hack-ended_early").all_inner_texts()) == ended
    page.screenshot(path=str(shots(tmp_path) / "view_overview.png"), full_page=True)

    page.click("#nav-samples")
    count = page.locator("#count")
    expect(count).to_have_text(f"{SAMPLES} of {SAMPLES} samples")
    cases = [("#f-verdict", "accepted", "select", lambda s: s["verdict"] == "accepted"),
             ("#f-step", "3", "select", lambda s: s["step"] == 3),
             ("#f-rmin", "1", "fill", lambda s: s["reward"] >= 1),
             ("#f-group", "train/7", "fill", lambda s: "train/7" in s["group"]),
             ("#f-tools", "3", "fill", lambda s: s["tool_calls"] >= 3),
             ("#f-sberr", "1", "select", lambda s: s["sandbox_error"] == 1),
             ("#f-text", "# try 2", "fill", lambda s: any("# try 2" in r["code"] for r in s["tool_runs"]))]
    for selector, value, kind, keep in cases:
        set_filter(page, selector, value, kind)
        want = expected(samples, keep)
        assert want != f"{SAMPLES} of {SAMPLES} samples", f"filter {selector}={value} selects everything"
        expect(count).to_have_text(want)
        rows = visible_rows(page)
        assert rows and all(keep(samples[i]) for i in rows), (selector, value, rows[:10])
        set_filter(page, selector, "", kind)
        expect(count).to_have_text(f"{SAMPLES} of {SAMPLES} samples")
    # filters combine; the table renders only the rows in view (virtualised)
    set_filter(page, "#f-verdict", "wrong_answer", "select")
    set_filter(page, "#f-tools", "1")
    expect(count).to_have_text(expected(samples, lambda s: s["verdict"] == "wrong_answer" and s["tool_calls"] >= 1))
    set_filter(page, "#f-verdict", "", "select")
    set_filter(page, "#f-tools", "")
    expect(count).to_have_text(f"{SAMPLES} of {SAMPLES} samples")
    assert len(visible_rows(page)) < 80
    assert errors == []


def test_sample_page_shows_the_conversation_tools_and_tests(browser, code_run, tmp_path):
    from playwright.sync_api import expect

    html, samples = code_run
    i = next(k for k, s in enumerate(samples) if s["tool_calls"] >= 2 and s["verdict"] == "wrong_answer")
    errors: list[str] = []
    page = open_page(browser, str(html), errors)
    page.click("#nav-samples")
    page.fill("#f-group", samples[i]["group"])
    page.click(f"#table .row[data-row='{i}']")
    expect(page.locator("#sample h2")).to_contain_text(f"Sample {i}")
    expect(page.locator("#sample .msg.tool")).to_have_count(samples[i]["tool_calls"])
    expect(page.locator("#sample .msg.assistant .call")).to_have_count(samples[i]["tool_calls"])
    expect(page.locator("#sample table.tests tr")).to_have_count(1 + len(samples[i]["judge"]["tests"]))
    assert samples[i]["tool_runs"][0]["code"] in page.locator("#sample").inner_text()
    page.screenshot(path=str(shots(tmp_path) / "view_sample_code.png"), full_page=True)
    assert errors == []


@pytest.mark.parametrize("layout", ["empty", "broken", "reward_samples_only"])
def test_bad_run_dirs_give_a_page_listing_what_was_skipped(browser, tmp_path, layout):
    from playwright.sync_api import expect

    run = tmp_path / "run"
    run.mkdir()
    if layout == "broken":
        write_code_run(run / "records", 8, steps=2)
        (run / "records" / "2.jsonl").open("a").write('{"kind": "code", "rew')
        (run / "records" / "README").write_text("not records")
        (run / "records" / "9.jsonl").write_bytes(b"\xff\xfe\x00garbage\n")
    elif layout == "reward_samples_only":
        (run / "reward_samples").mkdir()
        (run / "reward_samples" / "1.jsonl").write_text('{"score": 1.0, "verdict": "accepted", "input": "a/train/0"}\n')
    assert main(["view", str(run)]) == 0
    errors: list[str] = []
    page = open_page(browser, str(run / "view.html"), errors)
    readable = len(read_run(run).samples)
    skipped = len(read_run(run).skipped)
    expect(page.locator("#summary")).to_have_text(f"{readable} samples, {skipped} skipped")
    expect(page.locator("#skipped-list li")).to_have_count(skipped)
    if readable:
        page.click("#nav-samples")
        expect(page.locator("#count")).to_have_text(f"{readable} of {readable} samples")
        page.click("#table .row[data-row='0']")
        expect(page.locator("#sample h2")).to_contain_text("Sample 0")
    else:
        expect(page.locator("#overview .empty")).to_contain_text("No readable samples")
    assert errors == []
