"""verl tools backed by the coderl sandbox (import verl only when a tool module is imported)."""
