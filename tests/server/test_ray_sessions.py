"""Session replicas on a two-node Ray cluster (two raylets on this machine, `tests.helpers.ray_cluster`):
placement by the ``coderl_sandbox`` resource, 64 concurrent episodes over both nodes, a sandbox
node killed mid-episode, a replica frozen mid-episode, a replica restarted under load.

An episode is what the agent loop does with a session (open, commands, file edits, finish -> diff,
close; 2 in 8 on a builtin repository task, its gold fix applied and graded on the node),
through the real client (`ReplicaSessions` -> `RemoteSession`). Its outcome is classified
as the agent loop classifies it (`coderl.verl.agent_loop`): a `CoderlError` out of the session is
``sandbox_error`` (the sample is masked, never scored), anything else is scored on its diff. The
tests assert that no episode ends WRONG (a diff that is not the episode's own, or a bad command
output): an infrastructure failure is always a sandbox error, never a wrong answer.

Every wait is bounded and says what it waited for (tests/helpers/poll.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from coderl.client import SessionService
from coderl.errors import CoderlError
from coderl.sandbox.session import SessionLimits
from coderl.server.ray_sessions import ACTOR_PREFIX, Placement, ReplicaSessions, SessionFleet
from coderl.server.settings import Settings
from coderl.swe.task import RepoTask
from coderl.swe.task_set import build_task_set
from tests.helpers.poll import wait_for, wait_for_async
from tests.helpers.ray_cluster import free_port_range, sandbox_cluster
from tests.helpers.require import require_import

pytestmark = [pytest.mark.ray, pytest.mark.slow]

EPISODES = 64
PER_REPLICA = 32  # each sandbox node holds one replica of 32 sessions: 64 episodes fill both
EPISODE_S = 40.0  # each episode's budget (its deadline)
GRACE_S = 30.0  # what the client waits past a command's budget (coderl.client._EXEC_GRACE_S)
CALL_S = 20.0  # the client's timeout for one call that is not a command (open, edit, close)
LATEST_S = EPISODE_S + GRACE_S + CALL_S  # a sample's worst case: its last command, then the close
LIMITS = SessionLimits(episode_s=EPISODE_S, exec_s=20.0, memory_mb=256, max_processes=64, disk_mb=64, tmp_mb=32)


@dataclass
class Outcome:
    index: int
    replica: str = ""
    diff: str | None = None
    sandbox_error: str = ""  # the CoderlError that made it one
    wrong: str = ""  # a wrong result (must never happen)
    started: float = 0.0
    ended: float = 0.0

    @property
    def seconds(self) -> float:
        return self.ended - self.started


def expected_diff_lines(i: int) -> list[str]:
    return [f"+{i}", "+y"]


@dataclass
class Barrier:
    """Holds every episode in its middle (session open, work done, nothing finished) until the
    test has done its damage."""

    arrived: int = 0
    go: asyncio.Event = field(default_factory=asyncio.Event)


async def episode(sessions: ReplicaSessions, i: int, barrier: Barrier | None = None,
                  task: RepoTask | None = None) -> Outcome:
    """Commands and edits in an empty work tree, finish -> diff, close; with ``task``, also its
    gold fix applied and the episode graded on its node (resolved, reward 1)."""
    out = Outcome(i, started=time.monotonic())
    try:
        session = await sessions.open(task.to_row() if task else None, limits=LIMITS)
        out.replica = sessions.replica_of[session.id]
        try:
            r = await session.exec(f"printf '{i}\\n' > n.txt && cat n.txt")
            if r.exit_code != 0 or r.stdout != f"{i}\n":
                out.wrong = f"first command: exit {r.exit_code} {r.stdout!r} {r.stderr!r}"
            await session.create("b.txt", "x\n")
            await session.str_replace("b.txt", "x", "y")
            if barrier is not None:
                barrier.arrived += 1
                await barrier.go.wait()
            r = await session.exec("sleep 0.2; cat n.txt b.txt")
            if r.stdout != f"{i}\ny\n":
                out.wrong = f"second command: exit {r.exit_code} {r.stdout!r} {r.stderr!r}"
            if task is not None:
                r = await session.exec("git apply", stdin=task.gold_patch.encode())
                out.wrong = out.wrong or (f"git apply: exit {r.exit_code} {r.stderr!r}" if r.exit_code else "")
            out.diff = await session.finish()
            added = {line for line in out.diff.splitlines() if line.startswith("+") and not line.startswith("+++")}
            if not set(expected_diff_lines(i)) <= added:
                out.wrong = out.wrong or f"diff adds {sorted(added)[:6]}, expected {expected_diff_lines(i)} among them"
            if task is not None:
                graded = await session.grade()
                if graded["status"] == "sandbox_error":  # the grader's infrastructure: ours, masked
                    out.sandbox_error = f"grade: {graded.get('log', '')[-200:]}"
                elif (graded["status"], graded["reward"]) != ("resolved", 1.0):
                    out.wrong = out.wrong or f"graded {graded['status']} reward {graded['reward']}"
        finally:
            await session.close()
    except CoderlError as exc:  # the agent loop's rule: our failure, the sample is masked
        out.sandbox_error = f"{type(exc).__name__}: {exc}"[:300]
    out.ended = time.monotonic()
    return out


async def run_episodes(urls: list[str], n: int, *, damage=None, what: str) -> list[Outcome]:
    """``n`` concurrent episodes over the replicas; with ``damage`` (a callable, run in a thread),
    every episode is held in its middle until it has run. Bounded: an episode that outlives its
    deadline plus the client's grace fails the test by name."""
    barrier = Barrier() if damage else None
    sessions = ReplicaSessions(urls, timeout_s=CALL_S)
    try:
        tasks = [asyncio.ensure_future(episode(sessions, i, barrier, graded_task(i))) for i in range(n)]
        if barrier is not None:
            await wait_for_async(lambda: barrier.arrived + sum(t.done() for t in tasks), lambda k: k == n,
                                 what=f"all {n} episodes in their middle ({what})", timeout_s=240)
            await asyncio.to_thread(damage)
            barrier.go.set()
        _, pending = await asyncio.wait(tasks, timeout=LATEST_S + 60)
        for task in pending:
            task.cancel()
        assert not pending, f"{len(pending)} episodes still running {LATEST_S + 60:g} s after the release"
        return [t.result() for t in tasks]
    finally:
        await sessions.aclose()


