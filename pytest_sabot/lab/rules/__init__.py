"""The lab's rules: completion (LC1..LC3) and safety (LS1..LS8), pure over a record.

``judge(record)`` returns every violation, completion and safety alike; the gate decides
which count (completion only when execution completed).
"""

from __future__ import annotations

from pytest_sabot.lab.record import LabRun, Violation
from pytest_sabot.lab.rules.completion import COMPLETION_RULES
from pytest_sabot.lab.rules.history import History
from pytest_sabot.lab.rules.safety import AT_MOST_RULES, SAFETY_RULES

__all__ = ["AT_MOST_RULES", "COMPLETION_RULES", "SAFETY_RULES", "History", "history_of", "judge"]


def history_of(record: LabRun) -> History:
    return History(initial=record.world_initial, streams=record.streams,
                   task=record.scenario.task.public(), expect=record.scenario.expect)


def judge(record: LabRun) -> list[Violation]:
    """Every violation in the record, safety first, each family in rule order."""
    history = history_of(record)
    out: list[Violation] = []
    for rule in SAFETY_RULES + COMPLETION_RULES:
        out.extend(rule(history))
    return out
