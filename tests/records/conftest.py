"""The record tests share: the tiny offline Qwen2 model and its tokenizer (tests/helpers/tiny_model.py)."""

from tests.helpers.tiny_model import model_dir, tokenizer

__all__ = ["model_dir", "tokenizer"]