def summary(outcomes: list[Outcome]) -> str:
    by_replica: dict[str, list[int]] = {}
    for o in outcomes:
        by_replica.setdefault(o.replica, []).append(o.index)
    errors = {o.index: o.sandbox_error for o in outcomes if o.sandbox_error}
    return (f"replicas {[(url, len(ix)) for url, ix in by_replica.items()]}; sandbox errors "
            f"{len(errors)}: {list(errors.items())[:3]}; wrong {[(o.index, o.wrong) for o in outcomes if o.wrong][:3]}")


GRADED: list[RepoTask] = []  # 2 episodes in 8 work on one of these builtin tasks and are graded
SWE_REPOS: list[str] = []  # their repositories (the replicas' CODERL_SWE_REPOS)


def graded_task(i: int) -> RepoTask | None:
    """Episodes 0 and 7 of every 8: one even, one odd, so both replicas grade (sessions are opened
    on the replicas in turn, in the order the episodes start)."""
    return GRADED[i % len(GRADED)] if i % 8 in (0, 7) else None


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    require_import("ray", "ray is not installed (the dev extras: scripts/setup.sh dev)")
    import ray

    root = tmp_path_factory.mktemp("swe")
    GRADED[:] = build_task_set(root, "train")[:2]
    SWE_REPOS[:] = [str(root / "repos")]
    with sandbox_cluster(2, PER_REPLICA) as cluster:
        host = ray.util.get_node_ip_address()
        fleet = SessionFleet(Settings(slots=1, queue=64),
                             Placement(replicas=2, episodes_per_replica=PER_REPLICA,
                                       port_base=free_port_range(host, 4), ports=4,
                                       env={"CODERL_SWE_REPOS": SWE_REPOS[0], "CODERL_SESSION_POOL": "2"}))
        fleet.start()
        urls: list[str] = []
        try:
            urls = fleet.wait_ready(timeout_s=240)
            yield cluster, fleet
        finally:
            fleet.stop()
            for url in urls:  # the replicas' session directories (nothing is mounted there any more)
                shutil.rmtree(replica_dir(url), ignore_errors=True)


