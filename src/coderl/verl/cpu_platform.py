"""A CPU platform for verl 0.9.1, so the appliance's real training scripts can run a tiny model on a
machine without accelerators (scripts/smoke_pipeline.sh): the only way a training step of ours
executes in CI. GPU and NPU runs never load it.

Loaded through verl's own extension hook, no verl file patched: ``VERL_USE_EXTERNAL_MODULES=
coderl.verl.cpu_platform`` makes ``import verl`` import this module, which registers the platform, and
``VERL_PLATFORM=cpu`` selects it. verl's registry (verl/plugin/platform) knows only nvidia, npu and
rocm, and with any of those ``auto_set_device`` turns ``trainer.device=cpu`` back into cuda.

It sits at the top of the package, not in reward/, tools/ or agent/ (where the rest of our verl code
lives), because it is none of those: it is a device backend, used by the smoke profile only.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import torch
import torch.distributed
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

PLATFORM = "cpu"


class CPUDevice(ModuleType):
    """What verl calls ``get_torch_device()`` (``torch.cuda`` on GPUs): verl asks it for memory
    stats, cache flushes, streams and RNG state around every stage. On CPU there is one device,
    nothing cached to flush and no streams to wait on; the rest is torch.cpu's."""

    def __init__(self) -> None:
        super().__init__("coderl_cpu_device")

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def current_device() -> str:
        return "cpu"

    @staticmethod
    def get_device_name(*_: Any) -> str:
        return "cpu"

    @staticmethod
    def set_device(*_: Any) -> None:
        return None

    @staticmethod
    def synchronize(*_: Any) -> None:
        return None

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def ipc_collect() -> None:
        return None

    @staticmethod
    def set_per_process_memory_fraction(*_: Any) -> None:
        return None

    @staticmethod
    def memory_allocated(*_: Any) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    @staticmethod
    def reset_peak_memory_stats(*_: Any) -> None:
        return None

    @staticmethod
    def mem_get_info(*_: Any) -> tuple[int, int]:
        """(free, total) bytes of host memory: verl logs it and sizes buffers from it."""
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page

    @staticmethod
    def manual_seed(seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    @staticmethod
    def get_rng_state(*_: Any) -> torch.Tensor:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, *_: Any) -> None:
        torch.set_rng_state(state)


@PlatformRegistry.register(platform=PLATFORM)
class PlatformCPU(PlatformBase):
    """verl's platform interface on the host CPU: gloo collectives, no IPC (verl then moves weights
    to the rollout through shared memory), no profiler. Ray still schedules verl's workers on a
    logical "GPU" (the smoke profile starts Ray with num_gpus=1), because verl's resource pools
    count accelerators by that name."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return _DEVICE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Never auto-detected: only an explicit VERL_PLATFORM=cpu selects it.
        return False

    def current_device(self) -> str:  # type: ignore[override]
        # verl moves tensors with `.to(get_device_id())`: an int there means accelerator N, which
        # torch refuses without one; "cpu" is what torch.cpu.current_device() answers too.
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        # Ray sets it for actors that hold a (logical) GPU; verl reads it to number its workers.
        return "CUDA_VISIBLE_DEVICES"

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


_DEVICE = CPUDevice()
_init_process_group = torch.distributed.init_process_group


def _gloo_only(*args: Any, **kwargs: Any) -> Any:
    """verl's ``initialize_global_process_group[_ray]`` asks for ``f"cpu:gloo,{device}:{backend}"``,
    which on this platform is ``cpu:gloo,cpu:gloo``: torch rejects a device named twice. One gloo
    group serves both."""
    if os.environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM:
        backend = kwargs.get("backend")
        if isinstance(backend, str) and set(backend.split(",")) == {"cpu:gloo"}:
            kwargs["backend"] = "gloo"
    return _init_process_group(*args, **kwargs)


torch.distributed.init_process_group = _gloo_only


def _keep_vllm_weights_reloadable() -> None:
    """vLLM's CPU linear layers hand their weight to a oneDNN handle after loading and put an empty
    Parameter without a ``weight_loader`` in its place (vllm/model_executor/layers/utils.py,
    dispatch_cpu_unquantized_gemm): verl's weight sync into the rollout then fails on the first
    linear layer, and could not reach the packed copy anyway. Without oneDNN, vLLM keeps the plain
    weight and uses torch's linear. Done in the rollout's worker, which imports vLLM before verl."""
    if "vllm" in sys.modules:
        import vllm._custom_ops as vllm_ops

        vllm_ops._supports_onednn = False


if os.environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM:
    _keep_vllm_weights_reloadable()
