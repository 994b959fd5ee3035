#!/usr/bin/env bash
# The whole appliance pipeline, for real, on CPU, with a tiny model made here (no downloads):
# data -> tool-call SFT -> merge -> GRPO with the code_interpreter tool in our sandbox -> LiveCodeBench
# eval of the saved checkpoint -> figures, then a short report. The real scripts run unchanged; what
# differs is scripts/smoke_profile.sh. Idempotent: every run starts again from the shipped files.
#
#   scripts/smoke_pipeline.sh [RUN_DIR]     (default outputs/smoke; the report: RUN_DIR/report.json)
#
# Knobs: SMOKE_VENV (.smoke-venv, created and kept up to date here), SMOKE_SFT_EPOCHS (30),
# SMOKE_RL_STEPS (2), SMOKE_NICE (10: each stage's niceness), CODERL_PORT (a free port),
# SMOKE_FAULT_RATE (0: off; e.g. 0.2: during RL a loopback proxy in front of the sandbox fails that
# fraction of the reward's requests, scripts/smoke_fault_proxy.py; RUN/logs/fault_proxy.jsonl).
set -euo pipefail
source "$(dirname "$0")/common.sh"
case "${1:-}" in -h|--help) sed -n '2,12p' "$0"; exit 0 ;; esac
RUN="$(mkdir -p "${1:-$CODERL_ROOT/outputs/smoke}" && cd "${1:-$CODERL_ROOT/outputs/smoke}" && pwd)"
FIXTURES="$CODERL_ROOT/tests/fixtures/smoke"
source "$CODERL_ROOT/scripts/smoke_profile.sh"
SCRIPTS="$CODERL_ROOT/scripts"
source "$SCRIPTS/smoke_stages.sh"   # stage NAME CMD..., setup_env; STAGES

rm -rf "$RUN"/{data,model,sft,rl,eval,figures,logs,report.json,stages.tsv,view.html}
mkdir -p "$RUN/logs" "$RUN/figures"
: > "$STAGES"
stage env setup_env

