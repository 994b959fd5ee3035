"""This service process's one setup for repository, image and Harbor tasks: the node's settings
(`RegistryConfig`, read once from the environment), one session host and one `LocalEpisodes`
(`coderl.swe.episodes`: every task kind, one bound on grading sandboxes, ``CODERL_SWE_CONCURRENCY``),
shared by ``POST /v1/swe/grade`` (`server.swe`) and the session registry (`server.sessions`: its
sessions and ``/v1/sessions/{id}/grade``). Made on first use: a service that never serves a task
mounts nothing and makes no cgroup. A node never pulls or builds an image while a request waits
(``fetch=False``: `coderl.server.image_tasks`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from fastapi import FastAPI

from coderl.server.session_registry import RegistryConfig
from coderl.swe.episodes import LocalEpisodes

_lock = asyncio.Lock()


@dataclass
class Node:
    config: RegistryConfig
    episodes: LocalEpisodes


async def node_of(app: FastAPI) -> Node:
    """The app's node, made and started on first use."""
    state = app.state
    async with _lock:
        if getattr(state, "node", None) is None:
            config = RegistryConfig.from_env()
            episodes = config.episodes()
            episodes.host.start()
            state.node = Node(config, episodes)
    return state.node  # type: ignore[no-any-return]


async def close_node(app: FastAPI) -> None:
    """The lifespan's end (after the sessions are closed): the host's sandboxes and cgroups."""
    node = getattr(app.state, "node", None)
    if node is not None:
        app.state.node = None
        await node.episodes.aclose()
        await node.episodes.host.close()
