"""coderl: a secure, fast code-execution sandbox, judge and verl integration for code RL."""

__version__ = "0.1.0"