# The sandbox the tool, the reward and the eval talk to (the real start script, on a free port).
export CODERL_PORT="${CODERL_PORT:-$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
export CODERL_LOG_DIR="$RUN/logs" SANDBOX_URL="http://127.0.0.1:$CODERL_PORT"
FAULT_PROXY=""
cleanup() {
  [ -z "$FAULT_PROXY" ] || { kill "$FAULT_PROXY" 2>/dev/null; wait "$FAULT_PROXY" 2>/dev/null || true; }
  bash "$SCRIPTS/start_sandbox.sh" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
stage sandbox bash "$SCRIPTS/start_sandbox.sh"
# The fault switch: RL reaches the sandbox through the proxy (the eval, later, directly).
RL_SANDBOX_URL="$SANDBOX_URL"
if [ "${SMOKE_FAULT_RATE:-0}" != 0 ]; then
  start_fault_proxy "$SANDBOX_URL" "$RUN/logs/fault_proxy.jsonl"
  RL_SANDBOX_URL="$FAULT_URL"
fi

stage data bash -c "
  coderl data sft --source '$FIXTURES/sft.jsonl' --out '$RUN/data/sft' --val-fraction 0.1 &&
  coderl data rl --source '$FIXTURES/rl.jsonl' --out '$RUN/data/rl' --val-fraction 0.25 &&
  coderl data lcb --source '$FIXTURES/lcb.jsonl' --out '$RUN/data/lcb' &&
  '$PYTHON' -c 'import sys; from pathlib import Path; from coderl.data.qwen_tokenizer import build_tiny_model; build_tiny_model(Path(sys.argv[1]), hidden_size=128, num_heads=2, seed=0, vocab_ranks=8192)' '$RUN/model'"

# Tool-call SFT: enough epochs over 22 short conversations that the model writes the tool call and a
# code block every time (and, by the fixtures' design, a right or a wrong program about equally often);
# a high learning rate, as the model is random and tiny. MAX_LENGTH 768: with the tool schema an RL-style
# conversation is 475 tokens, one in LiveCodeBench's prompt 600 (at 512 verl cut their answers off).
stage sft env MODEL_PATH="$RUN/model" TRAIN_FILES="$RUN/data/sft/train.parquet" VAL_FILES="$RUN/data/sft/validation.parquet" \
  OUTPUT_DIR="$RUN/sft" EXPERIMENT=smoke-sft BATCH=4 MICRO_BATCH=4 MAX_LENGTH=768 LR=3e-3 EPOCHS="${SMOKE_SFT_EPOCHS:-30}" \
  bash "$SCRIPTS/run_toolcall_sft.sh" "${SMOKE_SFT_OVERRIDES[@]}"
SFT_CKPT="$(find "$RUN/sft" -maxdepth 1 -type d -name 'global_step_*' | sort -V | tail -n 1)"
stage merge_sft bash "$SCRIPTS/merge_checkpoint.sh" "$SFT_CKPT" "$RUN/sft/merged"

stage rl env MODEL_PATH="$RUN/sft/merged" TRAIN_FILES="$RUN/data/rl/train.parquet" VAL_FILES="$RUN/data/rl/validation.parquet" \
  OUTPUT_DIR="$RUN/rl" SANDBOX_URL="$RL_SANDBOX_URL" EXPERIMENT=smoke-rl TRAIN_BATCH=2 MINI_BATCH=2 ROLLOUT_N=4 LR=1e-5 MAX_PROMPT=512 MAX_RESPONSE=256 \
  MAX_TURNS=3 TEMPERATURE=1.0 EPOCHS=1 SAVE_FREQ="${SMOKE_RL_STEPS:-2}" TEST_FREQ=-1 \
  bash "$SCRIPTS/run_code_rl_demo.sh" "${SMOKE_RL_OVERRIDES[@]}"
# What the sandbox served during RL (only the tool and the reward used it so far).
"$PYTHON" -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + "/metrics").read().decode())' \
  "$SANDBOX_URL" > "$RUN/logs/sandbox_metrics_after_rl.txt"
RL_CKPT="$(find "$RUN/rl/checkpoints" -maxdepth 1 -type d -name 'global_step_*' | sort -V | tail -n 1)"

# LiveCodeBench-shaped eval of the SFT model (step 0) and the RL checkpoint (merged by the script),
# multi-turn with the code_interpreter tool as in training (vLLM offline, the tool in our sandbox).
EVAL_ENV=(PROBLEMS="$RUN/data/lcb" BACKEND=vllm N=4 TEMPERATURE=0.6 MAX_TOKENS=256 OUT_DIR="$RUN/eval"
          FIGURE="$RUN/figures/evaluation_progress.png")
EVAL_TOOLS=(--tools --max-turns 3)
stage eval_sft env "${EVAL_ENV[@]}" STEP=0 bash "$SCRIPTS/eval_livecodebench.sh" "$RUN/sft/merged" "${EVAL_TOOLS[@]}"
stage eval_rl env "${EVAL_ENV[@]}" bash "$SCRIPTS/eval_livecodebench.sh" "$RL_CKPT" "${EVAL_TOOLS[@]}"

stage plots bash -c "
  coderl plot training --metrics '$RUN/rl/metrics.jsonl' --rollouts '$RUN/rl/reward_samples' --out '$RUN/figures/training_progress.png' --note 'tiny-model CPU smoke run' &&
  coderl plot eval --results '$RUN/eval/results.csv' --out '$RUN/figures/evaluation_progress.png' --note 'tiny-model CPU smoke run'"
# The run's per-sample records (rl/records, written by the reward and the tool) as one HTML page.
stage view coderl view "$RUN" --out "$RUN/view.html"

"$PYTHON" "$SCRIPTS/smoke_report.py" "$RUN"
