#!/usr/bin/env bash
# The training images' Python layers (docker/Dockerfile.cuda and docker/Dockerfile.ascend share them):
#   trainer_python.sh deps     coderl's dependencies with its sandbox, data, eval and train extras,
#                              from pyproject.toml alone (so a change under src/ keeps this layer),
#                              keeping the base image's accelerator stack (torch, torch_npu, vllm,
#                              transformers, ...) exactly as installed; verl at pyproject.toml's pin
#   trainer_python.sh coderl   coderl itself, no dependencies
# Run from /opt/coderl during a build. A CA bundle given as the build secret `ca-bundle` is used for
# pip's TLS (proxies that re-sign TLS, corporate CAs) and never lands in a layer.
set -euo pipefail
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi

case "${1:-}" in
  deps)
    # Nothing of the stack preinstalled (a bare base) is a valid, empty keep-file.
    pip freeze | { grep -iE '^(torch|torch[-_]npu|torchvision|torchaudio|vllm|vllm[-_]ascend|transformers|triton)==' || true; } > /tmp/keep.txt
    echo "keeping the base image's: $(tr '\n' ' ' < /tmp/keep.txt)"
    # an empty package with coderl's metadata: pip resolves its extras without the sources
    shell="$(mktemp -d)"
    cp pyproject.toml "$shell/" && touch "$shell/README.md"
    mkdir -p "$shell/src/coderl" && touch "$shell/src/coderl/__init__.py"
    pip install -c /tmp/keep.txt "$shell[sandbox,data,eval,train]"
    pip uninstall -y coderl
    rm -rf "$shell" /tmp/keep.txt
    ;;
  coderl)
    pip install --no-deps .
    python3 -c "import verl, coderl.server; print('verl', verl.__version__)"
    ;;
  *)
    echo "usage: trainer_python.sh deps|coderl" >&2; exit 2 ;;
esac
