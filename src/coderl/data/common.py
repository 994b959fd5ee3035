"""What every builder shares: reading a source (local file/dir or hub name), a report of rows read,
kept and dropped by reason (with an example of each), and deterministic parquet/JSONL output."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from coderl.errors import BadRequest


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


def read_rows(source: str | Path, *, split: str = "train", limit: int | None = None) -> Iterator[dict[str, Any]]:
    """Rows from a local .jsonl/.json/.parquet file or a directory of them, or a hub dataset name."""
    path = Path(source)
    if path.exists():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".jsonl", ".json", ".parquet")) if path.is_dir() else [path]
        if not files:
            raise BadRequest(f"{source}: no .jsonl, .json or .parquet files in it")
        yield from _limited((row for f in files for row in _read_file(f)), limit)
        return
    if "/" not in str(source) or str(source).startswith((".", "/")):
        raise BadRequest(f"{source}: no such file or directory (and not a hub dataset name like org/name)")
    yield from _limited(_read_hub(str(source), split), limit)


def _limited(rows: Iterable[dict[str, Any]], limit: int | None) -> Iterator[dict[str, Any]]:
    for i, row in enumerate(rows):
        if limit is not None and i >= limit:
            return
        yield row


def _read_file(path: Path) -> Iterator[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(batch_size=512):
            yield from batch.to_pylist()
    elif path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError:
                        yield {"__malformed__": f"{path.name}:{n}: not JSON"}
    else:
        data = json.loads(path.read_text(encoding="utf-8"))
        yield from (data if isinstance(data, list) else [data])


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


def progress(rows: Iterable[dict[str, Any]], desc: str) -> Iterator[dict[str, Any]]:
    return tqdm(rows, desc=desc, unit=" rows", disable=os.environ.get("CODERL_NO_PROGRESS") == "1")  # type: ignore[return-value]


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
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise Drop(f"{what} does not parse", value[:100]) from None
