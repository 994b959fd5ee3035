"""Task images pre-pulled onto the machines that run episodes: ``coderl images pull REF...``.

An image-backed episode or grading run unpacks its image on first use (``image_rootfs.unpack``:
pull when missing, export, unpack into the node's ``CODERL_CACHE``); on a training run that first
use would stall an episode for the pull (minutes for a SWE-bench image) and needs the registry at
training time. ``pull`` does it ahead: here, or with ``--ray`` on every alive node of the Ray
cluster that advertises the sandbox resource (the placement ``coderl serve --ray`` uses; ``--resource
''`` for every alive node, e.g. the trainer nodes whose agent-loop workers run image episodes
today), one task pinned to each node (``NodeAffinitySchedulingStrategy``, no CPU asked), images
one after another per node. Each node's cache is its own (node-local disk, as for snapshots).
"""

from __future__ import annotations

import argparse
import json
import socket
import time
from pathlib import Path
from typing import Any

from coderl.errors import BadRequest, ImageUnavailable
from coderl.server.ray_sessions import SANDBOX_RESOURCE


def unpack_here(references: list[str], cache_dir: str | None) -> dict[str, Any]:
    """Pull (when missing) and unpack each reference on this machine: {node, images: {ref: {id, s} | {error}}}.
    A reference that is a path here is built: a Harbor task directory is its image (the one task.toml
    names, else its environment/ built), a Dockerfile or a build context (a row's ``image``) is built;
    each under the tag a service looks it up by (`coderl.sandbox.image_build`)."""
    from coderl.cache import default_cache_dir
    from coderl.errors import InvalidTask
    from coderl.sandbox.image_build import DockerfileImage, names_dockerfile
    from coderl.sandbox.image_rootfs import unpack
    from coderl.swe.harbor import HarborTask

    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    images: dict[str, Any] = {}
    for ref in references:
        t0 = time.monotonic()
        try:
            if (Path(ref) / "instruction.md").is_file():
                ref_image = HarborTask.from_dir(ref).built_image()
            elif Path(ref).exists() or names_dockerfile(ref):  # an absolute path is never a reference
                ref_image = DockerfileImage.from_path(ref).built()
            else:
                ref_image = ref
            images[ref] = {"id": unpack(ref_image, cache).image_id[:12], "s": round(time.monotonic() - t0, 1)}
        except (ImageUnavailable, InvalidTask) as exc:
            images[ref] = {"error": str(exc)}
    return {"node": socket.gethostname(), "images": images}


def pull_on_nodes(references: list[str], cache_dir: str | None, resource: str = SANDBOX_RESOURCE) -> list[dict[str, Any]]:
    """``unpack_here`` on every alive node of the connected Ray cluster with ``resource`` (every
    alive node when empty)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n["Alive"] and (not resource or n["Resources"].get(resource, 0) > 0)]
    if not nodes:
        raise BadRequest(f"no alive node of this Ray cluster advertises {resource!r}")
    task = ray.remote(num_cpus=0)(unpack_here)
    return ray.get([task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                    .remote(references, cache_dir) for n in nodes])


def register(subparsers: argparse._SubParsersAction) -> None:
    images = subparsers.add_parser("images", help="task images: pre-pull and unpack them where episodes run")
    sub = images.add_subparsers(dest="images_command", metavar="SUBCOMMAND")
    sub.required = True
    p = sub.add_parser("pull", help="pull (when missing) and unpack images into the cache, here or on every "
                                    "sandbox node of a Ray cluster",
                       description="Each REF is unpacked once per image id into $CODERL_CACHE/images (or --cache "
                                   "on each node). Prints one JSON line per node; exit 1 when an image failed.")
    p.add_argument("references", nargs="+", metavar="REF",
                   help="an image reference the node's podman can pull or has, a Harbor task directory (its image), "
                        "or a Dockerfile or build context to build (a row's image that names one)")
    p.add_argument("--cache", help="the cache directory on every node (default: its $CODERL_CACHE or ~/.cache/coderl)")
    p.add_argument("--ray", action="store_true", help="on the nodes of the Ray cluster (ray.init(address='auto'))")
    p.add_argument("--resource", default=SANDBOX_RESOURCE,
                   help=f"with --ray: the nodes advertising this resource (default {SANDBOX_RESOURCE}; '' = all)")
    p.set_defaults(func=_pull)


def _pull(args: argparse.Namespace) -> int:
    if args.ray:
        import ray

        ray.init(address="auto", namespace="coderl", log_to_driver=False)
        results = pull_on_nodes(args.references, args.cache, args.resource)
    else:
        results = [unpack_here(args.references, args.cache)]
    for result in results:
        print(json.dumps(result))
    return 1 if any("error" in v for r in results for v in r["images"].values()) else 0
