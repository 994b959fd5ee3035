#!/usr/bin/env bash
# The layers docker/Dockerfile.cuda and docker/Dockerfile.ascend share, in one place:
#   trainer_layers.sh system   the sandbox's Debian/Ubuntu packages (docker/sandbox-apt.txt with
#                              Debian's version pins dropped: the bases are Ubuntu releases)
#   trainer_layers.sh python   coderl with its sandbox, data, eval and train extras, keeping the
#                              base image's accelerator stack (torch, torch_npu, vllm, ...) exactly
#                              as installed; verl is ours at the version pyproject.toml pins
# Run from /opt/coderl during a build. A CA bundle given as the build secret `ca-bundle` is used for
# pip's TLS (proxies that re-sign TLS, corporate CAs) and never lands in a layer.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi

case "${1:-}" in
  system)
    mapfile -t packages < <(sed -e 's/#.*//' -e 's/=.*//' -e '/^[[:space:]]*$/d' docker/sandbox-apt.txt)
    apt-get update
    apt-get install -y --no-install-recommends "${packages[@]}"
    rm -rf /var/lib/apt/lists/*
    ;;
  python)
    # Nothing of the stack preinstalled (a bare CPU base) is a valid, empty keep-file.
    pip freeze | { grep -iE '^(torch|torch[-_]npu|torchvision|torchaudio|vllm|vllm[-_]ascend|transformers|triton)==' || true; } > /tmp/keep.txt
    echo "keeping the base image's: $(tr '\n' ' ' < /tmp/keep.txt)"
    pip install -c /tmp/keep.txt ".[sandbox,data,eval,train]"
    rm /tmp/keep.txt
    python3 -c "import verl, coderl.server; print('verl', verl.__version__)"
    ;;
  *)
    echo "usage: trainer_layers.sh system|python" >&2; exit 2 ;;
esac
