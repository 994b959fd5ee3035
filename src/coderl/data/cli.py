"""`coderl data ...`: build the RL, SFT and evaluation sets (each prints a read/kept/dropped report)."""

from __future__ import annotations

import argparse

from coderl.argtypes import fraction, positive_float, positive_int

EVAL_KINDS = ("humaneval", "mbpp", "code_contests", "taco", "apps")


def register(subparsers: argparse._SubParsersAction) -> None:
    data = subparsers.add_parser("data", help="build datasets (RL, tool-call SFT, LiveCodeBench, other eval sets)")
    sub = data.add_subparsers(dest="data_command", metavar="BUILDER")
    sub.required = True

    def common(p: argparse.ArgumentParser, source_required: bool = True) -> None:
        p.add_argument("--source", required=source_required,
                       help="local .parquet/.jsonl/.json(.gz) file or directory, a datasets save_to_disk "
                            "directory, or a hub name (org/name; needs network)")
        p.add_argument("--out", required=True, help="output directory")
        p.add_argument("--limit", type=positive_int, help="read at most this many rows (quick runs)")

    rl = sub.add_parser("rl", help="PrimeIntellect/verifiable-coding-problems -> verl RL parquet")
    common(rl)
    rl.add_argument("--val-fraction", type=fraction, default=0.01, help="in [0, 1)")
    rl.add_argument("--seed", type=int, default=42)
    rl.add_argument("--min-tests", type=positive_int, default=5)
    rl.add_argument("--decontaminate", action="append", default=[], metavar="PROBLEMS",
                    help="evaluation problems to keep out (problems.jsonl from `coderl data lcb`, or any file "
                         "with question_content/prompt); repeatable")
    rl.set_defaults(func=_rl)
    sft = sub.add_parser("sft", help="Gen-Verse/Open-AgentRL-SFT-3K -> verl multi-turn SFT parquet")
    common(sft)
    sft.add_argument("--tokenizer", help="tokenizer dir whose chat template every row must render with "
                                         "(default: the offline Qwen tokenizer)")
    sft.add_argument("--val-fraction", type=fraction, default=0.02, help="in [0, 1)")
    sft.add_argument("--seed", type=int, default=42)
    sft.set_defaults(func=_sft)
    lcb = sub.add_parser("lcb", help="LiveCodeBench code_generation_lite -> evaluation set")
    common(lcb)
    lcb.add_argument("--release", default="release_v5", help="release_v1..v6, release_latest, vN or vA_vB")
    lcb.add_argument("--start-date", default="2024-08-01", help="inclusive, YYYY-MM-DD, or `all` (no lower bound)")
    lcb.add_argument("--end-date", default="2025-02-01", help="inclusive, YYYY-MM-DD, or `all` (no upper bound)")
    lcb.add_argument("--no-date-filter", action="store_true",
                     help="keep every row, those without a contest_date too (= --start-date all --end-date all)")
    lcb.add_argument("--prompt-style", choices=("generic", "codeqwen"), default="generic",
                     help="LiveCodeBench's official prompt: chat-API style, or CodeQwenInstruct (Qwen models)")
    lcb.set_defaults(func=_lcb)
    swe = sub.add_parser("swe", help="SWE-bench / SWE-Gym rows (or coderl's own tasks) -> agent-loop parquet")
    common(swe)
    swe.add_argument("--repos", help="directory of git mirrors (owner__name) or tarballs (owner__name.tar.gz); "
                                     "not needed with --source builtin")
    swe.add_argument("--cache", help="where snapshots and environments go (default: $CODERL_CACHE or ~/.cache/coderl)")
    swe.add_argument("--build-envs", action="store_true", help="build every task's Python environment now")
    swe.add_argument("--find-links", help="wheel directory for the environments (pip --no-index)")
    swe.add_argument("--image", metavar="TEMPLATE",
                     help="each task's environment is an image (no --repos): a reference with {instance_id} or "
                          "{sweb_id} (SWE-bench's naming), e.g. docker.io/swebench/sweb.eval.x86_64.{sweb_id}:latest; "
                          "OUT/images.txt lists them for `coderl images pull`")
    swe.add_argument("--image-python", default="python3",
                     help="with --image: the interpreter with the task's pytest (SWE-bench's images: "
                          "/opt/miniconda3/envs/testbed/bin/python)")
    swe.add_argument("--workdir", default="/testbed", help="with --image: where the image holds the repository")
    swe.add_argument("--image-user", default="", help="with --image: who episodes and grading run as (default: the "
                                                      "image's User)")
    swe.add_argument("--val-fraction", type=fraction, default=0.0, help="in [0, 1)")
    swe.add_argument("--seed", type=int, default=42)
    swe.add_argument("--split", help="with --source builtin: train or heldout, that split's tasks only "
                                     "(each task.json's `split`; default: all)")
    swe.set_defaults(func=_swe)
    from coderl.data.harbor import add_parser as harbor_parser

    harbor_parser(sub)
    bench = sub.add_parser("swe-bench", help="upstream SWE-bench rows + local mirrors or bundles -> task rows "
                                             "for `coderl eval swe --tasks` (each row served or skipped with why)")
    bench.add_argument("--rows", required=True, help="SWE-bench rows: .json (a list) or .jsonl; list fields as JSON "
                                                     "strings or lists")
    bench.add_argument("--repos", required=True, help="directory of <owner>__<name> mirrors or <owner>__<name>.bundle "
                                                      "bundles (tag = instance id)")
    bench.add_argument("--out", required=True, help="output directory (tasks.jsonl, report.json)")
    bench.add_argument("--instances", nargs="+", metavar="ID", help="only these instance ids")
    bench.add_argument("--cache", help="where snapshots and environments go (default: $CODERL_CACHE or ~/.cache/coderl)")
    bench.add_argument("--build-envs", action="store_true", help="build each (repo, version) environment now")
    bench.set_defaults(func=_swe_bench)
    smith = sub.add_parser("swe-smith", help="SWE-smith task mirrors (a branch per bug) -> task rows for "
                                             "`coderl eval swe-gate` and training, each branch kept or dropped with why")
    smith.add_argument("--mirrors", required=True, help="directory of <owner>__<name>.<sha8> mirrors (.bundle or git "
                                                        "directory) and their repos.json")
    smith.add_argument("--out", required=True, help="output directory (tasks.jsonl, report.json, repos/ with the "
                                                    "starting commits: the gate's and training's --repos)")
    smith.add_argument("--cache", help="where snapshots and environments go (default: $CODERL_CACHE or ~/.cache/coderl)")
    smith.add_argument("--per-repo", type=positive_int, help="a sample of N branches per mirror (by --seed)")
    smith.add_argument("--seed", type=int, default=0)
    smith.add_argument("--instances", nargs="+", metavar="ID", help="only these branches")
    smith.add_argument("--statements", help="problem statements, JSONL of {instance_id, problem_statement} "
                                            "(default: written from the failing tests)")
    smith.add_argument("--build-envs", action="store_true", help="build each repository's environment now (the "
                                                                 "tests must run to find FAIL_TO_PASS)")
    smith.add_argument("--specs", help="SWE-smith's environments, repos.json shaped (default: MIRRORS/repos.json)")
    smith.add_argument("--jobs", type=positive_int, default=2, help="test runs at once (default 2)")
    smith.add_argument("--swe-bench-rows", help="SWE-bench rows to check overlap with (instances, nearby commits)")
    smith.add_argument("--drop-overlaps", action="store_true", help="drop rows that overlap SWE-bench")
    smith.set_defaults(func=_swe_smith)
    synth = sub.add_parser("synth", help="procedural bugs (AST operators) in a repository at a commit -> task rows, "
                                         "kept when they break 1..--max-failing tests, one per failing-test signature")
    synth.add_argument("--repo", required=True, help="the repository: a git directory or bundle")
    synth.add_argument("--commit", required=True, help="the clean commit (sha or ref) the bugs go into")
    synth.add_argument("--out", required=True, help="output directory (tasks.jsonl, report.json, repos/)")
    synth.add_argument("--max-tasks", type=positive_int, default=30, help="stop once this many are kept (default 30)")
    synth.add_argument("--max-tries", type=positive_int, help="bugs tried at most (default 8 x --max-tasks)")
    synth.add_argument("--max-failing", type=positive_int, default=20, help="a bug breaking more tests is dropped "
                                                                           "(default 20)")
    synth.add_argument("--seed", type=int, default=0)
    synth.add_argument("--name", help="the repository's owner/name (default: from --specs or the directory's name)")
    synth.add_argument("--specs", help="its environment, repos.json shaped (default: repos.json beside --repo)")
    synth.add_argument("--statements", help="problem statements, JSONL by instance id (default: from the failing tests)")
    synth.add_argument("--cache", help="where snapshots and environments go (default: $CODERL_CACHE or ~/.cache/coderl)")
    synth.add_argument("--jobs", type=positive_int, default=2, help="test runs at once (default 2)")
    synth.add_argument("--swe-bench-rows", help="SWE-bench rows to check overlap with")
    synth.add_argument("--drop-overlaps", action="store_true", help="drop rows that overlap SWE-bench")
    synth.set_defaults(func=_synth)
    gold = sub.add_parser("swe-sft", help="gold episodes of the stock harness (mini-swe-agent) through the gateway "
                                          "-> verl multi-turn SFT parquet in the harness's own turn format",
                          description="Run the agent-loop YAML's harness in a session sandbox per task and variant, "
                                      "its model a script that applies the gold patch and submits; keep the gateway's "
                                      "record of each episode that resolves the task as one `messages` row. "
                                      "report.json holds the episodes' token counts.")
    gold.add_argument("--tasks", required=True, help="builtin (coderl's own set) or a tasks.jsonl with --repos")
    gold.add_argument("--repos", help="directory of git mirrors or tarballs (not needed with --tasks builtin)")
    gold.add_argument("--split", help="with --tasks builtin: train (the default; heldout is refused: it is for "
                                      "evaluation only)")
    gold.add_argument("--out", required=True, help="output directory (train.parquet, validation.parquet, report.json)")
    gold.add_argument("--variants", type=positive_int, default=4, help="episodes per task, each with other "
                                                                      "commands or wording (default 4)")
    gold.add_argument("--tokenizer", help="the model's tokenizer dir: its chat template renders the turns "
                                          "(default: the offline Qwen tokenizer)")
    gold.add_argument("--agent-loops", help="agent-loop YAML whose coderl_gateway_agent harness is recorded "
                                            "(default: tool_config/agent_loop.yaml, the one RL runs)")
    gold.add_argument("--cache", help="snapshots and environments (default: $CODERL_CACHE or ~/.cache/coderl)")
    gold.add_argument("--find-links", help="wheel directory for the task environments (pip --no-index)")
    gold.add_argument("--val-fraction", type=fraction, default=0.1, help="in [0, 1)")
    gold.add_argument("--seed", type=int, default=42)
    gold.add_argument("--concurrency", type=positive_int, default=2, help="episodes at once (default 2)")
    gold.add_argument("--timeout", type=positive_float, default=300.0, help="seconds per episode (default 300)")
    gold.add_argument("--limit", type=positive_int, help="the first N tasks only")
    gold.set_defaults(func=_swe_sft)
    for kind in EVAL_KINDS:
        p = sub.add_parser(kind, help=f"{kind} -> RL parquet (test.parquet) or eval problems (problems.jsonl)")
        common(p, source_required=kind != "humaneval")
        p.add_argument("--format", choices=("rl", "eval"), default="rl")
        p.add_argument("--split", default="test", help="split to read from a hub name or a DatasetDict directory")
        p.set_defaults(func=_evalset, kind=kind)


