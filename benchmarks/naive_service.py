"""The naive baseline service for bench_service.py: what an unisolated sandbox does - one
`python3 file` subprocess per request/test case, no isolation, no warm runner."""

import asyncio
import os
import subprocess
import sys
import tempfile

from fastapi import FastAPI

app = FastAPI()


async def run_python(code: str, stdin: str) -> tuple[int, str]:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(code)
    try:
        done = await asyncio.to_thread(subprocess.run, [sys.executable, fh.name], input=stdin.encode(),
                                       capture_output=True, timeout=10)
        return done.returncode, done.stdout.decode()
    finally:
        os.unlink(fh.name)


@app.post("/run_code")
async def run_code(body: dict) -> dict:
    code, out = await run_python(body["code"], body.get("stdin") or "")
    return {"status": "Success" if code == 0 else "Failed", "run_result": {"return_code": code, "stdout": out}}


@app.post("/judge")
async def judge(body: dict) -> dict:
    passed = 0
    for stdin, expected in zip(body["inputs"], body["outputs"], strict=True):
        _, out = await run_python(body["code"], stdin)
        passed += out.strip() == expected.strip()
    return {"passed": passed, "total": len(body["inputs"])}
