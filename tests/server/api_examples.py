"""The copy-paste examples of docs/api.md, read back so a test can replay them against the real
service (tests/server/test_api_examples.py) and so their responses can be refreshed.

An example is a fenced ``bash`` block holding one ``curl`` command, followed by the fenced ``json``
(or ``text``) block of its response. An HTML comment right above the curl block may say
``<!-- example: status=415 vary=version,message -->``: the HTTP status the example answers with
(200 when absent) and the keys whose string values differ between machines or runs.

The check (`mismatches`) is strict about what the docs show and tolerant of what they leave out:
every documented key must be in the real response with an equal value (numbers: any number, as
timings and memory vary; strings and booleans under a ``vary`` key: any string, any boolean), lists must have the documented
length; keys the docs omit are ignored. A ``text`` response passes when each documented line is
in the real one (a metric sample: its name and labels).

Refresh the documented responses (keeping only the keys each block shows) with
``python -m tests.server.api_examples docs/api.md http://127.0.0.1:8080``.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

DOC_URL = "http://127.0.0.1:8080"
_BLOCK = re.compile(r"(?:<!-- example:(?P<opts>[^>]*)-->\n)?```bash\n(?P<curl>curl .*?)\n```\n+"
                    r"```(?P<kind>json|text)\n(?P<response>.*?)^```$", re.S | re.M)


@dataclass
class Example:
    curl: str
    kind: str  # "json" or "text"
    response: str  # as documented
    status: int = 200
    vary: set[str] = field(default_factory=set)
    span: tuple[int, int] = (0, 0)  # of the response text in the document

    @property
    def title(self) -> str:
        method, url, _headers, _body = parse_curl(self.curl)
        return f"{method} {url.removeprefix(DOC_URL)}"


def examples(doc: str) -> list[Example]:
    found = []
    for m in _BLOCK.finditer(doc):
        opts = dict(o.split("=", 1) for o in (m.group("opts") or "").split())
        found.append(Example(curl=m.group("curl").replace("\\\n", " "), kind=m.group("kind"),
                             response=m.group("response"), status=int(opts.get("status", 200)),
                             vary=set(filter(None, opts.get("vary", "").split(","))),
                             span=(m.start("response"), m.end("response"))))
    return found


def parse_curl(command: str) -> tuple[str, str, dict[str, str], bytes | None]:
    """(method, url, headers, body) of the curl options the docs use; anything else is an error,
    so an example cannot hold an option this reader would silently skip."""
    args = shlex.split(command)[1:]
    method, url, headers, body = None, None, {}, None
    while args:
        arg = args.pop(0)
        if arg in ("-s", "--silent"):
            continue
        if arg in ("-X", "--request"):
            method = args.pop(0)
        elif arg in ("-H", "--header"):
            name, _, value = args.pop(0).partition(":")
            headers[name.strip().lower()] = value.strip()
        elif arg in ("-d", "--data", "--data-raw"):
            body = args.pop(0).encode()
        elif not arg.startswith("-") and url is None:
            url = arg
        else:
            raise ValueError(f"curl option this reader does not know: {arg}")
    if url is None:
        raise ValueError(f"no URL in {command!r}")
    if body is not None:
        headers.setdefault("content-type", "application/x-www-form-urlencoded")  # what curl -d sends
    return method or ("POST" if body is not None else "GET"), url, headers, body


def replay(example: Example, base_url: str) -> httpx.Response:
    method, url, headers, body = parse_curl(example.curl)
    return httpx.request(method, base_url + url.removeprefix(DOC_URL), headers=headers, content=body,
                         timeout=120)


def mismatches(documented: Any, real: Any, vary: set[str], where: str = "") -> list[str]:
    """Where the real response differs from the documented one (empty: it matches)."""
    if isinstance(documented, dict):
        if not isinstance(real, dict):
            return [f"{where or '.'}: documented an object, got {type(real).__name__}"]
        found = []
        for key, value in documented.items():
            if key not in real:
                found.append(f"{where}.{key}: documented, missing")
            elif key in vary and type(value) is type(real[key]) and isinstance(value, (str, bool)):
                continue
            else:
                found += mismatches(value, real[key], vary, f"{where}.{key}")
        return found
    if isinstance(documented, list):
        if not isinstance(real, list) or len(real) != len(documented):
            return [f"{where}: documented a list of {len(documented)}, got {real!r:.80}"]
        return [m for i, (d, r) in enumerate(zip(documented, real, strict=True))
                for m in mismatches(d, r, vary, f"{where}[{i}]")]
    if isinstance(documented, int | float) and not isinstance(documented, bool):
        return [] if isinstance(real, int | float) and not isinstance(real, bool) else [f"{where}: {real!r} is no number"]
    return [] if documented == real else [f"{where}: documented {documented!r:.80}, got {real!r:.80}"]


def text_mismatches(documented: str, real: str) -> list[str]:
    real_lines = set(real.splitlines())
    real_samples = {line.rsplit(" ", 1)[0] for line in real_lines if line and not line.startswith("#")}
    found = []
    for line in documented.splitlines():
        if not line.strip():
            continue
        if line.startswith("#") and line not in real_lines:
            found.append(f"missing line: {line}")
        elif not line.startswith("#") and line.rsplit(" ", 1)[0] not in real_samples:
            found.append(f"missing sample: {line.rsplit(' ', 1)[0]}")
    return found


def _shown(documented: Any, real: Any) -> Any:
    """``real`` cut down to the keys the documented block shows (all of them where it shows none)."""
    if isinstance(documented, dict) and isinstance(real, dict) and documented:
        return {k: _shown(documented[k], real[k]) for k in documented if k in real}
    if isinstance(documented, list) and isinstance(real, list) and documented:
        return [_shown(documented[min(i, len(documented) - 1)], r) for i, r in enumerate(real)]
    return real


def dumps(value: Any, indent: str = "") -> str:
    """JSON with every object or list that fits in 100 columns on one line."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(indent) + len(flat) <= 100 or not isinstance(value, dict | list) or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dumps(v, inner).lstrip()}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    return "[\n" + ",\n".join(inner + dumps(v, inner).lstrip() for v in value) + f"\n{indent}]"


def refresh(path: Path, base_url: str) -> None:
    doc = path.read_text()
    for example in reversed(examples(doc)):
        response = replay(example, base_url)
        if example.kind == "json":
            try:
                old = json.loads(example.response)
            except json.JSONDecodeError:
                old = {}
            text = dumps(_shown(old, response.json())) + "\n"
        else:
            text = example.response
        doc = doc[:example.span[0]] + text + doc[example.span[1]:]
        print(f"{response.status_code} {example.title}", file=sys.stderr)
    path.write_text(doc)


if __name__ == "__main__":
    refresh(Path(sys.argv[1]), sys.argv[2].rstrip("/"))
