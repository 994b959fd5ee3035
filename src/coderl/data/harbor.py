"""`coderl data harbor DIR...`: Harbor task directories -> verl parquet for the gateway agent loop, and
tasks.jsonl for `coderl eval harbor`.

Each DIR is a task directory (``instruction.md``, ``tests/test.sh``, ...) or a directory of them (a
Harbor dataset). ``--build-images`` builds each task's image now (from ``environment/``, once per
content hash) and unpacks it into the cache, so an episode never waits for podman; a task whose
image cannot be built or had is a counted drop (``report.json``). Format: ``coderl.swe.harbor``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coderl.data.common import BuildReport, Drop, convert, write_jsonl, write_parquet
from coderl.errors import BadRequest, ImageUnavailable, InvalidTask
from coderl.sandbox.image_rootfs import unpack
from coderl.swe.harbor import HarborTask
from coderl.swe.task_ref import AGENT_NAME, TaskRef

DATA_SOURCE = "coderl/harbor"


def task_dirs(paths: list[str | Path]) -> list[Path]:
    """The task directories named: each path itself when it holds ``instruction.md``, else its
    subdirectories that do (sorted)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            raise BadRequest(f"{path}: no such directory")
        if (path / "instruction.md").is_file():
            found.append(path.resolve())
            continue
        inner = sorted(p.resolve() for p in path.iterdir() if (p / "instruction.md").is_file())
        if not inner:
            raise BadRequest(f"{path}: neither a Harbor task (instruction.md) nor a directory of tasks")
        found.extend(inner)
    return found


def harbor_row(task: HarborTask, image: str, cache_dir: Path) -> dict[str, Any]:
    """One verl row: the instruction as the prompt; ``extra_info`` names the task directory and the
    image (the agent loop opens the episode on it, the grader verifies from it)."""
    return {
        "data_source": DATA_SOURCE,
        "agent_name": AGENT_NAME,
        "prompt": [{"role": "user", "content": task.instruction.strip()}],
        "ability": "harbor",
        "reward_model": {"style": "rule", "ground_truth": task.name},
        "extra_info": TaskRef.of_harbor(task, image=image, cache_dir=cache_dir).to_extra_info(),
    }


def build_harbor(paths: list[str | Path], out: str | Path, *, cache_dir: str | Path,
                 build_images: bool = False) -> BuildReport:
    """Write train.parquet, tasks.jsonl (one ``HarborTask.to_row`` per task) and report.json under ``out``."""
    out, cache = Path(out), Path(cache_dir).resolve()
    report = BuildReport("harbor")

    def one(row: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            task = HarborTask.from_dir(row["task_dir"])
        except InvalidTask as exc:
            raise Drop("invalid Harbor task", str(exc)) from exc
        image = task.image
        if build_images:
            try:
                image = task.built_image()
                unpack(image, cache)
            except ImageUnavailable as exc:
                raise Drop("image cannot be built or had", f"{task.name}: {exc}") from exc
        return harbor_row(task, image, cache), {**task.to_row(), "image": image}

    pairs = list(convert(report, [{"task_dir": str(d)} for d in task_dirs(paths)], one, "harbor"))
    report.kept = len(pairs)
    report.check_nonempty()
    rows = [row for row, _ in pairs]
    for i, r in enumerate(rows):
        r["extra_info"].update(split="train", index=i)
    report.outputs.append(write_parquet(rows, out / "train.parquet"))
    report.outputs.append(write_jsonl([task for _, task in pairs], out / "tasks.jsonl"))
    report.save(out)
    return report


def add_parser(sub: Any) -> None:
    """``coderl data harbor`` (registered by `coderl.data.cli`)."""
    p = sub.add_parser("harbor", help="Harbor task directories -> verl parquet + tasks.jsonl for the agent loop and "
                                      "`coderl eval harbor`",
                       description="Read Harbor tasks (instruction.md, task.toml, environment/Dockerfile, "
                                   "tests/test.sh, solution/solve.sh); write train.parquet, tasks.jsonl and "
                                   "report.json to --out.")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="a task directory or a directory of task directories")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--cache", help="where unpacked images go (default: $CODERL_CACHE or ~/.cache/coderl)")
    p.add_argument("--build-images", action="store_true", help="build (podman) and unpack each task's image now")
    p.set_defaults(func=_main)


def _main(args: Any) -> int:
    from coderl.cache import default_cache_dir

    report = build_harbor(args.dirs, args.out, cache_dir=args.cache or default_cache_dir(),
                          build_images=args.build_images)
    print(report.summary())
    return 0
