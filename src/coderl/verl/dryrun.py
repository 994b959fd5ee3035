"""--dry-run for the training scripts: compose verl 0.9.1's full Hydra config in-process and check it
the way main_ppo / sft_trainer would before spending GPU hours, then print the key settings and
exit 0 - or exit 1 naming what is wrong.

RL: verl's `validate_config` and its config dataclasses (rollout, actor, model); overridden values
of the wrong type (verl's YAML is untyped, so ``max_assistant_turns=abc`` would pass Hydra); the
legacy reward keys main_ppo silently ignores; the v1 sampler loaded and the advantage estimator
looked up; the reward manager resolved and built
(`resolve_reward_manager_cls`, `load_reward_manager`); the reward function loaded and its
``reward_kwargs`` checked against its parameters; the tool classes built from the tool YAML; the
data files' columns, and the first row's tests read the way the reward reads them.
SFT: the config dataclasses `SFTTrainer` builds (model, engine, optim, checkpoint, profiler) and
the data columns. Keys added with ``+`` cannot be checked against verl's schema: they are listed.

Missing data/model files are warnings (a fresh checkout has none yet; a tiny built-in model stands
in where verl must read a model, and the report says so next to the configured path), or errors
with --strict. The stand-in (and the Qwen tokenizer it uses) is built once into the cache dir,
``$CODERL_CACHE`` or ``~/.cache/coderl`` (`coderl.cache.default_cache_dir`).

    python -m coderl.verl.dryrun {rl,sft} [--strict] [hydra overrides...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import io
import os
import sys
import warnings
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore")

RL_COLUMNS = {"prompt", "data_source", "reward_model"}
# verl 0.9.1 still accepts the pre-0.8 reward blocks (all null by default) but main_ppo never migrates
# them: whatever is set there is silently ignored. Where each moved:
LEGACY_REWARD_BLOCKS = {"custom_reward_function": "reward.custom_reward_function",
                        "reward_model": "reward.reward_model (reward_manager: reward.reward_manager.name)",
                        "sandbox_fusion": "reward.sandbox_fusion"}
# Where ``+key=value`` is the intended way to pass options (free-form dicts verl forwards as is).
FREE_FORM = ("reward.custom_reward_function.reward_kwargs.", "reward.reward_kwargs.", "ray_kwargs.ray_init.",
             ".override_config.", ".engine_kwargs.", "data.apply_chat_template_kwargs.")
REMOTE = ("hf://", "s3://", "gs://", "hdfs://")


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


# ---------------------------------------------------------------- composition and generic checks
def compose(config_name: str, overrides: list[str]) -> Any:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="verl.trainer.config", version_base=None):
            return hydra_compose(config_name=config_name, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise DryRunError(_first_lines(exc)) from None


def check_overrides(config_name: str, cfg: Any, overrides: list[str], problems: list[str]) -> None:
    """Overridden values must keep the type of verl's default; ``+`` keys are listed as unchecked."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    defaults = compose(config_name, [])
    for o in OverridesParser.create().parse_overrides(overrides):
        key = o.key_or_group
        if o.is_add():
            if not any(f in f".{key}" for f in FREE_FORM):
                problems.append(f"+{key} is a new key: verl's schema cannot check its spelling")
            continue
        if o.is_delete() or o.is_force_add():
            continue
        default = OmegaConf.select(defaults, key, default=None, throw_on_resolution_failure=False)
        value = OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)
        expected = _type_name(default)
        if expected and value is not None and not _same_type(default, value):
            raise DryRunError(f"{key}: verl expects {expected}, got {value!r}")


def _type_name(value: Any) -> str | None:
    return {bool: "a boolean", int: "an integer", float: "a number"}.get(type(value))


def _same_type(default: Any, value: Any) -> bool:
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, int | float) and not isinstance(value, bool)