def replica_dir(url: str) -> str:
    """The session directory of the replica at ``url`` (named by its port, `ReplicaServer`)."""
    return os.path.join(tempfile.gettempdir(), f"coderl-replica-{url.rsplit(':', 1)[1]}")


async def warm_open(url: str) -> bool:
    """Whether a session opened on the replica at ``url`` came from its warm pool (closed again)."""
    async with SessionService(url, timeout_s=CALL_S) as service:
        session = await service.open(limits=LIMITS)
        await session.close()
        return session.warm


def layers_mounted(url: str) -> list[str]:
    """Mount points under the replica's session directory left by processes that are gone (a
    layer is named ``<pid>-<n>`` after the replica that mounted it; a live replica's warm pool
    and open sessions are not leftovers)."""
    layers = os.path.join(replica_dir(url), "layers") + "/"
    with open("/proc/mounts") as fh:
        points = [line.split()[1] for line in fh if line.split()[1].startswith(layers)]
    return [p for p in points if not os.path.exists(f"/proc/{p[len(layers):].split('-')[0]}")]


def replicas_by_node(fleet: SessionFleet) -> dict[str, dict]:
    return {r["node_id"]: r for r in fleet.replicas(timeout_s=10)}


def test_replicas_are_placed_on_the_sandbox_nodes_only(fleet):
    """One replica per sandbox node (each node's whole capacity), none on the head node, which
    stands for the trainer's and advertises no coderl_sandbox."""
    cluster, fleet = fleet
    placed = replicas_by_node(fleet)
    sandbox_ids = {n.node_id for n in cluster.sandbox_nodes}
    assert set(placed) == sandbox_ids, f"replicas on {sorted(placed)}, sandbox nodes {sorted(sandbox_ids)}"


def test_64_episodes_spread_over_both_nodes(fleet):
    cluster, fleet = fleet
    urls = fleet.urls(timeout_s=10)
    started = time.monotonic()
    outcomes = asyncio.run(run_episodes(urls, EPISODES, what="no damage"))
    took = time.monotonic() - started
    assert not any(o.wrong or o.sandbox_error for o in outcomes), summary(outcomes)
    per_replica = {url: sum(o.replica == url for o in outcomes) for url in urls}
    assert all(per_replica.values()), f"an idle replica: {per_replica}"
    graded_on = {o.replica for o in outcomes if graded_task(o.index)}
    assert graded_on == set(urls), f"graded episodes only on {graded_on}"
    print(f"64 episodes over {per_replica} in {took:.1f} s")



def assert_lost_replica(outcomes: list[Outcome], victim_url: str, what: str) -> None:
    """A replica lost mid-episode: its episodes are sandbox errors, the others are untouched,
    none is a wrong result, and none ran past its deadline."""
    on_victim = [o for o in outcomes if o.replica == victim_url]
    others = [o for o in outcomes if o.replica != victim_url]
    assert on_victim and others, summary(outcomes)
    assert not any(o.wrong for o in outcomes), summary(outcomes)
    assert all(o.sandbox_error for o in on_victim), summary(on_victim)
    assert not any(o.sandbox_error for o in others), summary(others)
    late = [(o.index, round(o.seconds, 1)) for o in outcomes if o.seconds > LATEST_S]
    assert not late, f"episodes past their deadline ({LATEST_S:g} s): {late}"
    print(f"{what}: {summary(outcomes)}; longest episode {max(o.seconds for o in outcomes):.1f} s")

