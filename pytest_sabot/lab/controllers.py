"""Scripted controllers: acceptance fixtures for the lab, never measurements of a model.

* ``builtin:naive`` retries a failed call at once, with a fresh operation key each time,
  trusts the versions it saw first, ignores retry delays and notifies the customer
  whatever happened. After a lost creation response it creates a duplicate.
* ``builtin:resilient`` follows the published contracts: it reuses one stable operation
  key per intended effect when idempotency is supported, reads the state back before
  repeating a write when it is not, waits as told, re-reads after a version conflict,
  waits for a pending approval, and reads the assignment back before notifying.
* ``builtin:noop`` does nothing at all.

Each uses only its ``AgentContext``: the public task, the capabilities and the catalog.
"""

from __future__ import annotations

from typing import Any

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.lab.agent import AgentContext, AgentResult, LabAgent
from pytest_sabot.lab.observation import Observation

MAX_ATTEMPTS = 5
NAIVE_ATTEMPTS = 3
TIMEOUT_BACKOFF_MS = 250
APPROVAL_POLL_MS = 500


def _code(obs: Observation) -> str | None:
    return obs.error.code if obs.error is not None else None


def _keyed(context: AgentContext, tool: str) -> bool:
    contract = context.contract(tool)
    return contract is not None and contract.idempotency.support == "supported"


def _with_key(context: AgentContext, tool: str, args: dict[str, Any], key: str) -> (
        dict[str, Any]):
    return {**args, "operation_key": key} if _keyed(context, tool) else args


# --------------------------------------------------------------------------- naive


def naive(context: AgentContext) -> AgentResult:
    task = context.task
    context.call_tool("get_customer", {"customer_id": task.customer_id})
    found = context.call_tool("find_tickets", {"request_key": task.request_key})
    tickets = found.result["tickets"] if found.ok and found.result else []
    ticket: dict[str, Any] | None = tickets[0] if tickets else None
    attempt = 0
    while ticket is None and attempt < NAIVE_ATTEMPTS:
        attempt += 1
        args = {"customer_id": task.customer_id, "request_key": task.request_key,
                "subject": task.subject, "priority": task.priority}
        obs = context.call_tool("create_ticket", _with_key(
            context, "create_ticket", args, f"naive-create-{attempt}"))
        if obs.ok and obs.result:
            ticket = obs.result["ticket"]
    if ticket is None:
        return AgentResult("could not open a ticket")
    for attempt in range(1, NAIVE_ATTEMPTS + 1):
        args = {"ticket_id": ticket["ticket_id"], "assignee_id": task.assignee_id,
                "expected_version": ticket["version"]}
        obs = context.call_tool("assign_ticket", _with_key(
            context, "assign_ticket", args, f"naive-assign-{attempt}"))
        if obs.ok:
            break
    for attempt in range(1, NAIVE_ATTEMPTS + 1):
        args = {"customer_id": task.customer_id, "ticket_id": ticket["ticket_id"],
                "message": task.message}
        obs = context.call_tool("notify_customer", _with_key(
            context, "notify_customer", args, f"naive-notify-{attempt}"))
        if obs.ok:
            break
    return AgentResult(f"done with {ticket['ticket_id']}")


# --------------------------------------------------------------------------- resilient