def _rl(args: argparse.Namespace) -> int:
    from coderl.data.rl import build_rl, evaluation_statements

    statements = [s for f in args.decontaminate for s in evaluation_statements(f)]
    report = build_rl(args.source, args.out, limit=args.limit, val_fraction=args.val_fraction, seed=args.seed,
                      decontaminate=statements, min_tests=args.min_tests)
    print(report.summary())
    return 0


def _sft(args: argparse.Namespace) -> int:
    from coderl.data.sft import build_sft

    print(build_sft(args.source, args.out, tokenizer_path=args.tokenizer, limit=args.limit,
                    val_fraction=args.val_fraction, seed=args.seed).summary())
    return 0


def _swe(args: argparse.Namespace) -> int:
    from coderl.cache import default_cache_dir
    from coderl.data.swe import build_swe

    print(build_swe(args.source, args.out, repos_dir=args.repos, cache_dir=args.cache or default_cache_dir(),
                    image=args.image, image_python=args.image_python, workdir=args.workdir, image_user=args.image_user,
                    build_envs=args.build_envs, find_links=args.find_links, limit=args.limit,
                    val_fraction=args.val_fraction, seed=args.seed, split=args.split).summary())
    return 0


def _swe_bench(args: argparse.Namespace) -> int:
    from coderl.cache import default_cache_dir
    from coderl.data.swe_bench import build_swe_bench

    report = build_swe_bench(args.rows, args.repos, args.out, cache_dir=args.cache or default_cache_dir(),
                             instances=args.instances, build_envs=args.build_envs)
    print(f"swe-bench: read {report['read']}, served {report['served']}, skipped {len(report['skipped'])}")
    for iid, why in report["skipped"].items():
        print(f"  skipped {iid}: {why}")
    print(f"  wrote {report['tasks']}")
    return 0


