from __future__ import annotations

import pytest

from tests.helpers.qwen_tokenizer import build_tiny_model
from tests.helpers.service import running_service


@pytest.fixture(scope="session")
def tiny_model():
    """The tiny offline Qwen2 model's directory (tests/helpers/tiny_model.py's ``model_dir``)."""
    return build_tiny_model()


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model):
    """The tiny model's own tokenizer (its cut BPE and chat template), once per session; the suite-wide
    ``tokenizer`` (tests/conftest.py) is the full offline Qwen one."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


@pytest.fixture(scope="session")
def sandbox_url():
    with running_service(slots=2) as url:
        yield url


def compose(overrides: list[str], config_name: str = "ppo_trainer"):
    """verl's own Hydra composition, in-process (what main_ppo does before it starts Ray)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return hydra_compose(config_name=config_name, overrides=overrides)
