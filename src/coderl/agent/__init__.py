"""Agentic coding RL: the interception gateway (an unmodified agent harness's model calls become
token-exact trajectories), the verl agent loop that drives a harness per sample, and (part 2)
agent sessions in the sandbox, repository tasks and their grader."""
