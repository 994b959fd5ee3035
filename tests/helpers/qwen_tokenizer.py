"""The offline Qwen tokenizer and tiny model for tests (built by coderl.data.qwen_tokenizer)."""

from coderl.data.qwen_tokenizer import build_qwen_tokenizer, build_tiny_model

__all__ = ["build_qwen_tokenizer", "build_tiny_model"]
