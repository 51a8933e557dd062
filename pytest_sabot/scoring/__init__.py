"""The pure scorer: a trace plus the published rules in, a verdict out (no I/O).

Public entry points are re-exported here; see each module for the rule it implements.
"""

from pytest_sabot.core.models.trace import injection_seq
from pytest_sabot.core.verdict_token import VerdictToken, parse_verdict
from pytest_sabot.scoring.aggregate import (
    RowSummary,
    Scoreboard,
    aggregate_rows,
    band_for,
    paired_contrast,
    scoreboard,
)
from pytest_sabot.scoring.flags import is_none_form, parse_flags
from pytest_sabot.scoring.score import score_baseline, score_cell
from pytest_sabot.scoring.stats import cohen_kappa, paired_bootstrap, wilson

__all__ = [
    "RowSummary",
    "Scoreboard",
    "VerdictToken",
    "aggregate_rows",
    "band_for",
    "cohen_kappa",
    "injection_seq",
    "is_none_form",
    "paired_bootstrap",
    "paired_contrast",
    "parse_flags",
    "parse_verdict",
    "score_baseline",
    "score_cell",
    "scoreboard",
    "wilson",
]
