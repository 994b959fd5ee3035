"""What every builder shares: reading a source (local file/dir, a `datasets` saved dir, or a hub
name), converting rows one by one so that bad rows are counted by reason (with an example of each)
and never crash the build, a seeded split, and deterministic parquet/JSONL output."""

from __future__ import annotations

import gzip
import json
import os
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from coderl.errors import BadRequest, InvalidTestSpec, UnsupportedProblem

_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".json", ".json.gz")


class Drop(Exception):
    """Raised by a row converter: the row is dropped for this (short, countable) reason."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclass
class BuildReport:
    name: str
    read: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)

    def drop(self, reason: str, example: str) -> None:
        self.dropped[reason] += 1
        self.examples.setdefault(reason, example[:200])

    def check_nonempty(self) -> None:
        """Zero surviving rows is an error, not an empty file a training run trips over later."""
        if self.kept == 0:
            top = ", ".join(f"{r} ({n})" for r, n in self.dropped.most_common(3)) or "no rows read"
            raise BadRequest(f"{self.name}: no rows survived the filters; top drop reasons: {top}")

    def summary(self) -> str:
        lines = [f"{self.name}: read {self.read}, kept {self.kept}, dropped {sum(self.dropped.values())}"]
        for reason, n in self.dropped.most_common():
            lines.append(f"  dropped {n:>6}  {reason}  e.g. {self.examples[reason]!r}")
        lines += [f"  wrote {o}" for o in self.outputs]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "read": self.read, "kept": self.kept, "dropped": dict(self.dropped),
                "examples": self.examples, "outputs": self.outputs}

    def save(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "report.json").write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True))


def convert(report: BuildReport, rows: Iterable[Any], fn: Callable[[dict[str, Any]], Any], desc: str) -> Iterator[Any]:
    """Yield fn(row) for each row; a row fn cannot use (Drop, unreadable or unsupported tests, a
    row that is not an object, a field of the wrong type or shape) is counted in the report
    instead, so one bad row never ends a build."""
    for row in progress(rows, desc):
        report.read += 1
        try:
            if not isinstance(row, dict):
                raise Drop("row is not an object", repr(row)[:100])
            if "__malformed__" in row:
                raise Drop("malformed line", row["__malformed__"])
            yield fn(row)
        except Drop as drop:
            report.drop(drop.reason, drop.detail)
        except UnsupportedProblem as exc:
            report.drop("unsupported problem (interactive)", str(exc))
        except InvalidTestSpec as exc:
            report.drop("tests unreadable", str(exc))
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
            # a field of an unexpected type or shape the builder did not foresee: this row's
            # problem, counted with an example, never the end of the build
            report.drop(f"malformed row ({type(exc).__name__})", str(exc))


def read_rows(source: str | Path, *, split: str = "train", limit: int | None = None) -> Iterator[Any]:
    """Rows from a local .parquet/.jsonl/.json(.gz) file, a directory of them, a `datasets`
    save_to_disk directory, or a hub dataset name (org/name)."""
    path = Path(source)
    if path.exists():
        if path.is_dir() and ((path / "state.json").exists() or (path / "dataset_dict.json").exists()):
            rows: Iterable[Any] = _read_saved(path, split)
        else:
            rows = (row for f in _data_files(path) for row in _read_file(f))
        yield from _limited(rows, limit)
        return
    if str(source).count("/") != 1 or str(source).startswith((".", "/", "~")):
        raise BadRequest(f"{source}: no such file or directory (and not a hub dataset name like org/name)")
    yield from _limited(_read_hub(str(source), split), limit)


def _data_files(path: Path) -> list[Path]:
    """A file, or a directory's data files of the first kind it has (parquet before jsonl before
    json), so the README/metadata JSON a hub snapshot carries is never read as rows."""
    if path.is_file():
        return [path]
    visible = [p for p in sorted(path.rglob("*")) if p.is_file()
               and not any(part.startswith(".") for part in p.relative_to(path).parts)]
    for suffix in _SUFFIXES:
        files = [p for p in visible if p.name.endswith(suffix)]
        if files:
            return files
    raise BadRequest(f"{path}: no .parquet, .jsonl or .json files in it")


def _limited(rows: Iterable[Any], limit: int | None) -> Iterator[Any]:
    for i, row in enumerate(rows):
        if limit is not None and i >= limit:
            return
        yield row


def _read_file(path: Path) -> Iterator[Any]:
    if path.name.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            batches = pq.ParquetFile(path).iter_batches(batch_size=512)
            for batch in batches:
                yield from batch.to_pylist()
        except (pa.ArrowException, OSError) as exc:
            raise BadRequest(f"{path}: not a readable parquet file ({exc})") from None
        return
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            if ".jsonl" in path.name:
                for n, line in enumerate(fh, 1):
                    if line.strip():
                        try:
                            yield json.loads(line)
                        except json.JSONDecodeError:
                            yield {"__malformed__": f"{path.name}:{n}: not JSON"}
                return
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise BadRequest(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(f"{path}: not JSON ({exc})") from None
    yield from (data if isinstance(data, list) else [data])


def _read_saved(path: Path, split: str) -> Iterator[dict[str, Any]]:
    """A `datasets` save_to_disk directory (one Dataset, or a DatasetDict: the split is picked)."""
    import datasets

    ds = datasets.load_from_disk(str(path))
    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise BadRequest(f"{path}: no split {split!r} (has {', '.join(ds)})")
        ds = ds[split]
    yield from ds


def _read_hub(name: str, split: str) -> Iterator[dict[str, Any]]:
    """Hugging Face hub (needs network; the appliance's own machines have none, so pass a path)."""
    try:
        import datasets
    except ImportError as exc:
        raise BadRequest("reading from the hub needs the `datasets` package; or pass a local path") from exc
    try:
        yield from datasets.load_dataset(name, split=split, streaming=True)
    except Exception as exc:  # noqa: BLE001 - network, auth, missing dataset: one clear line
        raise BadRequest(f"cannot load {name!r} from the hub ({type(exc).__name__}); download it and pass the path") from None


def progress(rows: Iterable[Any], desc: str) -> Iterator[Any]:
    """A progress bar over ``rows``, drawn only once the first row is read, so a source that
    cannot be opened fails with its one-line error and no stray empty bar before it."""
    rows = iter(rows)
    first = next(rows, _NONE)
    if first is _NONE:
        return
    bar = tqdm(desc=desc, unit=" rows", disable=os.environ.get("CODERL_NO_PROGRESS") == "1")
    with bar:
        bar.update(1)
        yield first
        for row in rows:
            bar.update(1)
            yield row


_NONE = object()


def seeded_split(rows: list[dict[str, Any]], fraction: float, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, validation): a seeded shuffle, then at least one validation row when there are two
    or more rows; the same input and seed always give the same split."""
    if not 0 <= fraction < 1:
        raise BadRequest(f"validation fraction must be in [0, 1), got {fraction}")
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_val = max(1, round(len(rows) * fraction)) if fraction > 0 and len(rows) > 1 else 0
    val = set(order[:n_val])
    return [r for i, r in enumerate(rows) if i not in val], [r for i, r in enumerate(rows) if i in val]


def write_parquet(rows: list[dict[str, Any]], path: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path, compression="zstd")
    return str(path)


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    return str(path)


def normalise_statement(text: str) -> str:
    """For duplicate and contamination checks: case, punctuation and spacing do not matter."""
    return " ".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


def parse_json_field(value: Any, what: str) -> Any:
    """Hub rows keep nested data as JSON (or Python-literal) strings; local copies may not."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        import ast

        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            raise Drop(f"{what} does not parse", value[:100]) from None