def test_a_killed_node_is_sandbox_errors_the_rest_go_on_and_the_pool_recovers(fleet):
    """A sandbox node killed with 64 episodes in their middle: its episodes are sandbox errors,
    within their deadline; the other node's episodes finish right. While it is down, sessions open
    on the survivor (the same URL list: the dead replica is passed over); when it is back, its
    replica is restarted there by Ray, on its old URL, all 64 episodes of a new wave finish, and its
    warm pool hands out started sandboxes again."""
    cluster, fleet = fleet
    urls = fleet.urls(timeout_s=10)
    victim_node = cluster.sandbox_nodes[-1]
    victim = replicas_by_node(fleet)[victim_node.node_id]
    killed: list[int] = []
    outcomes = asyncio.run(run_episodes(urls, EPISODES, damage=lambda: killed.extend(cluster.kill_node(victim_node)),
                                        what="a node to kill"))
    assert victim["pid"] in killed, f"the victim replica {victim} was not among the killed processes {killed}"
    assert_lost_replica(outcomes, victim["url"], "node killed")

    wait_for(lambda: fleet.urls(timeout_s=5), lambda live: live == [u for u in urls if u != victim["url"]],
             what="only the survivor's replica live while the node is down", timeout_s=60)
    down = asyncio.run(run_episodes(urls, 8, what="node down"))
    assert not any(o.wrong or o.sandbox_error for o in down), summary(down)

    cluster.add_sandbox_node(PER_REPLICA)
    back = wait_for(lambda: fleet.urls(timeout_s=5), lambda live: len(live) == 2,
                    what="the victim's replica restarted on the node that came back", timeout_s=240)
    assert back == urls, f"replica URLs {back} after the node came back, {urls} before"
    outcomes = asyncio.run(run_episodes(urls, EPISODES, what="after recovery"))
    assert not any(o.wrong or o.sandbox_error for o in outcomes), summary(outcomes)
    assert {o.replica for o in outcomes} == set(urls), summary(outcomes)
    # its warm pool is back too: learned from the wave's opens, refilled in the background
    asyncio.run(wait_for_async(lambda: warm_open(victim["url"]), what="a warm session from the restarted replica",
                               timeout_s=120))
    # the killed replica's layers (here the "node" shares this machine's mounts) were unmounted by
    # its successor on the same port; its own episodes closed theirs
    assert not layers_mounted(victim["url"]), layers_mounted(victim["url"])[:4]