def verl_check(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a verl check; its assertion/value/type errors become one line naming ``what``."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # verl prints progress and schemas
            return fn(*args, **kwargs)
    except DryRunError:
        raise
    except Exception as exc:  # noqa: BLE001 - verl signals bad settings with many exception types
        raise DryRunError(f"{what}: {type(exc).__name__}: {_first_lines(exc)}") from None


def _first_lines(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " | ".join(line.strip() for line in text[:3])


def missing(path: str | None, what: str, strict: bool, problems: list[str]) -> bool:
    """True when the path is missing (recorded as a warning, or raised with --strict)."""
    if path and (str(path).startswith(REMOTE) or Path(os.path.expanduser(str(path))).exists()):
        return False
    message = f"{what} not found: {path}"
    if strict:
        raise DryRunError(message)
    problems.append(message)
    return True


def stand_in_model() -> str:
    from coderl.data.qwen_tokenizer import build_tiny_model

    return str(build_tiny_model())


def model_line(configured: str, used: str) -> str:
    """The configured model, and where it is missing here, that a stand-in checked the config."""
    if configured == str(used):
        return configured
    return f"{configured} (not on this machine: a tiny stand-in model, {used}, checked the config)"


def _files(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def check_columns(files: list[str], required: set[str], what: str, problems: list[str], strict: bool) -> list[str]:
    """The files that exist, each with the required columns."""
    import pyarrow.parquet as pq

    present = []
    for f in files:
        if missing(f, what, strict, problems) or f.startswith(REMOTE):
            continue
        columns = set(pq.read_schema(f).names)
        if not required <= columns:
            raise DryRunError(f"{f}: missing columns {sorted(required - columns)} (has {sorted(columns)})")
        present.append(f)
    return present


def first_row(path: str, column: str) -> Any:
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read_row_group(0, columns=[column])
    return table.column(column)[0].as_py() if table.num_rows else None


# ---------------------------------------------------------------- RL (main_ppo)
def check_rl(overrides: list[str], strict: bool, problems: list[str]) -> dict[str, object]:
    from omegaconf import OmegaConf, open_dict

    cfg = compose("ppo_trainer", overrides)
    check_overrides("ppo_trainer", cfg, overrides, problems)
    check_legacy(cfg)
    from verl.trainer.ppo.utils import need_critic, need_reference_policy

    models = ["actor_rollout_ref.model"] + (["critic.model"] if need_critic(cfg) else [])
    configured = str(cfg.actor_rollout_ref.model.path)
    for node in models:
        if missing(OmegaConf.select(cfg, f"{node}.path"), node.replace(".", " "), strict, problems):
            with open_dict(cfg):
                OmegaConf.update(cfg, f"{node}.path", stand_in_model())
    train = check_columns(_files(cfg.data.train_files), RL_COLUMNS, "train data", problems, strict)
    check_columns(_files(cfg.data.val_files), RL_COLUMNS, "validation data", problems, strict)

    from verl.utils.config import omega_conf_to_dataclass, validate_config

    verl_check("config", OmegaConf.resolve, cfg)
    verl_check("verl rejects the config", validate_config, cfg, use_reference_policy=need_reference_policy(cfg),
               use_critic=need_critic(cfg))
    verl_check("actor_rollout_ref.rollout", omega_conf_to_dataclass, cfg.actor_rollout_ref.rollout)
    verl_check("actor_rollout_ref.actor", omega_conf_to_dataclass, cfg.actor_rollout_ref.actor)
    model = verl_check("actor_rollout_ref.model", omega_conf_to_dataclass, cfg.actor_rollout_ref.model)

    sampler = check_sampler_and_estimator(cfg)
    manager, reward_fn = check_reward(cfg, model.tokenizer, problems)
    if train and reward_fn is not None and _is_coderl_reward(cfg):
        check_tests(train[0], cfg.data.reward_fn_key)
    tools = check_tools(cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path)
    rollout, actor = cfg.actor_rollout_ref.rollout, cfg.actor_rollout_ref.actor
    kwargs = cfg.reward.custom_reward_function.get("reward_kwargs") or {}
    return {
        "trainer": f"{cfg.trainer.nnodes} node(s) x {cfg.trainer.n_gpus_per_node} {cfg.trainer.device}",
        "model": model_line(configured, cfg.actor_rollout_ref.model.path),
        "algorithm": f"{cfg.algorithm.adv_estimator} ({sampler}), kl_loss={actor.use_kl_loss} ({actor.kl_loss_type}, "
                     f"{actor.kl_loss_coef}), clip {actor.clip_ratio_low}/{actor.clip_ratio_high}, lr {actor.optim.lr}",
        "batch": f"{cfg.data.train_batch_size} prompts x n={rollout.n}, mini-batch {actor.ppo_mini_batch_size}",
        "lengths": f"prompt {cfg.data.max_prompt_length}, response {cfg.data.max_response_length}",
        "rollout": f"{rollout.name}, T={rollout.temperature}, agent loop {rollout.agent.default_agent_loop}, "
                   f"format {rollout.multi_turn.format}, turns {rollout.multi_turn.max_assistant_turns}",
        "reward manager": f"{manager.__name__} ({cfg.reward.reward_manager.source}:{cfg.reward.reward_manager.name})",
        "reward function": f"{cfg.reward.custom_reward_function.path}:{cfg.reward.custom_reward_function.name}",
        "reward options": ", ".join(f"{k}={v}" for k, v in kwargs.items()) or "defaults",
        "tools": ", ".join(t.name for t in tools) or "none",
        "data": f"train {_files(cfg.data.train_files)}, val {_files(cfg.data.val_files)}",
        "outputs": f"checkpoints {cfg.trainer.default_local_dir}, rollouts {cfg.trainer.get('rollout_data_dir')}",
        "logger": list(cfg.trainer.logger),
    }


def check_sampler_and_estimator(cfg: Any) -> str:
    """The v1 trainer's custom sampler loaded as the trainer loads it, then the advantage estimator
    looked up in verl's registry (`coderl.verl.scored_grpo` registers ``grpo_scored`` when the
    sampler's module loads: a misspelled name would otherwise fail only after Ray started)."""
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn
    from verl.utils.import_utils import load_extern_object

    custom = cfg.trainer.v1.sampler.get("custom_sampler") or {}
    sampler = "verl's sampler"
    if custom.get("path") and custom.get("name"):
        verl_check("trainer.v1.sampler.custom_sampler", load_extern_object, custom.path, custom.name)
        sampler = f"sampler {custom.name}"
    verl_check("algorithm.adv_estimator", get_adv_estimator_fn, cfg.algorithm.adv_estimator)
    return sampler


def check_legacy(cfg: Any) -> None:
    from omegaconf import OmegaConf

    for block, current in LEGACY_REWARD_BLOCKS.items():
        for key, value in _leaves(OmegaConf.to_container(cfg.get(block) or {}, resolve=False), block):
            if value is not None:
                raise DryRunError(f"{key} is a legacy key that main_ppo silently ignores in verl 0.9.1: use {current}")


def _leaves(node: Any, prefix: str) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in _leaves(v, f"{prefix}.{k}")]
    return [(prefix, node)]


def check_reward(cfg: Any, tokenizer: Any, problems: list[str]) -> tuple[type, Any]:
    """Resolve and build the reward manager as a RewardLoopWorker does (inside a running loop)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager, resolve_reward_manager_cls

    manager = verl_check("reward.reward_manager", resolve_reward_manager_cls, cfg)
    reward_fn = verl_check("reward.custom_reward_function", get_custom_reward_fn, cfg)
    if reward_fn is None:
        problems.append("no reward.custom_reward_function.path: verl's default_compute_score will be used")
    else:
        check_reward_kwargs(reward_fn, cfg.reward.custom_reward_function.get("reward_kwargs") or {})

    async def build() -> Any:
        return load_reward_manager(cfg, tokenizer)

    verl_check("load_reward_manager", asyncio.run, build())
    return manager, reward_fn


def check_reward_kwargs(reward_fn: Any, reward_kwargs: Any) -> None:
    raw = reward_fn.args[0] if isinstance(reward_fn, partial) and reward_fn.args else reward_fn
    params = inspect.signature(raw).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    for key in reward_kwargs:
        if key not in params:
            named = sorted(k for k, p in params.items() if p.kind is p.KEYWORD_ONLY)
            raise DryRunError(f"reward.custom_reward_function.reward_kwargs.{key}: not an option of "
                              f"{raw.__name__} (options: {', '.join(named)})")
    mode = reward_kwargs.get("score_mode")
    if mode is not None and mode not in ("binary", "fraction"):
        raise DryRunError(f"reward.custom_reward_function.reward_kwargs.score_mode: 'binary' or 'fraction', got {mode!r}")
    for url in str(reward_kwargs.get("sandbox_url") or "").split(","):
        if url and not url.startswith(("http://", "https://")):
            raise DryRunError(f"reward.custom_reward_function.reward_kwargs.sandbox_url: not an http(s) URL: {url!r}")


def _is_coderl_reward(cfg: Any) -> bool:
    import coderl.verl.reward as code_reward

    path = cfg.reward.custom_reward_function.path
    return bool(path) and Path(path).resolve() == Path(code_reward.__file__).resolve()


def check_tests(path: str, data_source_key: str) -> None:
    """The first row's ground truth must be tests the judge can read (else every sample is flagged)."""
    from coderl.errors import BadRequest
    from coderl.judge import to_spec
    from coderl.verl.reward import tests_of

    reward_model = first_row(path, "reward_model")
    if reward_model is None:
        raise DryRunError(f"{path}: no rows")
    if not isinstance(reward_model, dict) or "ground_truth" not in reward_model:
        raise DryRunError(f"{path}: row 0: reward_model must be a dict with ground_truth, got {type(reward_model).__name__}")
    try:
        to_spec(tests_of(reward_model["ground_truth"]))
    except BadRequest as exc:
        raise DryRunError(f"{path}: row 0: the ground truth is not tests the judge reads: {exc}") from None


def check_tools(tool_path: str | None) -> list[Any]:
    if not tool_path:
        return []
    if not Path(tool_path).exists():
        raise DryRunError(f"actor_rollout_ref.rollout.multi_turn.tool_config_path: no such file: {tool_path}")
    from verl.tools.tool_registry import initialize_tools_from_config

    return verl_check(f"tools in {tool_path}", initialize_tools_from_config, tool_path)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- SFT (sft_trainer)
def check_sft(overrides: list[str], strict: bool, problems: list[str]) -> dict[str, object]:
    from omegaconf import OmegaConf, open_dict

    cfg = compose("sft_trainer_engine", overrides)
    check_overrides("sft_trainer_engine", cfg, overrides, problems)
    configured = str(cfg.model.path)
    if missing(cfg.model.path, "model", strict, problems):
        with open_dict(cfg):
            cfg.model.path = stand_in_model()
    key = cfg.data.get("messages_key", "messages")
    columns = {key} | ({cfg.data.tools_key} if cfg.data.get("tools_key") else set())  # the tool-call SFT needs both
    check_columns(_files(cfg.data.train_files), columns, "train data", problems, strict)
    check_columns(_files(cfg.data.get("val_files")), columns, "validation data", problems, strict)
    from verl.utils.config import omega_conf_to_dataclass

    verl_check("config", OmegaConf.resolve, cfg)
    for section in ("model", "engine", "optim", "checkpoint", "profiler"):  # what SFTTrainer._build_config builds
        verl_check(section, omega_conf_to_dataclass, cfg[section])
    return {
        "trainer": f"{cfg.trainer.nnodes} node(s) x {cfg.trainer.n_gpus_per_node} {cfg.trainer.device}",
        "model": model_line(configured, cfg.model.path),
        "engine": f"{cfg.engine.strategy}, ulysses {cfg.engine.get('ulysses_sequence_parallel_size', 1)}",
        "data": f"{_files(cfg.data.train_files)}, messages_key={key}, tools_key={cfg.data.get('tools_key')}",
        "batch": f"{cfg.data.train_batch_size}, micro {cfg.data.micro_batch_size_per_gpu}, max_length {cfg.data.max_length}",
        "epochs": cfg.trainer.total_epochs,
        "lr": cfg.optim.lr,
        "outputs": cfg.trainer.default_local_dir,
    }


if __name__ == "__main__":
    sys.exit(main())
