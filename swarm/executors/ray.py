"""The Ray executor: sub-agent attempts run on async host actors spread over a Ray cluster.

Only *where a worker runs* changes. The scheduler, the DAG, retries, budgets, the adaptive
limit and the durable store stay in the driver; each role's worker is replaced by a proxy
with the same signature that ships one attempt to a host actor and replays what happened
there (model calls, agent steps and tool calls, spawns) into the driver's context, so usage,
the token budget, `model_called` events and the adaptive limit behave as they do locally.

Hosts: one async actor per node that has CPUs (or `hosts` actors, round-robin over those
nodes), `max_concurrency=10_000`, `max_restarts=-1`, `max_task_retries=0`. Ray advises
against tasks under ~10 ms, so sub-agents are not tasks: the attempts submitted in one turn
of the driver's event loop go to a host as one streaming actor call (`run_batch`), whose
replies come back as they finish; model calls stay inside the host (no Ray hop per call).

Faults: an attempt whose host dies (node lost, actor killed) is resubmitted to another live
host, a bounded number of times, without counting as an attempt; the driver commits each
subtask's result once. The driver's subtask timeout cancels the proxy, which cancels that
attempt on its host (`cancel_attempt`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.executors._errors import HostLostError, decode_error
from kimmy_swarm.swarm.executors._host import AttemptHost, Payload, Reply
from kimmy_swarm.swarm.worker import Worker

#: Ray errors after which an attempt is resubmitted to another host (it never returned).
_LOST = tuple(
    getattr(ray.exceptions, name)
    for name in ("RayActorError", "ObjectLostError", "OwnerDiedError", "ActorUnschedulableError")
    if hasattr(ray.exceptions, name)
)
_RemoteHost = ray.remote(AttemptHost)


class _Item:
    """One attempt waiting for its host's reply."""

    __slots__ = ("fut", "key", "payload", "subtask_id", "tries")

    def __init__(self, key: int, payload: Payload, fut: asyncio.Future[Reply], sid: str) -> None:
        self.key = key
        self.payload = payload
        self.fut = fut
        self.subtask_id = sid
        self.tries = 0


def _host_lost(subtask_id: str, live: int) -> HostLostError:
    return HostLostError(
        f"subtask {subtask_id!r}: its Ray host was lost too often, or none is left "
        f"({live} live hosts)"
    )


class _Host:
    __slots__ = ("actor", "node_id", "outstanding")

    def __init__(self, actor: Any, node_id: str) -> None:
        self.actor = actor
        self.node_id = node_id
        self.outstanding = 0


