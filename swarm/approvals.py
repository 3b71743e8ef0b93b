"""Calls that wait for a person, without stopping the swarm.

A sub-agent whose tool call needs approval (`ApprovalPolicy`, `Tool.requires_approval`,
`Role.requires_approval`) asks through `SubtaskContext.approval`. The call is written to the
store durably (`ApprovalRequested`, the `approvals` table), then the sub-agent is *parked*:
it does not count against the run's concurrency (its slot goes to the rest of the swarm)
and its attempt's deadline stops until the answer comes. Whoever answers writes the
decision to the store — `kimmy approve`/`deny`, the dashboard, Python (`Swarm.approve`) —
and one poller per run reads it there; the first answer wins. The policy's timeout is
answered the same way, by the run (`by="timeout"`).

A decision holds for the same call (the same sub-agent, tool and arguments) for the rest of
the run: a resumed run finds the calls still waiting — or answered while it was stopped —
when its sub-agents make them again, and asks nobody twice (the call keeps its id; the new
session's events show it waiting again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.approval_records import (
    Approval,
    ApprovalError,
    ApprovalTimeoutError,
    Decision,
)
from kimmy_swarm.swarm.errors import ConfigError

if TYPE_CHECKING:
    from kimmy_swarm.swarm.approval_policy import ApprovalPolicy
    from kimmy_swarm.swarm.deadlines import Deadlines
    from kimmy_swarm.swarm.journal import Journal
    from kimmy_swarm.swarm.schema import Subtask
    from kimmy_swarm.swarm.store import RunStore

#: Seconds between two reads of the store for answers while calls wait.
POLL_S = 0.2


def _key(subtask_id: str, tool: str, arguments: Mapping[str, Any]) -> tuple[str, str, str]:
    return subtask_id, tool, json.dumps(arguments, sort_keys=True, default=str)


class Approvals:
    """The calls of one run that wait for a person.

    Args:
        run_id: the run.
        policy: its approval policy (the timeout and what it does).
        journal: where the run's events go.
        store: where calls and answers are kept (None: only the policy's timeout answers).
        deadlines: the run's per-attempt deadlines (stopped while a sub-agent waits).
        on_parked: called when a sub-agent parks (there is room for another to start).
        poll_s: seconds between two reads of the store while calls wait.
    """

    def __init__(
        self,
        run_id: str,
        policy: ApprovalPolicy,
        journal: Journal,
        store: RunStore | None,
        deadlines: Deadlines,
        on_parked: Callable[[], None],
        *,
        poll_s: float = POLL_S,
    ) -> None:
        self.run_id = run_id
        self.policy = policy
        self.journal = journal
        self.store = store
        self.deadlines = deadlines
        self.on_parked = on_parked
        self.poll_s = poll_s
        #: Sub-agents waiting for an answer right now.
        self.parked = 0
        self._ids: dict[tuple[str, str, str], str] = {}
        self._asked: dict[str, Approval] = {}
        self._answers: dict[str, Decision] = {}
        self._waiting: dict[str, asyncio.Future[Decision]] = {}
        #: Calls this session's events have shown waiting (`ApprovalRequested`).
        self._shown: set[str] = set()
        self._poller: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None

    def load(self, earlier: list[Approval], announced: set[str]) -> None:
        """Take the calls earlier sessions of the run asked (`RunStore.approvals`);
        `announced`: those whose answer the run's events hold already (`ApprovalDecided`).
        One answered while the run was stopped is announced when its sub-agent asks again."""
        for a in earlier:
            self._ids[_key(a.subtask_id, a.tool, a.arguments)] = a.call_id
            self._asked[a.call_id] = a
            failed = a.decision is not None and self._fails(a.decision)
            if a.decision is not None and a.call_id in announced and not failed:
                self._answers[a.call_id] = a.decision

    def close(self) -> None:
        """Stop reading answers (the run ended; its waiting sub-agents were cancelled)."""
        self.on_parked = _nothing
        for fut in self._waiting.values():
            fut.cancel()  # a procedure's thread blocked on one goes on (and stops)
        self._waiting.clear()
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None

    async def request(
        self,
        subtask: Subtask,
        task: asyncio.Task[Any] | None,
        tool: str,
        arguments: Mapping[str, Any],
    ) -> Decision:
        """Ask a person about one call of `subtask`, wait for the answer, and return it.

        `task` is the sub-agent's task, whose deadline stops while it waits.

        Raises:
            ApprovalTimeoutError: nobody answered in the policy's time and it says `fail`.
        """
        if self.store is None and self.policy.timeout_s is None:
            raise ConfigError(
                f"{subtask.id!r}: a call of {tool!r} needs approval, but this run is not "
                "stored, so nobody can answer it: give the swarm a runs directory "
                "(--runs-dir; Python: Swarm(runs_dir=…)) or an approval timeout"
            )
        key = _key(subtask.id, tool, arguments)
        call_id = self._ids.get(key)
        if call_id is not None and call_id in self._answers:
            return self._answers[call_id]
        if call_id is None:
            call_id = f"a{len(self._asked) + 1}"
            self._ids[key] = call_id
            self._asked[call_id] = Approval(
                self.run_id, call_id, subtask.id, tool, dict(arguments), time.time()
            )
        if call_id not in self._shown:  # each session's events show what waits in it
            self._shown.add(call_id)
            self.journal.emit(
                ev.ApprovalRequested,
                subtask_id=subtask.id,
                call_id=call_id,
                tool=tool,
                arguments=dict(arguments),
            )
            stored = asyncio.get_running_loop().create_future()
            self.journal.after_commit(lambda: stored.done() or stored.set_result(None))
            await stored  # nobody is asked about a call the store does not hold
        fut = self._waiting.get(call_id)
        if fut is None:
            fut = self._waiting[call_id] = asyncio.get_running_loop().create_future()
        self.parked += 1
        self.on_parked()
        left = self.deadlines.pause(task) if task is not None else None
        self._poke()
        try:
            return await asyncio.shield(fut)
        finally:
            self.parked -= 1
            if left is not None and task is not None:
                self.deadlines.arm(task, left)

    # --- answers ------------------------------------------------------------------------

    def _poke(self) -> None:
        """Make sure the poller runs (and reads the store now)."""
        if self._wake is None:
            self._wake = asyncio.Event()
        self._wake.set()
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        assert self._wake is not None
        while self._waiting:
            self._wake.clear()
            if self.store is not None:
                answered = await asyncio.to_thread(self._read_answers, list(self._waiting))
                for approval in answered:
                    assert approval.decision is not None
                    self._apply(approval.call_id, approval.decision, approval.decided_at)
            await self._time_out()
            if not self._waiting:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_s)

    def _read_answers(self, call_ids: list[str]) -> list[Approval]:
        assert self.store is not None
        return self.store.answered(self.run_id, call_ids)

    async def _time_out(self) -> None:
        limit = self.policy.timeout_s
        if limit is None:
            return
        now = time.time()
        for call_id in list(self._waiting):
            asked = self._asked[call_id]
            if now - asked.requested_at < limit:
                continue
            how = self.policy.on_timeout
            decision = Decision(
                "approve" if how == "approve" else "deny",
                reason=f"nobody answered in {limit:g} s (the run's approval timeout: {how})",
                by="timeout",
            )
            if self.store is None:
                self._apply(call_id, decision, now)
                continue
            try:
                answered = await asyncio.to_thread(
                    self.store.decide, self.run_id, call_id, decision
                )
            except ApprovalError:  # a person answered first: theirs holds
                answered = await asyncio.to_thread(self.store.approval, self.run_id, call_id)
            assert answered.decision is not None
            self._apply(call_id, answered.decision, answered.decided_at)

    def _fails(self, decision: Decision) -> bool:
        """Whether `decision` is the timeout's under a policy that fails the sub-agent."""
        return decision.by == "timeout" and self.policy.on_timeout == "fail"

    def _apply(self, call_id: str, decision: Decision, decided_at: float | None) -> None:
        fut = self._waiting.pop(call_id, None)
        if fut is None or call_id in self._answers:
            return
        asked = self._asked[call_id]
        self._asked[call_id] = Approval(
            asked.run_id, call_id, asked.subtask_id, asked.tool, asked.arguments,
            asked.requested_at, decision, decided_at,
        )  # fmt: skip
        self.journal.emit(
            ev.ApprovalDecided,
            subtask_id=asked.subtask_id,
            call_id=call_id,
            tool=asked.tool,
            verdict=decision.verdict,
            arguments=decision.arguments,
            reason=decision.reason,
            by=decision.by,
        )
        if self._fails(decision):
            fut.set_exception(
                ApprovalTimeoutError(
                    f"call {call_id} ({asked.tool}) of {asked.subtask_id!r} waited "
                    f"{self.policy.timeout_s:g} s for approval; the run's policy fails it"
                )
            )
            return
        self._answers[call_id] = decision
        fut.set_result(decision)


def _nothing() -> None:
    """A callback arriving after its run ended has nothing left to do."""


__all__ = ["POLL_S", "Approvals"]
