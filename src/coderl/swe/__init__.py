"""Repository tasks: task rows, snapshots, environments, harness episodes in session sandboxes,
and the grader whose verdicts the agent's code cannot write. Knows nothing of verl."""
