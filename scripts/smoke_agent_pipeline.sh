#!/usr/bin/env bash
# Agentic RL, the whole loop, for real, on CPU, with a tiny model made here (no downloads): repository
# tasks -> SFT warm-up on gold trajectories of the stock mini-swe-agent -> merge -> GRPO over
# coderl_gateway_agent (the stock `mini` in session sandboxes, its model calls through the gateway to
# verl's own rollout server, the CPU vLLM build; the repository grader as the reward) -> `coderl eval
# swe --harness` on the held-out tasks before (SFT model) and after (RL checkpoint) -> figures, a view
# of the run's records, RUN/report.json and a table. The real scripts run unchanged; the CPU profile is
# scripts/smoke_profile.sh (the code smoke run's), the agent's settings are below.
#
#   scripts/smoke_agent_pipeline.sh [RUN_DIR]     (default outputs/agent-smoke)
#
# Knobs: SMOKE_VENV (.smoke-venv), MINI_SWE_AGENT_VENV (/opt/mini-swe-agent), SMOKE_SFT_EPOCHS,
# SMOKE_AGENT_TASKS (1: the train split's first N tasks), SMOKE_AGENT_ROWS + SMOKE_AGENT_REPOS (a
# tasks.jsonl of `coderl data swe-smith` / `synth` / `swe-bench` and its --repos dir: the first
# SMOKE_AGENT_TASKS of those rows instead of the builtin train split), SMOKE_SFT_VARIANTS (6),
# SMOKE_RL_STEPS (3), SMOKE_SFT_MAX_LENGTH, SMOKE_AGENT_MAX_PROMPT, SMOKE_AGENT_MAX_RESPONSE (the
# builtin tasks' 2048, 1536, 1024), SMOKE_SFT_LR (3e-3), SMOKE_SFT_BATCH (4: SFT rows per step; the
# mix has 2 per sed episode, so with SMOKE_SFT_VARIANTS=2 it is 2), SMOKE_NICE (10), CODERL_CACHE (snapshots and task environments),
# SMOKE_FAULT_RATE (0: off; e.g. 0.2: after RL, one more GRPO step from the SFT model with the
# sandboxes on a `coderl serve` session service behind a fault proxy, scripts/smoke_agent_remote_step.sh
# into RUN/remote-step: this run's own episodes and grading use in-process sandboxes, with no service
# to put a fault in front of), SMOKE_FROM (sft, merge_sft or rl: start at that stage in RUN_DIR, whose
# stages.tsv lists the earlier ones as finished; their outputs and lines are kept, the rest is redone:
# e.g. a GRPO step with other settings after a long SFT). The tiny model's max_position_embeddings is
# at least MAX_PROMPT + MAX_RESPONSE (4096 for the builtin tasks): verl's vLLM server takes it as its
# max_model_len.
set -euo pipefail
source "$(dirname "$0")/common.sh"
case "${1:-}" in -h|--help) sed -n '2,26p' "$0"; exit 0 ;; esac
# The tasks' source, for `coderl data swe` (--source) and `coderl data swe-sft` (--tasks): the builtin
# train split, or the given rows with their repositories.
if [ -n "${SMOKE_AGENT_ROWS:-}${SMOKE_AGENT_REPOS:-}" ]; then
  [ -f "${SMOKE_AGENT_ROWS:-}" ] && [ -d "${SMOKE_AGENT_REPOS:-}" ] || {
    echo "error: SMOKE_AGENT_ROWS must be a tasks.jsonl and SMOKE_AGENT_REPOS its repositories' dir, got '${SMOKE_AGENT_ROWS:-}' and '${SMOKE_AGENT_REPOS:-}'" >&2; exit 2; }
  ROWS="$(printf '%q --repos %q' "$(realpath "$SMOKE_AGENT_ROWS")" "$(realpath "$SMOKE_AGENT_REPOS")")"
else
  ROWS="builtin --split train"
fi
# SMOKE_FROM: the stages before it are kept (they must have finished in RUN), the rest redone.
KEPT=()
case "${SMOKE_FROM:-data}" in
  data) ;;
  sft) KEPT=(data) ;;
  merge_sft) KEPT=(data sft) ;;
  rl) KEPT=(data sft merge_sft) ;;
  *) echo "error: SMOKE_FROM must be sft, merge_sft or rl, got $SMOKE_FROM" >&2; exit 2 ;;
esac
RUN="$(mkdir -p "${1:-$CODERL_ROOT/outputs/agent-smoke}" && cd "${1:-$CODERL_ROOT/outputs/agent-smoke}" && pwd)"
for s in "${KEPT[@]}"; do
  grep -q "^$s"$'\t' "$RUN/stages.tsv" 2>/dev/null || {
    echo "error: SMOKE_FROM=$SMOKE_FROM needs stage $s finished in $RUN (its stages.tsv)" >&2; exit 2; }
