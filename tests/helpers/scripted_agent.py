"""A minimal real agent harness for the agent-loop tests (standard library only, so it runs with
the sandbox's bare Python): OpenAI chat completions with one `bash` tool, each tool call run in a
subshell, until the model answers without a tool call. It knows nothing of coderl but the
environment variables every harness gets (OPENAI_BASE_URL, OPENAI_API_KEY, CODERL_TASK_FILE)."""

import json
import os
import subprocess
import sys
import urllib.request

TOOLS = [{"type": "function", "function": {
    "name": "bash", "description": "Run a shell command in the work directory.",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}}]


def chat(messages):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps({"model": os.environ.get("CODERL_MODEL", "policy"), "messages": messages,
                         "tools": TOOLS}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)["choices"][0]["message"]


def main():
    with open(os.environ["CODERL_TASK_FILE"]) as f:
        task = f.read()
    messages = [{"role": "system", "content": "You solve tasks with the bash tool."}, {"role": "user", "content": task}]
    for _ in range(10):
        message = chat(messages)
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            print("final answer:", message.get("content"))
            return 0
        for call in calls:
            cmd = json.loads(call["function"]["arguments"]).get("cmd", "")
            done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60)
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": f"exit {done.returncode}\n{done.stdout}{done.stderr}"})
    return 1


if __name__ == "__main__":
    sys.exit(main())
