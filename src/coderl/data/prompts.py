"""Prompts: the system message that tells the policy about the tool and the answer format, and
LiveCodeBench's official prompt formats."""

from __future__ import annotations

TOOL_SYSTEM_PROMPT = (
    "You are a careful competitive programmer. You can call the `code_interpreter` tool to run Python code "
    "in a sandbox and see its output: use it to test ideas and check your program on the examples. "
    "When you are done, give your final answer as one complete Python program in a single ```python fenced "
    "code block at the end of your reply. Only that last block is judged, on hidden tests."
)

LCB_SYSTEM = ("You are an expert Python programmer. You will be given a question (problem specification) and will "
              "generate a correct Python program that matches the specification and passes all tests.")
LCB_WITH_STARTER = ("### Format: You will use the following starter code to write the solution to the problem and "
                    "enclose your code within delimiters.")
LCB_WITHOUT_STARTER = ("### Format: Read the inputs from stdin solve the problem and write the answer to stdout (do not "
                       "directly test on the sample inputs). Enclose your code within delimiters as follows. Ensure "
                       "that when the python program runs, it reads the inputs, runs the algorithm and writes output "
                       "to STDOUT.")


def lcb_user_prompt(question: str, starter_code: str) -> str:
    """LiveCodeBench's generic chat prompt (lcb_runner/prompts/code_generation.py)."""
    if starter_code:
        fmt = f"{LCB_WITH_STARTER}\n```python\n{starter_code}\n```\n\n"
    else:
        fmt = f"{LCB_WITHOUT_STARTER}\n```python\n# YOUR CODE HERE\n```\n\n"
    return f"### Question:\n{question}\n\n{fmt}### Answer: (use the provided format with backticks)\n\n"


def lcb_messages(question: str, starter_code: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": LCB_SYSTEM}, {"role": "user", "content": lcb_user_prompt(question, starter_code)}]


def tool_messages(problem: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": TOOL_SYSTEM_PROMPT}, {"role": "user", "content": problem}]
