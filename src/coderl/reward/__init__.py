"""verl reward functions for code RL, judged in the coderl sandbox."""

from coderl.reward.code_reward import compute_score

__all__ = ["compute_score"]
