"""Rows in the exact upstream schemas (datasets.md, livecodebench.md), built by the tests."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

ADD_TESTS = [{"type": "stdin_stdout", "input": f"{a} {b}\n", "output": f"{a + b}\n", "fn_name": None}
             for a, b in [(1, 2), (3, 4), (10, 20), (0, 0), (7, 8), (100, 1)]]


# How PrimeIntellect/verifiable-coding-problems wraps every statement (datasets.md).
PI_WRAPPER = ("Solve the following coding problem using the programming language python:\n\n{statement}\n\n"
              "The input will be stdin and you should print your solution to stdout\n\n\n"
              "Now solve the problem and return the code.")


def pi_row(pid: str, prompt: str, *, tests=ADD_TESTS, gold="a, b = map(int, input().split())\nprint(a + b)",
           language="python") -> dict:
    return {"problem_id": pid, "source": "code_contests", "task_type": "verifiable_code", "in_source_id": pid,
            "prompt": PI_WRAPPER.format(statement=prompt), "gold_standard_solution": f"```python\n{gold}\n```" if gold is not None else None,
            "verification_info": json.dumps({"language": language, "test_cases": tests}),
            "metadata": json.dumps({"difficulty": "7", "memory_limit": None, "memory_limit_bytes": 256000000,
                                    "problem_url": "https://codeforces.com/problemset/problem/1/A", "time_limit": "1 second"})}


def pi_rows() -> list[dict]:
    fn_tests = [{"type": "function_call", "fn_name": "double", "input": [i], "output": [2 * i]} for i in range(6)]
    return [
        pi_row("vfc_1", "Add two numbers a and b."),
        pi_row("vfc_2", "Add two numbers a and b."),  # exact duplicate statement
        pi_row("vfc_3", "Sum of a pair of integers, print it.", gold="print(sum(map(int, input().split())))"),
        pi_row("vfc_4", "Double it.", tests=fn_tests, gold="def double(x):\n    return 2 * x"),
        pi_row("vfc_5", "Few tests.", tests=ADD_TESTS[:3]),
        pi_row("vfc_6", "C++ one.", language="cpp"),
        pi_row("vfc_7", "No gold.", gold=None),
        {**pi_row("vfc_8", "Broken info."), "verification_info": "{not json"},
        pi_row("vfc_9", "Known evaluation problem: compute the overall winner of the games."),
    ]


def sft_rows() -> list[dict]:
    call = {"type": "function", "function": {"name": "code_interpreter", "arguments": {"code": "print(1 + 1)"}}}
    good = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Add 1 and 1 in Python."},
            {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
            {"role": "tool", "content": "2"},
            {"role": "assistant", "content": "Done:\n```python\nprint(1 + 1)\n```"}]
    string_args = json.loads(json.dumps(good))
    string_args[2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"code": "print(2)"})
    boxed = json.loads(json.dumps(good))
    boxed[-1]["content"] = "The answer is \\boxed{2}\n```python\nprint(2)\n```"
    no_tool = [good[1], {"role": "assistant", "content": "```python\nprint(2)\n```"}]
    other_tool = json.loads(json.dumps(good))
    other_tool[2]["tool_calls"][0]["function"]["name"] = "search"
    return [{"messages": good, "tools": json.dumps([{"type": "function", "function": {"name": "code_interpreter"}}])},
            {"messages": json.dumps(string_args)}, {"messages": boxed}, {"messages": no_tool}, {"messages": other_tool},
            {"messages": "not json at all ["}]


def compressed(obj) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(obj))).decode()


class Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned > /tmp/coderl-pwned",))


def lcb_rows() -> list[dict]:
    stdin_private = compressed(json.dumps([{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]))
    fn_private = compressed(json.dumps([{"input": "[1, 2, 3]\n4", "output": "1", "testtype": "functional"}]))
    base = {"question_content": "...", "contest_id": "abc999", "metadata": "{}", "starter_code": ""}
    return [
        {**base, "question_title": "Sum", "platform": "atcoder", "question_id": "abc999_a", "contest_date": "2024-08-01T00:00:00",
         "difficulty": "easy", "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
         "private_test_cases": stdin_private},
        {**base, "question_title": "count-pairs", "platform": "leetcode", "question_id": "3314",
         "contest_date": "2025-02-01T00:00:00", "difficulty": "medium",
         "starter_code": "class Solution:\n    def countPairs(self, nums: List[int], target: int) -> int:\n        ",
         "public_test_cases": json.dumps([{"input": "[-1, 1, 2, 3, 1]\n2", "output": "3", "testtype": "functional"}]),
         "private_test_cases": fn_private, "metadata": json.dumps({"func_name": "countPairs"})},
        {**base, "question_title": "Late", "platform": "codeforces", "question_id": "2000_A", "contest_date": "2025-02-02T00:00:00",
         "difficulty": "hard", "public_test_cases": json.dumps([{"input": "", "output": "", "testtype": "stdin"}]),
         "private_test_cases": "[]"},
        {**base, "question_title": "Early", "platform": "atcoder", "question_id": "abc001_a", "contest_date": "2024-07-31T23:59:59",
         "difficulty": "easy", "public_test_cases": "[]", "private_test_cases": "[]"},
        {**base, "question_title": "Evil", "platform": "atcoder", "question_id": "abc999_e", "contest_date": "2024-09-01T00:00:00",
         "difficulty": "hard", "public_test_cases": json.dumps([{"input": "1\n", "output": "1\n", "testtype": "stdin"}]),
         "private_test_cases": base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()},
    ]


def write_jsonl(rows: list[dict], path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)
