"""Per-sample trajectory records of a training run (`writer`), built from what the reward, the
code tool and the agent loop already hold (`code`, `agent`), read by `coderl view`."""
