"""The agent interception gateway: OpenAI and Anthropic chat calls in, token ids out.

An unmodified agent harness talks to it as to a model provider; every turn becomes one
token-level generation on a backend (verl's rollout servers, vLLM, SGLang) whose exact ids,
logprobs and masks land in the session's trajectory, so the trainer learns from what was sampled.
"""
