"""SandboxFusion's behaviours that its own test suite and its datasets rely on, over real HTTP on
/run_code with SandboxFusion's defaults (compile_timeout 10 s): Go compiles inside that limit,
Java runs with assertions on and javatuples on the classpath, null file contents, fetch paths
outside the work dir, `localhost`, Python's syntax-error shape and the preinstalled packages."""

from __future__ import annotations

import base64

import httpx
import pytest


def run_code(url: str, **body) -> dict:
    r = httpx.post(url + "/run_code", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def test_go_compiles_inside_the_default_compile_limit(service_url):
    code = ('package main\nimport (\n"bufio"\n"fmt"\n"os"\n"sort"\n"strings"\n)\n'
            'func main(){s,_:=bufio.NewReader(os.Stdin).ReadString(\'\\n\')\nf:=strings.Fields(s)\nsort.Strings(f)\n'
            'fmt.Println(strings.Join(f, ","))}\n')
    r = run_code(service_url, code=code, language="go", stdin="b c a\n")
    assert r["status"] == "Success" and r["run_result"]["stdout"] == "a,b,c\n", r
    assert r["compile_result"]["execution_time"] < 10, r["compile_result"]


def test_java_runs_with_assertions_and_javatuples(service_url):
    failing = "public class Main { public static void main(String[] a) { assert 1 == 2 : \"nope\"; } }"
    r = run_code(service_url, code=failing, language="java")
    assert r["status"] == "Failed" and r["run_result"]["return_code"] == 1, r
    assert "AssertionError: nope" in r["run_result"]["stderr"], r
    tuples = ("import org.javatuples.Triplet;\npublic class Main { public static void main(String[] a) {\n"
              "Triplet<Integer, String, Boolean> t = Triplet.with(1, \"x\", true);\n"
              "System.out.println(t.getValue0() + t.getValue1() + t.getValue2()); } }")
    r = run_code(service_url, code=tuples, language="java")
    assert r["status"] == "Success" and r["run_result"]["stdout"] == "1xtrue\n", r