def _swe_smith(args: argparse.Namespace) -> int:
    from coderl.cache import default_cache_dir
    from coderl.data.swe_smith import build_swe_smith

    report = build_swe_smith(args.mirrors, args.out, cache_dir=args.cache or default_cache_dir(),
                             per_repo=args.per_repo, seed=args.seed, instances=args.instances,
                             statements=args.statements, build_envs=args.build_envs, specs=args.specs, jobs=args.jobs,
                             bench_rows=args.swe_bench_rows, drop_overlaps=args.drop_overlaps)
    print_bug_report("swe-smith", report)
    return 0


def _synth(args: argparse.Namespace) -> int:
    from coderl.cache import default_cache_dir
    from coderl.data.synth import build_synth

    report = build_synth(args.repo, args.commit, args.out, cache_dir=args.cache or default_cache_dir(),
                         max_tasks=args.max_tasks, max_tries=args.max_tries, max_failing=args.max_failing,
                         seed=args.seed, name=args.name, specs=args.specs, statements=args.statements, jobs=args.jobs,
                         bench_rows=args.swe_bench_rows, drop_overlaps=args.drop_overlaps)
    print_bug_report("synth", report)
    print(f"  tried {report['tried']} of {report['candidates']} candidates; per operator: "
          + ", ".join(f"{k} {v['kept']}/{v['tried']}" for k, v in sorted(report["operators"].items())))
    return 0


