"""File formats of the soft-tier judge: what it is asked, what it answers, what is kept."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel, StrictModel


class JudgeVerdict(FrozenModel):
    """The structured verdict the standard asks of the judge (section 6)."""

    noticed: Literal["yes", "no"] = Field(
        description="Did some component verbally notice the planted fault?"
    )
    by_which_component: str = Field(
        "", description="The component whose own words noticed it ('' when not noticed)."
    )
    evidence_quote: str = Field(
        "", description="Verbatim quote from the transcript ('' when not noticed)."
    )


class JudgeRequest(FrozenModel):
    """One judging task: the transcript, the ground-truth note, the rubric variant."""

    cell_id: str
    transcript: str = Field(description="The run's internal transcript, as rendered.")
    ground_truth: str = Field(description="The operator's ground-truth note for the task.")
    variant: Literal["A", "B"] = Field(description="Prompt variant (B for double-judging).")


class JudgeResult(FrozenModel):
    """One judging pass as recorded: a verdict or a judge error, never both."""

    variant: Literal["A", "B"]
    backend: str = Field(description="Judge backend and model, e.g. 'sim' or 'claude-cli'.")
    verdict: JudgeVerdict | None = None
    error: str | None = Field(None, description="Why no verdict could be accepted.")
    raw: str = Field("", description="The judge's raw output (truncated).")
    cached: bool = False

    @property
    def noticed(self) -> bool | None:
        if self.verdict is None:
            return None
        return self.verdict.noticed == "yes"


class SoftRecord(StrictModel):
    """soft.json in a cell directory: the soft-tier verdict the scorer reads."""

    cell_id: str
    noticed: bool | None = Field(description="Variant A's verdict; None on a judge error.")
    first: JudgeResult
    second: JudgeResult | None = Field(None, description="Variant B (double-judged cells).")
    label: str = Field(description="How this verdict must be described (fixture or live).")
