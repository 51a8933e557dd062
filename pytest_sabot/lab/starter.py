"""``lab init DIR``: a commented starter scenario to copy and edit.

The starter is ordinary scenario YAML with comments on every section; it validates and
runs as written (a lost request before commit, O7). ``init`` never overwrites a file.
"""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.core.errors import SabotDataError

STARTER_NAME = "my-scenario.yaml"

STARTER = """\
# A lab scenario: one helpdesk task, one fault schedule, exact expectations.
# Validate:  python -m pytest_sabot.lab validate {name}
# Run:       python -m pytest_sabot.lab run {name} --agent builtin:resilient --out runs/mine
format_version: 1
name: my-scenario
description: The first create_ticket request is lost before it reaches the helpdesk.

# The simulated helpdesk. The seed generates background customers and unrelated tickets
# (which the agent must leave alone); the named entities below always exist.
world:
  seed: 11
  customers:
    - {{customer_id: C-210, name: Mia Lund, email: mia.lund@example.invalid}}
  assignees:
    - {{assignee_id: A-4, name: Omar Haddad, team: accounts}}
  background_customers: 4
  background_tickets: 6
  approval: {{priorities: [urgent], delay_ms: 2000}}   # urgent tickets need approval first
  latency_ms: 40        # virtual ms per answered call
  timeout_ms: 30000     # virtual ms before a lost call times out

# The only part an agent sees (plus the tool catalog built from `contracts`).
task:
  instructions: >
    Open a ticket for customer C-210's request REQ-5120 (cannot add a second admin),
    assign it to A-4 and tell the customer it is being handled.
  request_key: REQ-5120
  customer_id: C-210
  subject: Cannot add a second admin
  priority: normal
  assignee_id: A-4
  message: Your request REQ-5120 is being handled.

# Idempotency contract of each write tool: supported (operation_key) or unsupported.
contracts:
  create_ticket: {{idempotency: supported}}
  assign_ticket: {{idempotency: supported}}
  notify_customer: {{idempotency: supported}}

# Where faults may fire: the `call`-th request to `tool` (and `times - 1` more).
# Kinds: timeout_before_commit, timeout_after_commit, duplicate_delivery, rate_limit
# (retry_after_ms), stale_read (max_lag). A required fault that never activates makes
# the run inconclusive.
faults:
  - id: lost-request
    fault: timeout_before_commit
    tool: create_ticket
    call: 1
    required: true

# Exact counts the completion rules check (never shown to the agent).
expect:
  tickets: 1
  notifications: 1

limits:
  deadline_ms: 600000   # virtual time
  max_tool_calls: 40
"""


def write_starter(directory: Path) -> Path:
    """Write the starter scenario into ``directory``; refuses to overwrite."""
    path = directory / STARTER_NAME
    if path.exists():
        raise SabotDataError(path, "", "a file that does not exist yet (init never overwrites)")
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(STARTER.format(name=path), encoding="utf-8")
    return path
