"""The frame, the one message format between the host and a sandbox's PID 1 (stdlib only).

A *frame* is a ``>I`` header length, a JSON header, then the raw blobs the header's ``"blobs"``
lengths name. Both PID 1s (``runner.py`` for judging slots, ``session_init.py`` for agent
sessions) and both host sides (``slot.py``, ``session.py``) read and write frames through this one
module: inside the sandbox it is ``/coderl/frames.py``, on the host ``coderl.sandbox.frames``.

The JSON goes through the json module's C half (``_json``) so that a PID 1 starts without
importing json (and re, enum, ...), which costs every session and slot its start.
"""

from __future__ import annotations

import _json
import struct

if __package__:  # the host side
    from coderl.sandbox.wire import read_exact
else:  # inside the sandbox, beside wire.py
    from wire import read_exact  # type: ignore[no-redef]

HEADER = struct.Struct(">I")
MAX_HEADER = 16 * 1024 * 1024


def _not_json(obj: object) -> object:
    raise TypeError(f"cannot encode {type(obj).__name__}")


class _Scanner:  # what _json.make_scanner reads from json.JSONDecoder
    strict, object_hook, object_pairs_hook, parse_float, parse_int = True, None, None, float, int
    parse_constant = staticmethod(float)


_ENCODE = _json.make_encoder(None, _not_json, _json.encode_basestring_ascii, None, ":", ",", False, False, True)
_SCAN = _json.make_scanner(_Scanner())


def encode_frame(header: dict, blobs: list[bytes] = ()) -> bytes:  # type: ignore[assignment]
    raw = "".join(_ENCODE({**header, "blobs": [len(b) for b in blobs]}, 0)).encode()
    return b"".join([HEADER.pack(len(raw)), raw, *blobs])


def decode_header(raw: bytes) -> dict:
    """A frame's JSON header; ``ValueError`` when it is not a JSON object."""
    try:
        header = _SCAN(raw.decode(), 0)[0]
    except (StopIteration, UnicodeDecodeError) as exc:
        raise ValueError("a frame header that is not JSON") from exc
    if not isinstance(header, dict):
        raise ValueError(f"a frame header that is not a JSON object: {type(header).__name__}")
    return header


def header_size(head: bytes) -> int:
    """The JSON header's length from the frame's first bytes; ``ValueError`` past MAX_HEADER."""
    (size,) = HEADER.unpack(head)
    if size > MAX_HEADER:
        raise ValueError(f"frame header too large: {size}")
    return size


def read_frame(fd: int) -> tuple[dict, list[bytes]]:
    """The next frame from a blocking fd (the PID 1 side); ``EOFError`` when the host closed it."""
    header = decode_header(read_exact(fd, header_size(read_exact(fd, HEADER.size))))
    return header, [read_exact(fd, n) for n in header.get("blobs", [])]


async def read_frame_async(stream) -> tuple[dict, list[bytes]]:  # type: ignore[no-untyped-def]
    """The next frame from an ``asyncio.StreamReader`` (the host side). Raises
    ``asyncio.IncompleteReadError`` when PID 1 closed its pipe, ``ValueError`` on a bad header."""
    header = decode_header(await stream.readexactly(header_size(await stream.readexactly(HEADER.size))))
    return header, [await stream.readexactly(n) for n in header.get("blobs", [])]
