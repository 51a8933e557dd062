"""What a board shows of the rules it is read under. The detection-surfaces table
(standard section 10: union, mapping, anchored flag, any-flag, strict floor) is shown where
the wave ran the FLAGS protocol, in the terminal, RESULTS.md and report.html alike;
results.json records whether it did (a file written before the field is read by its rule
version, as it was then). A rescore under other rules is labelled as every output is."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sabot.report.html._results import build
from pytest_sabot.report.render import markdown
from pytest_sabot.report.terminal import summary_text
from pytest_sabot.results import read_results

SURFACES_LINE = "detection surfaces (the FLAGS protocol"


def _shown(results_dir: Path, **fields: object) -> tuple[bool, bool, bool]:
    results = read_results(results_dir / "results.json").model_copy(update=fields)
    terminal = any(SURFACES_LINE in line for line in summary_text(results, 200))
    md = "| row | union (headline) |" in markdown(results)
    view = build(results_dir, results.model_dump(mode="json"), status_line=None,
                 layout="inline", pages_dir="report-cells")
    return terminal, md, bool(view.flags_wave)


def test_S10_the_surfaces_show_where_the_wave_ran_the_flags_protocol(wave_slice: Path) -> None:
    assert read_results(wave_slice / "results.json").flags_protocol is False  # wave 1
    assert _shown(wave_slice) == (False, False, False)
    assert _shown(wave_slice, flags_protocol=True) == (True, True, True)
    # under the v0.2 rules, a wave without the protocol has no surfaces to read
    assert _shown(wave_slice, rules="v0.2.1") == (False, False, False)


def test_S10_a_file_without_the_field_is_read_by_its_rule_version(wave_slice: Path) -> None:
    assert _shown(wave_slice, flags_protocol=None) == (False, False, False)
    assert _shown(wave_slice, flags_protocol=None, rules="v0.2.1") == (True, True, True)


def test_I165_rescore_under_other_rules_keeps_the_keyless_label_and_names_a_bad_rules(
    wave_slice: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sabot.commands.cli import main

    assert main(["rescore", str(wave_slice), "--rules", "v0.2.1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("both readings: v0.1.3 (as recorded) and v0.2.1 (rescored)")
    assert out[1].startswith("keyless: fixtures of the embedded model")
    assert main(["rescore", str(wave_slice), "--rules", "v9.9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sabot rescore: --rules: expected a registered rule version, got "
                          "'v9.9'") and "known: v0.1.1" in err