def test_a_frozen_replica_keeps_no_episode_past_its_deadline(fleet):
    """A machine that stops answering (SIGSTOP: connections stay open, nothing comes back) is
    what a lost node looks like to the trainer until TCP gives up: the episodes on it end as
    sandbox errors within their budget plus the client's grace, and the others go on."""
    cluster, fleet = fleet
    urls = fleet.urls(timeout_s=10)
    victim = fleet.replicas(timeout_s=10)[0]

    def freeze() -> None:
        os.kill(victim["pid"], signal.SIGSTOP)

    try:
        outcomes = asyncio.run(run_episodes(urls, EPISODES // 4, damage=freeze, what="a replica to freeze"))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim["pid"], signal.SIGCONT)
    assert_lost_replica(outcomes, victim["url"], "replica frozen")
    wait_for(lambda: fleet.urls(timeout_s=5), lambda live: live == urls, what="the thawed replica answering",
             timeout_s=120)


def test_a_replica_restarted_under_load_loses_no_finished_result(fleet):
    """Half the episodes finish (their diffs back), then a replica's process is killed and Ray
    restarts it while the other half are in their middle: every finished result is kept and
    right, every unfinished episode on the restarted replica is a sandbox error (never a wrong
    diff), and the restarted replica serves new sessions on its old URL."""
    cluster, fleet = fleet
    import ray

    urls = fleet.urls(timeout_s=10)
    victim = fleet.replicas(timeout_s=10)[0]

    async def main() -> tuple[list[Outcome], list[Outcome]]:
        first = await run_episodes(urls, EPISODES // 2, what="first half")

        def restart() -> None:
            ray.kill(fleet.actors[victim["replica"]], no_restart=False)

        second = await run_episodes(urls, EPISODES // 2, damage=restart, what="a replica to restart")
        return first, second

    first, second = asyncio.run(main())
    assert not any(o.wrong or o.sandbox_error for o in first), summary(first)
    finished = {o.index: o.diff for o in first}
    assert all(diff and "+y" in diff for diff in finished.values()), finished
    assert not any(o.wrong for o in second), summary(second)
    assert all(o.sandbox_error for o in second if o.replica == victim["url"]), summary(second)
    assert not any(o.sandbox_error for o in second if o.replica != victim["url"]), summary(second)
    print(f"replica restarted: first half {summary(first)}; second half {summary(second)}")
    restarted = wait_for(lambda: fleet.replicas(timeout_s=5), lambda rs: len(rs) == 2,
                         what="the restarted replica answering", timeout_s=240)
    assert [r["url"] for r in restarted] == urls and victim["pid"] not in {r["pid"] for r in restarted}, restarted
    again = asyncio.run(run_episodes(urls, 8, what="after the restart"))
    assert not any(o.wrong or o.sandbox_error for o in again) and {o.replica for o in again} == set(urls), \
        summary(again)
    assert not layers_mounted(victim["url"]), layers_mounted(victim["url"])[:4]


def test_a_stopped_fleet_leaves_nothing_mounted(fleet):
    """Stopping the fleet (what `coderl serve --ray` does on Ctrl-C) closes every replica's sessions,
    including those the frozen replica's clients abandoned, before the actors end."""
    cluster, fleet = fleet
    urls = fleet.urls(timeout_s=10)
    fleet.stop()
    left = {url: layers_mounted(url) for url in urls}
    assert not any(left.values()), left


def test_coderl_serve_places_replicas_and_stops_them_on_sigterm(fleet, tmp_path):
    """The command of docs/deploy.md on this cluster (after the test above stopped the fixture's
    fleet, so the capacity is free): `coderl serve --ray --episodes-per-replica 32` prints one
    replica URL per sandbox node, episodes run on both, and SIGTERM stops the replicas with their
    sessions closed and exits 0."""
    import ray

    cluster, _ = fleet
    port = free_port_range(ray.util.get_node_ip_address(), 4)
    env = {**os.environ, "RAY_ADDRESS": cluster.cluster.address, "CODERL_SWE_REPOS": SWE_REPOS[0]}  # passed on to replicas
    log = tmp_path / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([str(Path(sys.executable).with_name("coderl")), "serve", "--ray",
                                 "--episodes-per-replica", str(PER_REPLICA), "--port", str(port), "--slots", "1"],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    printed: list[str] = []
    reader = threading.Thread(target=lambda: printed.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        urls = wait_for(lambda: [line.strip() for line in printed if line.startswith("http")],
                        lambda found: bool(found) or proc.poll() is not None, timeout_s=240,
                        what="coderl serve to print the replica URLs")
        assert urls, f"coderl serve exited {proc.returncode}: {log.read_text()[-2000:]}"
        urls = urls[0].split(",")
        assert len(urls) == 2, urls
        outcomes = asyncio.run(run_episodes(urls, 8, what="through coderl serve"))
        assert not any(o.wrong or o.sandbox_error for o in outcomes), summary(outcomes)
        assert {o.replica for o in outcomes} == set(urls), summary(outcomes)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=180)
    assert code == 0, f"coderl serve exited {code} on SIGTERM: {log.read_text()[-2000:]}"
    wait_for(lambda: [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                      if a["name"].startswith(ACTOR_PREFIX)], lambda names: not names, timeout_s=60,
             what="no session replica left in the cluster")
    left = {url: layers_mounted(url) for url in urls}
    assert not any(left.values()), left
    for url in urls:
        shutil.rmtree(replica_dir(url), ignore_errors=True)
