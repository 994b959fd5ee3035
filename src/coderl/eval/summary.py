"""The evaluation summary, LiveCodeBench's way: pass@k (unbiased, k <= n) over problems, overall and
by difficulty and platform, with everything needed to read the number (release and date window,
sampling, backend) and everything that did not go into it (sandbox errors, extraction failures,
truncated answers) counted in the open."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from coderl.eval.passk import mean_pass_at_k

KS = (1, 2, 4, 8, 16, 32, 64, 128)


def summarise(problems: list[dict[str, Any]], records: list[dict[str, Any]], n: int,
              settings: dict[str, Any]) -> dict[str, Any]:
    """``records``: the latest record per (question_id, sample) for samples < n of these problems."""
    by_problem: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        by_problem[rec["question_id"]].append(rec)
    groups: dict[str, dict[str, list[tuple[int, int]]]] = {"difficulty": defaultdict(list), "platform": defaultdict(list)}
    overall: list[tuple[int, int]] = []
    for p in problems:
        scored = [r for r in by_problem.get(str(p["question_id"]), []) if r["verdict"] != "sandbox_error"]
        if not scored:
            continue
        count = (len(scored), sum(r["verdict"] == "accepted" for r in scored))
        overall.append(count)
        groups["difficulty"][p.get("difficulty") or "unknown"].append(count)
        groups["platform"][p.get("platform") or "unknown"].append(count)
    ks = [k for k in KS if k <= n]

    def table(counts: list[tuple[int, int]]) -> dict[str, Any]:
        return {"problems": len(counts), **{f"pass@{k}": _pct(mean_pass_at_k(counts, k)) for k in ks}}

    verdicts = Counter(r["verdict"] for r in records)
    return {
        "benchmark": "livecodebench", **settings, "problems": len(problems), "samples_expected": len(problems) * n,
        "samples_scored": sum(scored for scored, _ in overall),
        "overall": table(overall),
        "by_difficulty": {k: table(v) for k, v in sorted(groups["difficulty"].items(), key=_difficulty_order)},
        "by_platform": {k: table(v) for k, v in sorted(groups["platform"].items())},
        "verdicts": dict(verdicts.most_common()),
        "extraction_failures": verdicts["no_code"], "sandbox_errors_excluded": verdicts["sandbox_error"],
        "truncated": sum(r.get("finish_reason") == "length" for r in records),
        "missing": len(problems) * n - len(records),
        "policy": "sandbox errors: retried, then excluded from pass@k and judged again by the next run; "
                  "no code block: wrong answer",
        "judge": "coderl (LiveCodeBench-exact comparison; deliberate deviations in docs/judge.md)",
    }


def _difficulty_order(item: tuple[str, Any]) -> tuple[int, str]:
    order = {"easy": 0, "medium": 1, "hard": 2}
    return order.get(item[0], 3), item[0]


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def markdown(summary: dict[str, Any]) -> str:
    ks = [k for k in summary["overall"] if k.startswith("pass@")]
    window = (f"{summary['release']}, {summary.get('start_date')}..{summary.get('end_date')}" if summary.get("release")
              else "unfiltered rows: release and date window unknown")
    s = summary["sampling"]
    setup = (f"{summary['problems']} problems, {summary['samples_scored']}/{summary['samples_expected']} samples scored; "
             f"n={s['n']}"
             + (f", temperature {s['temperature']}, top_p {s['top_p']}" if "temperature" in s else "")
             + (f", top_k {s['top_k']}" if s.get("top_k") else "")
             + (f", max_tokens {s['max_tokens']}" if "max_tokens" in s else "")
             + (f", thinking {'on' if s['enable_thinking'] else 'off'}" if "enable_thinking" in s else "")
             + f"; backend {summary['backend']}" + (f" ({summary['model']})" if summary.get("model") else "")
             + (f"; with code_interpreter, at most {summary['max_turns']} turns" if summary.get("tools") else ""))
    lines = [f"# LiveCodeBench ({window})", "", setup, "",
             "| group | problems | " + " | ".join(ks) + " |", "|---|---|" + "---|" * len(ks)]

    def row(name: str, t: dict[str, Any]) -> str:
        return f"| {name} | {t['problems']} | " + " | ".join("-" if t[k] is None else f"{t[k]:.2f}" for k in ks) + " |"

    lines.append(row("**overall**", summary["overall"]))
    lines += [row(k, v) for k, v in summary["by_difficulty"].items()]
    lines += [row(k, v) for k, v in summary["by_platform"].items()]
    verdicts = ", ".join(f"{k} {v}" for k, v in summary["verdicts"].items())
    lines += ["", f"Verdicts: {verdicts}.",
              f"No code block (scored wrong): {summary['extraction_failures']}; cut at max_tokens: {summary['truncated']}; "
              f"sandbox errors (excluded, judged again on the next run): {summary['sandbox_errors_excluded']}"
              + (f"; not yet generated: {summary['missing']}" if summary["missing"] else "") + ".", ""]
    return "\n".join(lines)