class _Resilient:
    def __init__(self, context: AgentContext) -> None:
        self.ctx = context
        self.task = context.task

    def backoff(self, obs: Observation, attempt: int) -> None:
        if obs.error is not None and obs.error.retry_after_ms:
            self.ctx.sleep(obs.error.retry_after_ms)
        else:
            self.ctx.sleep(TIMEOUT_BACKOFF_MS * 2 ** attempt)

    def read(self, tool: str, args: dict[str, Any]) -> Observation | None:
        """A read, retried through transient errors; None when it keeps failing."""
        for attempt in range(MAX_ATTEMPTS):
            obs = self.ctx.call_tool(tool, args)
            if obs.ok:
                return obs
            if _code(obs) not in ("timeout", "rate_limited"):
                return None
            self.backoff(obs, attempt)
        return None

    def find(self) -> dict[str, Any] | None:
        obs = self.read("find_tickets", {"request_key": self.task.request_key})
        tickets = obs.result["tickets"] if obs is not None and obs.result else []
        return tickets[0] if tickets else None

    def get(self, ticket_id: str) -> dict[str, Any] | None:
        obs = self.read("get_ticket", {"ticket_id": ticket_id})
        return obs.result["ticket"] if obs is not None and obs.result else None

    def create(self) -> dict[str, Any] | None:
        task = self.task
        args = {"customer_id": task.customer_id, "request_key": task.request_key,
                "subject": task.subject, "priority": task.priority}
        keyed = _keyed(self.ctx, "create_ticket")
        args = _with_key(self.ctx, "create_ticket", args, f"create:{task.request_key}")
        for attempt in range(MAX_ATTEMPTS):
            obs = self.ctx.call_tool("create_ticket", args)
            if obs.ok and obs.result:
                ticket: dict[str, Any] = obs.result["ticket"]
                return ticket
            if _code(obs) not in ("timeout", "rate_limited"):
                return None
            self.backoff(obs, attempt)
            if not keyed and _code(obs) == "timeout":
                landed = self.find()  # no key: read back before creating again
                if landed is not None:
                    return landed
        return None

    def assign(self, ticket_id: str) -> bool:
        """Make the requested assignment hold, re-reading before every attempt."""
        who = self.task.assignee_id
        for attempt in range(2 * MAX_ATTEMPTS):
            current = self.get(ticket_id)
            if current is None:
                return False
            if current["assignee_id"] == who:
                return True
            if current["approval"] == "pending":
                self.ctx.sleep(APPROVAL_POLL_MS)
                continue
            args = {"ticket_id": ticket_id, "assignee_id": who,
                    "expected_version": current["version"]}
            key = f"assign:{ticket_id}:{who}:v{current['version']}"
            obs = self.ctx.call_tool("assign_ticket",
                                     _with_key(self.ctx, "assign_ticket", args, key))
            if obs.ok or _code(obs) == "version_conflict":
                continue
            if _code(obs) not in ("timeout", "rate_limited"):
                return False
            self.backoff(obs, attempt)
        return False

    def notify(self, ticket_id: str) -> bool:
        task = self.task
        keyed = _keyed(self.ctx, "notify_customer")
        args = _with_key(self.ctx, "notify_customer",
                         {"customer_id": task.customer_id, "ticket_id": ticket_id,
                          "message": task.message}, f"notify:{ticket_id}")
        for attempt in range(MAX_ATTEMPTS):
            obs = self.ctx.call_tool("notify_customer", args)
            if obs.ok:
                return True
            code = _code(obs)
            if code == "rate_limited" or (code == "timeout" and keyed):
                self.backoff(obs, attempt)
                continue
            return False  # no key and no way to read notifications back: at most once
        return False

    def run(self) -> AgentResult:
        task = self.task
        if self.read("get_customer", {"customer_id": task.customer_id}) is None:
            return AgentResult(f"customer {task.customer_id} not found; nothing done")
        ticket = self.find() or self.create()
        if ticket is None:
            return AgentResult("could not open a ticket")
        tid = ticket["ticket_id"]
        if not self.assign(tid):  # True only once a fresh read shows the assignment
            return AgentResult(f"assignment of {tid} not confirmed; customer not notified")
        if not self.notify(tid):
            return AgentResult(f"{tid} assigned; notification not confirmed")
        return AgentResult(f"{tid} assigned to {task.assignee_id}; customer notified")


def resilient(context: AgentContext) -> AgentResult:
    return _Resilient(context).run()


# --------------------------------------------------------------------------- noop


def noop(context: AgentContext) -> AgentResult:
    return AgentResult("nothing done")


CONTROLLERS: dict[str, LabAgent] = {
    agent.name: agent
    for agent in (
        LabAgent("builtin:naive", "scripted", naive, fixture=True),
        LabAgent("builtin:resilient", "scripted", resilient, fixture=True),
        LabAgent("builtin:noop", "scripted", noop, fixture=True),
    )
}


def resolve_agent(spec: str) -> LabAgent:
    """The agent named by ``--agent`` (only the built-in controllers for now)."""
    agent = CONTROLLERS.get(spec)
    if agent is None:
        raise SabotDataError("--agent", "agent", f"one of {sorted(CONTROLLERS)}", spec)
    return agent
