"""How fast `coderl view` builds and the page opens for a big run: N code RL samples (default
10,000, written by the real record writer, tests/helpers/view_runs.py), the page built by
`coderl view`, then opened in Debian's chromium (headless, through Playwright) from file://.

Reports: page bytes and bytes per sample; build time; open time (navigation until the overview
and the table are ready); a filter's time (select a verdict until the row count updates); a
scroll to the table's end; opening a sample page. Issue 27's target: open in under 3 s.

    python benchmarks/bench_view.py [--samples 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.helpers: the synthetic run and the browser launch the tests use

from tests.helpers.browser import ARGS, CHROMIUM, missing  # noqa: E402
from tests.helpers.view_runs import write_code_run  # noqa: E402

from coderl.cli import main as coderl  # noqa: E402


def timed(page, action, until: str) -> float:
    started = time.perf_counter()
    action()
    page.wait_for_function(until, timeout=60_000)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    why = missing()
    if why:
        sys.exit(f"bench_view: {why}")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        started = time.perf_counter()
        write_code_run(run / "records", args.samples, group_size=8, steps=50)
        written = time.perf_counter() - started
        record_bytes = sum(p.stat().st_size for p in (run / "records").glob("*.jsonl"))
        started = time.perf_counter()
        assert coderl(["view", str(run)]) == 0
        built = time.perf_counter() - started
        page_bytes = (run / "view.html").stat().st_size
        url = f"file://{run / 'view.html'}"
        n = args.samples
        opens, filters, texts, scrolls, samples = [], [], [], [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            for _ in range(args.repeat):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                opens.append(timed(page, lambda: page.goto(url),  # noqa: B023
                                   f"document.querySelector('#count').textContent === '{n} of {n} samples'"
                                   " && document.querySelectorAll('#overview .plot').length === 5"))
                page.click("#nav-samples")
                filters.append(timed(page, lambda: page.select_option("#f-verdict", "accepted"),  # noqa: B023
                                     f"!document.querySelector('#count').textContent.startsWith('{n} of')"))
                page.select_option("#f-verdict", "")
                page.wait_for_function(f"document.querySelector('#count').textContent === '{n} of {n} samples'")
                texts.append(timed(page, lambda: page.fill("#f-text", "# try 2"),  # noqa: B023 (200 ms debounce included)
                                   f"!document.querySelector('#count').textContent.startsWith('{n} of')"))
                page.fill("#f-text", "")
                page.wait_for_function(f"document.querySelector('#count').textContent === '{n} of {n} samples'")
                scrolls.append(timed(page, lambda: page.eval_on_selector(  # noqa: B023
                    "#table", "t => t.scrollTop = t.scrollHeight"),
                    f"[...document.querySelectorAll('#table .row')].some(r => r.dataset.row === '{n - 1}')"))
                samples.append(timed(page, lambda: page.evaluate(f"location.hash = '#sample/{n - 1}'"),  # noqa: B023
                                     f"(document.querySelector('#sample h2') || {{}}).textContent?.startsWith('Sample {n - 1}')"))
                page.close()
            browser.close()

    def ms(xs: list[float]) -> str:
        return f"median {statistics.median(xs) * 1000:.0f} ms (runs: {', '.join(f'{x * 1000:.0f}' for x in xs)})"

    print(f"samples            {n}")
    print(f"records on disk    {record_bytes / 1e6:.1f} MB ({record_bytes / n:.0f} bytes/sample), written in {written:.1f} s")
    print(f"page               {page_bytes / 1e6:.1f} MB ({page_bytes / n:.0f} bytes/sample), built in {built:.2f} s")
    print(f"open (to ready)    {ms(opens)}")
    print(f"filter (verdict)   {ms(filters)}")
    print(f"filter (text)      {ms(texts)}")
    print(f"scroll to the end  {ms(scrolls)}")
    print(f"open a sample      {ms(samples)}")


if __name__ == "__main__":
    main()
