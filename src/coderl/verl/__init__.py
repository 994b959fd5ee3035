"""Everything that imports verl: the reward function, the `code_interpreter` tool, the gateway
agent loop, the CPU platform plugin and the dry-run checks. verl is imported by the modules, never
here, so naming one of them (a reward file path, a tool class) costs nothing until it is used."""
