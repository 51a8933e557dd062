"""From recorded cells to results: reading a record and scoring it (``adjudicate``),
results.json and how it is built (``build``), and the paired comparison of two results
(``compare``)."""

from pytest_sabot.results.build import (
    DEFAULT_UPSTREAM,
    FIXTURE_LABEL,
    JUDGE_PIN,
    RESULTS_FILE,
    RESULTS_SCHEMA_VERSION,
    NotRunCell,
    ResultsFile,
    Selection,
    SessionInfo,
    UnpairedCell,
    acceptance,
    build_results,
    model_label,
    model_off_pin,
    read_results,
    served_models,
    write_results,
)

__all__ = [
    "DEFAULT_UPSTREAM",
    "FIXTURE_LABEL",
    "JUDGE_PIN",
    "RESULTS_FILE",
    "RESULTS_SCHEMA_VERSION",
    "NotRunCell",
    "ResultsFile",
    "Selection",
    "SessionInfo",
    "UnpairedCell",
    "acceptance",
    "build_results",
    "model_label",
    "model_off_pin",
    "read_results",
    "served_models",
    "write_results",
]