done
# Three GRPO steps of 8 episodes: an episode resolves about one time in five here, so the chance
# that every group of a run scores uniformly (no gradient) is ~0.8^24 = 0.5% (0.8^16 = 3% with two).
export SMOKE_RL_STEPS="${SMOKE_RL_STEPS:-3}"
source "$CODERL_ROOT/scripts/smoke_profile.sh"
source "$CODERL_ROOT/scripts/smoke_stages.sh"
source "$CODERL_ROOT/scripts/smoke_agent_settings.sh"
SCRIPTS="$CODERL_ROOT/scripts"

RL_TASKS="${SMOKE_AGENT_TASKS:-1}"
case "$RL_TASKS" in 1|2|4|8) ;; *) echo "error: SMOKE_AGENT_TASKS must be 1, 2, 4 or 8 (8 episodes per step), got $RL_TASKS" >&2; exit 2 ;; esac
kept() { local s; for s in "${KEPT[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
# stage, or for a kept stage a line that says so
stage_or_kept() { if kept "$1"; then echo "== $1: kept from the earlier run" >&2; else stage "$@"; fi; }
if [ ${#KEPT[@]} -eq 0 ]; then
  rm -rf "$RUN"/{data,model,sft,rl,eval,figures,logs,report.json,stages.tsv,view.html,remote-step}
  : > "$RUN/stages.tsv.kept"
else
  kept sft || rm -rf "$RUN/sft"
  rm -rf "$RUN"/{rl,eval,figures,report.json,view.html,remote-step}
  grep -E "^($(IFS='|'; echo "${KEPT[*]}"))"$'\t' "$RUN/stages.tsv" > "$RUN/stages.tsv.kept"
fi
mkdir -p "$RUN/logs" "$RUN/figures"
mv "$RUN/stages.tsv.kept" "$STAGES"
stage env setup_env
# verl's vLLM server takes the model's max_position_embeddings as its max_model_len (and refuses a
# larger rollout.max_model_len): at least MAX_PROMPT + MAX_RESPONSE, so a real repository's episode
# (its 2nd request ~4.3k tokens with h11's row) is not cut at 4096. A bound of a RoPE model, not a
# weight: raising it in config.json changes no computation below the old bound.
MODEL_POSITIONS=$(( ${SMOKE_AGENT_MAX_PROMPT:-1536} + ${SMOKE_AGENT_MAX_RESPONSE:-1024} ))
widen_positions() {  # widen_positions MODEL_DIR: max_position_embeddings >= MODEL_POSITIONS
  "$PYTHON" - "$1/config.json" "$MODEL_POSITIONS" <<'PY'
import json, sys
path, need = sys.argv[1], int(sys.argv[2])
config = json.load(open(path))
if config.get("max_position_embeddings", 0) < need:
    config["max_position_embeddings"] = need
    json.dump(config, open(path, "w"), indent=2)
PY
}
export MODEL_POSITIONS; export -f widen_positions   # the data stage runs it under bash -c
# the agent-loop YAML's harness for the eval: the same stock mini, options and environment (read with
# the smoke venv's python, which the env stage has just made: a fresh clone has no .venv)
HARNESS="$("$PYTHON" - "$CODERL_ROOT/tool_config/agent_loop.yaml" "$MINI_SWE_AGENT_VENV" <<'PY'
import shlex, sys, yaml
(entry,) = [e for e in yaml.safe_load(open(sys.argv[1])) if e["name"] == "coderl_gateway_agent"]
env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in entry.get("env", {}).items())
print(f"env {env} " + entry["command"].replace("${oc.env:MINI_SWE_AGENT_VENV,/opt/mini-swe-agent}", sys.argv[2]))
PY
)"

# Tasks: the builtin train split's (or SMOKE_AGENT_ROWS') first SMOKE_AGENT_TASKS tasks as verl rows
# (the held-out split is only evaluated); the tiny model; the SFT rows: gold episodes of the stock mini recorded through the
# gateway with the tiny model's chat template (SMOKE_SFT_VARIANTS per task), of which the sed ones are
# kept, each with a wrong twin (scripts/smoke_agent_sft_mix.py says why). One task by default: with
# the eight train tasks the 2-layer model did not pick the task out of mini's ~1150-token prompt (it
# opened another task's file), no episode resolved, and GRPO had no reward variance (a run of 2 x 4
# episodes per step: 0/16 resolved); on one task it learns the episode and samples the gold edit or
# its wrong twin.
stage_or_kept data bash -c "
  coderl data swe --source $ROWS --limit $RL_TASKS --build-envs --out '$RUN/data/swe' &&
  '$PYTHON' -c 'import sys; from pathlib import Path; from coderl.data.qwen_tokenizer import build_tiny_model; build_tiny_model(Path(sys.argv[1]), hidden_size=128, num_heads=2, seed=0, vocab_ranks=8192)' '$RUN/model' &&
  widen_positions '$RUN/model' &&
  coderl data swe-sft --tasks $ROWS --limit $RL_TASKS --variants ${SMOKE_SFT_VARIANTS:-6} --val-fraction 0 --tokenizer '$RUN/model' --out '$RUN/data/swe-sft' &&
  '$PYTHON' '$SCRIPTS/smoke_agent_sft_mix.py' '$RUN/data/swe-sft' '$RUN/data/sft'"

# SFT warm-up on those rows; MAX_LENGTH 2048 (SMOKE_SFT_MAX_LENGTH): a whole gold episode is 1600-1987
# tokens of the cut tokenizer (a builtin task's). SFT is the only process running, so it gets both cores' math threads.
stage_or_kept sft env MODEL_PATH="$RUN/model" TRAIN_FILES="$RUN/data/sft/train.parquet" VAL_FILES="$RUN/data/sft/validation.parquet" \
  OUTPUT_DIR="$RUN/sft" EXPERIMENT=agent-smoke-sft BATCH="${SMOKE_SFT_BATCH:-4}" MICRO_BATCH="${SMOKE_SFT_BATCH:-4}" \
  MAX_LENGTH="${SMOKE_SFT_MAX_LENGTH:-2048}" LR="${SMOKE_SFT_LR:-3e-3}" EPOCHS="${SMOKE_SFT_EPOCHS:-80}" \
  OMP_NUM_THREADS=2 bash "$SCRIPTS/run_toolcall_sft.sh" "${SMOKE_SFT_OVERRIDES[@]}"
SFT_CKPT="$(find "$RUN/sft" -maxdepth 1 -type d -name 'global_step_*' | sort -V | tail -n 1)"
stage_or_kept merge_sft bash "$SCRIPTS/merge_checkpoint.sh" "$SFT_CKPT" "$RUN/sft/merged"

# GRPO: 8 episodes per step (one group per task: 8 on one task, 2 x 4 on two, ...), the shared
# settings of scripts/smoke_agent_settings.sh. SFT: 80 epochs of the 4 rows (one step each): at 30 the
# loss was still 1.2 and every sampled first turn garbled the tool call.
widen_positions "$RUN/sft/merged"   # a no-op unless the SFT stage was kept from a run with a lower bound
stage rl env MODEL_PATH="$RUN/sft/merged" TRAIN_FILES="$RUN/data/swe/train.parquet" VAL_FILES="$RUN/data/swe/train.parquet" \
  OUTPUT_DIR="$RUN/rl" EXPERIMENT=agent-smoke-rl TRAIN_BATCH="$RL_TASKS" MINI_BATCH="$RL_TASKS" ROLLOUT_N=$((8 / RL_TASKS)) \
  EPOCHS="$SMOKE_RL_STEPS" SAVE_FREQ=1 "${AGENT_SMOKE_RL[@]}" \
  bash "$SCRIPTS/run_agent_rl.sh" "${SMOKE_RL_OVERRIDES[@]}"
# Every step's checkpoint merged: the report scores step k's episodes with the weights of step k-1.
merge_rl() { for ckpt in "$RUN"/rl/checkpoints/global_step_*; do bash "$SCRIPTS/merge_checkpoint.sh" "$ckpt"; done; }
stage merge_rl merge_rl
RL_CKPT="$(find "$RUN/rl/checkpoints" -maxdepth 1 -type d -name 'global_step_*' | sort -V | tail -n 1)"

# Held-out eval: the same stock mini in session sandboxes, its model a `coderl gateway` serving the
# checkpoint in-process (transformers backend: a tiny model), then the grader.
eval_model() {  # eval_model NAME MODEL_DIR
  local sock="$RUN/eval/$1.sock" pid rc=0
  mkdir -p "$RUN/eval"
  coderl gateway --tokenizer "$2" --backend transformers --auto-session \
    --listen "unix:$sock" --temperature 1.0 --max-context 2560 > "$RUN/logs/gateway_$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do [ -S "$sock" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  coderl eval swe --tasks builtin --split heldout --out "$RUN/eval/$1" \
    --harness "$HARNESS" --gateway-socket "$sock" --harness-bind "$MINI_SWE_AGENT_VENV" --harness-timeout 300 || rc=$?
  kill "$pid"; wait "$pid" 2>/dev/null || true
  return "$rc"
}
stage eval_sft eval_model sft "$RUN/sft/merged"
stage eval_rl eval_model rl "$RL_CKPT/huggingface_merged"

# The fault switch: a step whose grading goes through the sandbox service, a fraction of it failed.
if [ "${SMOKE_FAULT_RATE:-0}" != 0 ]; then
  stage fault_step bash "$SCRIPTS/smoke_agent_remote_step.sh" "$RUN/sft/merged" "$RUN/remote-step"
fi

stage figures bash -c "
  coderl plot training --metrics '$RUN/rl/metrics.jsonl' --rollouts '$RUN/rl/rollouts' --out '$RUN/figures/training_progress.png' --note 'tiny-model CPU smoke run' &&
  '$PYTHON' '$SCRIPTS/smoke_agent_figures.py' '$RUN'"
stage view coderl view "$RUN" --out "$RUN/view.html"
"$PYTHON" "$SCRIPTS/smoke_agent_report.py" "$RUN"