def _worker_nodes() -> list[str]:
    """Alive nodes that have CPUs (a head started with `num_cpus=0` runs no sub-agents)."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    working = [n for n in alive if n.get("Resources", {}).get("CPU", 0) > 0] or alive
    return [n["NodeID"] for n in working]


class RayExecutor:
    """Host actors on a Ray cluster, and the proxy workers that use them.

    Args:
        workers: the swarm's workers by role (pickled once per host with cloudpickle).
        model: the swarm's model, or None (it must pickle; `OpenAIChat` and `BalancedChat`
            rebuild themselves without live connections).
        address: the cluster to join when Ray is not initialized yet (`auto`,
            `ray://…`, `HOST:PORT`); None starts a local Ray.
        hosts: how many host actors (default: one per node with CPUs).
        max_resubmits: how often one attempt may be resubmitted after its host was lost.
    """

    def __init__(
        self,
        workers: Mapping[str, Worker],
        model: Any | None,
        *,
        address: str | None = None,
        hosts: int | None = None,
        max_resubmits: int = 3,
    ) -> None:
        self.workers = dict(workers)
        self.model = model
        self.address = address
        self.n_hosts = hosts
        self.max_resubmits = max_resubmits
        self.hosts: list[_Host] = []
        self.lost_hosts = 0
        self.resubmits = 0
        self._owns_ray = False
        self._next = itertools.count()
        self._keys = itertools.count()
        self._queue: list[_Item] = []
        self._placed: dict[int, _Host] = {}
        self._drains: set[asyncio.Task[None]] = set()

    # --- hosts ----------------------------------------------------------------------------

    def _new_host(self, node_id: str) -> _Host:
        actor = _RemoteHost.options(
            num_cpus=0,
            max_concurrency=10_000,
            max_restarts=-1,
            max_task_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(self.workers, self.model)
        return _Host(actor, node_id)

    async def start(self) -> None:
        """Join (or start) Ray and create the host actors; returns once they answer."""
        if self.hosts:
            return
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, logging_level="ERROR")
            self._owns_ray = True
        nodes = _worker_nodes()
        count = self.n_hosts or len(nodes)
        hosts = [self._new_host(nodes[i % len(nodes)]) for i in range(count)]
        infos = await asyncio.gather(*(h.actor.info.remote() for h in hosts))
        for host, info in zip(hosts, infos, strict=True):
            host.node_id = info["node_id"]
        self.hosts = hosts

    def _pick(self) -> _Host:
        """The host with the fewest attempts in flight (ties: round-robin)."""
        hosts = self.hosts
        start = next(self._next) % len(hosts)
        best = hosts[start]
        for k in range(1, len(hosts)):
            h = hosts[(start + k) % len(hosts)]
            if h.outstanding < best.outstanding:
                best = h
        return best

    def _lost(self, host: _Host) -> None:
        """Stop using a dead host; replace it by a fresh one on a live node."""
        if host not in self.hosts:
            return  # another attempt on the same host got here first
        self.hosts.remove(host)
        self.lost_hosts += 1
        nodes = _worker_nodes()
        used = {h.node_id for h in self.hosts}
        fresh = [n for n in nodes if n not in used and n != host.node_id]
        target = fresh[0] if fresh else (nodes[0] if nodes else None)
        wanted = self.n_hosts or len(nodes)
        if target is not None and (not self.hosts or len(self.hosts) < wanted):
            self.hosts.append(self._new_host(target))

    def host_stats(self) -> list[dict[str, Any]]:
        """Per live host: its node id, process id and how many attempts it started."""
        return ray.get([h.actor.info.remote() for h in self.hosts])

    def shutdown(self) -> None:
        """Kill the host actors (and Ray itself when this executor started it)."""
        hosts, self.hosts = self.hosts, []
        for host in hosts:
            ray.kill(host.actor, no_restart=True)
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False

    # --- attempts -------------------------------------------------------------------------

    def proxies(self) -> dict[str, Worker]:
        """A proxy worker per role: same signature, runs the attempt on a host."""
        return {role: self._proxy(role) for role in self.workers}

    def _proxy(self, role: str) -> Worker:
        async def on_ray(ctx: SubtaskContext) -> Any:
            return await self.run_attempt(role, ctx)

        on_ray.__qualname__ = f"on_ray[{role}]"
        return on_ray

    async def _submit(self, payload: Payload, subtask_id: str) -> Reply:
        """Run the attempt on a host (batched with the attempts submitted in the same turn
        of the event loop); resubmitted while hosts are lost under it."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Reply] = loop.create_future()
        key = next(self._keys)
        self._enqueue(_Item(key, payload, fut, subtask_id), loop)
        try:
            return await fut
        except asyncio.CancelledError:  # the driver's timeout or the run's cancellation
            host = self._placed.pop(key, None)
            if host is not None:
                host.actor.cancel_attempt.remote(key)
            raise

    def _enqueue(self, item: _Item, loop: asyncio.AbstractEventLoop) -> None:
        if not self._queue:
            loop.call_soon(self._flush)
        self._queue.append(item)

    def _flush(self) -> None:
        """Send the queued attempts: one streaming actor call per host."""
        items, self._queue = [i for i in self._queue if not i.fut.done()], []
        if not items:
            return
        if not self.hosts:
            for item in items:
                item.fut.set_exception(_host_lost(item.subtask_id, len(self.hosts)))
            return
        per = -(-len(items) // len(self.hosts))
        for k in range(0, len(items), per):
            chunk = items[k : k + per]
            host = self._pick()
            host.outstanding += len(chunk)
            for item in chunk:
                self._placed[item.key] = host
            gen = host.actor.run_batch.remote([(i.key, i.payload) for i in chunk])
            task = asyncio.get_running_loop().create_task(self._drain(host, gen, chunk))
            self._drains.add(task)
            task.add_done_callback(self._drains.discard)

    async def _drain(self, host: _Host, gen: Any, chunk: list[_Item]) -> None:
        """Hand each reply of one batch to its attempt; requeue the rest if the host died."""
        pending = {i.key: i for i in chunk}
        try:
            async for ref in gen:
                for key, reply in await ref:
                    item = pending.pop(key)
                    self._placed.pop(key, None)
                    host.outstanding -= 1
                    if not item.fut.done():
                        item.fut.set_result(reply)
        except _LOST:
            self._lost(host)
            loop = asyncio.get_running_loop()
            for item in pending.values():
                self._placed.pop(item.key, None)
                if item.fut.done():
                    continue
                item.tries += 1
                self.resubmits += 1
                if item.tries > self.max_resubmits:
                    item.fut.set_exception(_host_lost(item.subtask_id, len(self.hosts)))
                else:
                    self._enqueue(item, loop)
            return
        except BaseException as exc:  # handed to the attempts that waited
            for item in pending.values():
                if not item.fut.done():
                    item.fut.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            host.outstanding -= len(pending)
        for item in pending.values():  # cancelled on the host: their proxies were cancelled
            self._placed.pop(item.key, None)

    async def run_attempt(self, role: str, ctx: SubtaskContext) -> Any:
        """One attempt on a host, replayed into the driver's context `ctx`."""
        payload = (role, ctx.subtask, ctx.run_id, ctx.attempt, dict(ctx.upstream_results))
        ok, value, calls, events, spawns = await self._submit(payload, ctx.id)
        if calls and ctx.has_model:
            model = ctx.model
            for latency_s, response, error in calls:
                await model.record_remote_call(latency_s, response, error)
        for kind, fields in events:
            if kind == "step":
                ctx.record_step(
                    fields["step"],
                    policy=fields["policy"],
                    tools=fields["tools"],
                    outcome=fields["outcome"],
                    error=fields.get("error"),
                )
            else:
                ctx.record_tool(
                    fields["tool"],
                    step=fields["step"],
                    latency_s=fields["latency_s"],
                    error=fields["error"],
                )
        for subtasks, feeds in spawns:
            ctx.spawn(subtasks, feeds=feeds)
        if ok:
            return value
        raise decode_error(value)


__all__ = ["RayExecutor"]