def print_bug_report(what: str, report: dict) -> None:
    print(f"{what}: served {report['served']}, dropped {len(report['dropped'])} in {report['wall_s']} s")
    for name, m in report.get("mirrors", {}).items():
        layouts = ", ".join(f"{k} {v['kept']}/{v['sampled']}" for k, v in m.get("layouts", {}).items())
        print(f"  {name}: {layouts}")
    for iid, why in report["dropped"].items():
        print(f"  dropped {iid}: {why}")
    print(f"  wrote {report['tasks']} (--repos {report['repos']})")


def _swe_sft(args: argparse.Namespace) -> int:
    from coderl.cache import default_cache_dir
    from coderl.data.swe_sft import build_swe_sft

    report, tokens = build_swe_sft(args.tasks, args.out, repos=args.repos, split=args.split, variants=args.variants,
                                   tokenizer_path=args.tokenizer, agent_loops=args.agent_loops,
                                   cache_dir=args.cache or default_cache_dir(), val_fraction=args.val_fraction,
                                   seed=args.seed, concurrency=args.concurrency, timeout_s=args.timeout,
                                   limit=args.limit, find_links=args.find_links)
    print(report.summary())
    for name, v in tokens.items():
        print(f"  {name}: max {v['max']}, mean {v['mean']}, min {v['min']}")
    return 0


def _lcb(args: argparse.Namespace) -> int:
    from coderl.data.lcb import build_lcb

    dates = (None, None) if args.no_date_filter else (args.start_date, args.end_date)
    print(build_lcb(args.source, args.out, release=args.release, start_date=dates[0], end_date=dates[1],
                    prompt_style=args.prompt_style, limit=args.limit).summary())
    return 0


def _evalset(args: argparse.Namespace) -> int:
    from coderl.data.evalsets import build_evalset

    print(build_evalset(args.kind, args.source, args.out, fmt=args.format, split=args.split, limit=args.limit).summary())
    return 0
