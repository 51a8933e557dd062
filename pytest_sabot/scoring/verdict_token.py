"""The verdict-token protocol (standard section 5), as the scorer uses it; the parser itself
lives in pytest_sabot.verdict_token, shared with the pipelines."""

from pytest_sabot.verdict_token import VERDICT_PATTERN, VerdictToken, parse_verdict

__all__ = ["VERDICT_PATTERN", "VerdictToken", "parse_verdict"]
