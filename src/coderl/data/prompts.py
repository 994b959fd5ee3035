"""Prompts: the system message that tells the policy about the tool and the answer format, and
LiveCodeBench's official prompt formats (lcb_runner/prompts/code_generation.py), as chat lists."""

from __future__ import annotations

from coderl.errors import BadRequest

TOOL_SYSTEM_PROMPT = (
    "You are a careful competitive programmer. You can call the `code_interpreter` tool to run Python code "
    "in a sandbox and see its output: use it to test ideas and check your program on the examples. "
    "When you are done, give your final answer as one complete Python program in a single ```python fenced "
    "code block at the end of your reply. Only that last block is judged, on hidden tests."
)

LCB_SYSTEM = ("You are an expert Python programmer. You will be given a question (problem specification) and will "
              "generate a correct Python program that matches the specification and passes all tests.")
LCB_WITH_STARTER = ("You will use the following starter code to write the solution to the problem and enclose your "
                    "code within delimiters.")
LCB_WITHOUT_STARTER = ("Read the inputs from stdin solve the problem and write the answer to stdout (do not directly "
                       "test on the sample inputs). Enclose your code within delimiters as follows. Ensure that when "
                       "the python program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.")
CODEQWEN_INSTRUCTION = ("You will be given a question (problem specification) and will generate a correct Python "
                        "program that matches the specification and passes all tests. You will NOT return anything "
                        "except for the program.")
LCB_PROMPT_STYLES = ("generic", "codeqwen")


def _code_block(starter_code: str) -> str:
    return f"```python\n{starter_code or '# YOUR CODE HERE'}\n```\n\n"


def lcb_user_prompt(question: str, starter_code: str) -> str:
    """LiveCodeBench's generic chat prompt (get_generic_question_template_answer)."""
    fmt = LCB_WITH_STARTER if starter_code else LCB_WITHOUT_STARTER
    return (f"### Question:\n{question}\n\n### Format: {fmt}\n{_code_block(starter_code)}"
            "### Answer: (use the provided format with backticks)\n\n")


def lcb_messages(question: str, starter_code: str, style: str = "generic") -> list[dict[str, str]]:
    """The official prompt as a chat list. ``generic``: the chat-API style (system + user).
    ``codeqwen``: LMStyle.CodeQwenInstruct, which LiveCodeBench maps Qwen models to; its raw string
    is exactly Qwen's chat template over these two messages."""
    if style == "generic":
        return [{"role": "system", "content": LCB_SYSTEM}, {"role": "user", "content": lcb_user_prompt(question, starter_code)}]
    if style == "codeqwen":
        fmt = LCB_WITH_STARTER if starter_code else LCB_WITHOUT_STARTER
        user = f"\n{CODEQWEN_INSTRUCTION}\n\nQuestion: {question}\n\n{fmt}\n{_code_block(starter_code)}"
        return [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": user}]
    raise BadRequest(f"unknown LiveCodeBench prompt style {style!r}; use one of {', '.join(LCB_PROMPT_STYLES)}")


def tool_messages(problem: str) -> list[dict[str, str]]:
    """The RL prompt: the tool-aware system message, then the problem statement."""
    return [{"role": "system", "content": TOOL_SYSTEM_PROMPT}, {"role": "user", "content": problem}]
