"""Fixtures the agent tests share: the tiny offline Qwen2 model (``model_dir``) and its tokenizer
(``tokenizer``: the real Qwen BPE and chat template), built once per machine under coderl's cache by
coderl.data.qwen_tokenizer. tests/gateway and tests/records take them through their conftest.py;
tests/verl/conftest.py has the same two as ``tiny_model`` and ``tiny_tokenizer`` (tests/verl keeps the
suite-wide ``tokenizer``, the full offline Qwen one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.qwen_tokenizer import build_tiny_model


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return build_tiny_model()


@pytest.fixture(scope="session")
def tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)
