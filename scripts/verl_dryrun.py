"""--dry-run for the training scripts: compose verl 0.9.1's full Hydra config in-process, validate
it the way main_ppo / sft_trainer would, resolve the reward manager, load the reward function and
the tool classes, check the data files' columns, print the key settings, and exit 0 - or exit 1
naming what is wrong. Missing data/model files are warnings (a fresh checkout has none yet; a
tiny built-in model stands in where verl must read a model), or errors with --strict.

    python scripts/verl_dryrun.py {rl,sft} [--strict] [hydra overrides...]
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore")

RL_COLUMNS = {"prompt", "data_source", "reward_model"}
LEGACY_REWARD_KEYS = {"custom_reward_function.path": "reward.custom_reward_function.path",
                      "sandbox_fusion.url": "reward.sandbox_fusion.url"}
SFT_COLUMNS = {"messages"}


class DryRunError(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=("rl", "sft"))
    parser.add_argument("--strict", action="store_true", help="missing data/model files are errors")
    args, overrides = parser.parse_known_args(argv)
    problems: list[str] = []
    try:
        settings = (check_rl if args.kind == "rl" else check_sft)(overrides, args.strict, problems)
    except DryRunError as exc:
        print(f"dry-run: FAILED: {exc}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"dry-run: warning: {p}", file=sys.stderr)
    width = max(len(k) for k in settings)
    for key, value in settings.items():
        print(f"  {key:<{width}}  {value}")
    print(f"dry-run: OK ({args.kind}): config composed and validated" + (f", {len(problems)} warning(s)" if problems else ""))
    return 0


def compose(config_name: str, overrides: list[str]):  # type: ignore[no-untyped-def]
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_module(config_module="verl.trainer.config", version_base=None):
            return hydra_compose(config_name=config_name, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise DryRunError(_first_lines(exc)) from None


def _first_lines(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " | ".join(line.strip() for line in text[:3])


def missing(path: str | None, what: str, strict: bool, problems: list[str]) -> bool:
    """True when the path is missing (recorded as a warning, or raised with --strict)."""
    if path and (path.startswith(("hf://", "s3://", "gs://")) or Path(os.path.expanduser(path)).exists()):
        return False
    message = f"{what} not found: {path}"
    if strict:
        raise DryRunError(message)
    problems.append(message)
    return True


def stand_in_model() -> str:
    from coderl.data.qwen_tokenizer import build_tiny_model

    return str(build_tiny_model())


def check_columns(files: list[str], required: set[str], what: str, problems: list[str], strict: bool) -> None:
    import pyarrow.parquet as pq

    for f in files:
        if missing(f, what, strict, problems):
            continue
        columns = set(pq.read_schema(f).names)
        if not required <= columns:
            raise DryRunError(f"{f}: missing columns {sorted(required - columns)} (has {sorted(columns)})")


def _files(value) -> list[str]:  # type: ignore[no-untyped-def]
    if value is None:
        return []
    return [str(v) for v in value] if not isinstance(value, str) else [value]


def check_rl(overrides: list[str], strict: bool, problems: list[str]) -> dict[str, object]:
    from omegaconf import OmegaConf, open_dict

    cfg = compose("ppo_trainer", overrides)
    model_path = cfg.actor_rollout_ref.model.path
    if missing(model_path, "model", strict, problems):
        with open_dict(cfg):
            cfg.actor_rollout_ref.model.path = stand_in_model()
            if cfg.critic.get("model") is not None and "path" in cfg.critic.model:
                cfg.critic.model.path = cfg.actor_rollout_ref.model.path
    check_columns(_files(cfg.data.train_files), RL_COLUMNS, "train data", problems, strict)
    check_columns(_files(cfg.data.val_files), RL_COLUMNS, "validation data", problems, strict)
    try:
        OmegaConf.resolve(cfg)
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import omega_conf_to_dataclass, validate_config

        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    except Exception as exc:  # noqa: BLE001 - verl raises assertion/value/type errors for bad settings
        raise DryRunError(f"verl rejects the config: {type(exc).__name__}: {_first_lines(exc)}") from None
    for legacy, current in LEGACY_REWARD_KEYS.items():
        if OmegaConf.select(cfg, legacy) is not None:
            raise DryRunError(f"{legacy} is a legacy key that main_ppo silently ignores in verl 0.9.1: use {current}")
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls

    try:
        manager = resolve_reward_manager_cls(cfg)
        reward_fn = get_custom_reward_fn(cfg)
    except Exception as exc:  # noqa: BLE001
        raise DryRunError(f"reward: {type(exc).__name__}: {_first_lines(exc)}") from None
    if reward_fn is None:
        problems.append("no reward.custom_reward_function.path: verl's default_compute_score will be used")
    tool_path = cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path
    tools = []
    if tool_path:
        if missing(tool_path, "tool config", True, problems):
            pass
        from verl.tools.tool_registry import initialize_tools_from_config

        try:
            tools = initialize_tools_from_config(tool_path)
        except Exception as exc:  # noqa: BLE001
            raise DryRunError(f"tools in {tool_path}: {type(exc).__name__}: {_first_lines(exc)}") from None
    rollout = cfg.actor_rollout_ref.rollout
    return {
        "trainer": f"{cfg.trainer.nnodes} node(s) x {cfg.trainer.n_gpus_per_node} {cfg.trainer.device}",
        "model": cfg.actor_rollout_ref.model.path,
        "algorithm": f"{cfg.algorithm.adv_estimator}, kl_loss={cfg.actor_rollout_ref.actor.use_kl_loss} "
                     f"({cfg.actor_rollout_ref.actor.kl_loss_type}, {cfg.actor_rollout_ref.actor.kl_loss_coef})",
        "batch": f"{cfg.data.train_batch_size} prompts x n={rollout.n}, mini-batch {cfg.actor_rollout_ref.actor.ppo_mini_batch_size}",
        "lengths": f"prompt {cfg.data.max_prompt_length}, response {cfg.data.max_response_length}",
        "rollout": f"{rollout.name}, T={rollout.temperature}, agent loop {rollout.agent.default_agent_loop}, "
                   f"format {rollout.multi_turn.format}, turns {rollout.multi_turn.max_assistant_turns}",
        "reward manager": f"{manager.__name__} ({cfg.reward.reward_manager.source}:{cfg.reward.reward_manager.name})",
        "reward function": f"{cfg.reward.custom_reward_function.path}:{cfg.reward.custom_reward_function.name}",
        "tools": ", ".join(t.name for t in tools) or "none",
        "data": f"train {list(_files(cfg.data.train_files))}, val {list(_files(cfg.data.val_files))}",
        "logger": list(cfg.trainer.logger),
    }


def check_sft(overrides: list[str], strict: bool, problems: list[str]) -> dict[str, object]:
    from omegaconf import OmegaConf, open_dict

    cfg = compose("sft_trainer_engine", overrides)
    if missing(cfg.model.path, "model", strict, problems):
        with open_dict(cfg):
            cfg.model.path = stand_in_model()
    key = cfg.data.get("messages_key", "messages")
    check_columns(_files(cfg.data.train_files), {key}, "train data", problems, strict)
    check_columns(_files(cfg.data.get("val_files")), {key}, "validation data", problems, strict)
    try:
        OmegaConf.resolve(cfg)
        from verl.utils.config import omega_conf_to_dataclass

        omega_conf_to_dataclass(cfg.model)
    except Exception as exc:  # noqa: BLE001
        raise DryRunError(f"verl rejects the config: {type(exc).__name__}: {_first_lines(exc)}") from None
    return {
        "trainer": f"{cfg.trainer.nnodes} node(s) x {cfg.trainer.n_gpus_per_node} {cfg.trainer.device}",
        "model": cfg.model.path,
        "engine": f"{cfg.engine.strategy}, ulysses {cfg.engine.get('ulysses_sequence_parallel_size', 1)}",
        "data": f"{list(_files(cfg.data.train_files))}, messages_key={key}, tools_key={cfg.data.get('tools_key')}",
        "batch": f"{cfg.data.train_batch_size}, micro {cfg.data.micro_batch_size_per_gpu}, max_length {cfg.data.max_length}",
        "epochs": cfg.trainer.total_epochs,
        "lr": cfg.optim.lr,
    }


if __name__ == "__main__":
    sys.exit(main())
