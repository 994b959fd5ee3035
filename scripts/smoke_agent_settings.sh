#!/usr/bin/env bash
# What the agentic smoke runs share (scripts/smoke_agent_pipeline.sh, scripts/smoke_agent_remote_step.sh):
# the stock mini-swe-agent they run, and their GRPO settings. Sourced after common.sh.

export MINI_SWE_AGENT_VENV="${MINI_SWE_AGENT_VENV:-/opt/mini-swe-agent}"
[ -x "$MINI_SWE_AGENT_VENV/bin/mini" ] || {
  echo "error: no mini-swe-agent at $MINI_SWE_AGENT_VENV (run scripts/install_mini_swe_agent.sh)" >&2; exit 2; }

# run_agent_rl.sh's knobs. MAX_PROMPT covers mini's first request (~1180 tokens) and, after a
# response mini cannot parse, the new branch's prompt (that request + mini's format-error message,
# ~1310: with 1280 every such episode ended in context_length_exceeded); MAX_RESPONSE every turn
# after it (gold episodes: 456-832 tokens; the gateway clamps each turn to what is left). A real
# repository's task is longer (its statement, a whole source file read back): SMOKE_AGENT_MAX_PROMPT
# and SMOKE_AGENT_MAX_RESPONSE size them (data/swe-sft/report.json gives its gold episodes' tokens).
AGENT_SMOKE_RL=(LR=1e-5 MAX_PROMPT="${SMOKE_AGENT_MAX_PROMPT:-1536}" MAX_RESPONSE="${SMOKE_AGENT_MAX_RESPONSE:-1024}"
                TEMPERATURE=1.0 TEST_FREQ=-1 AGENT_WORKERS=1
                CODERL_AGENT_SCORE=repo)
