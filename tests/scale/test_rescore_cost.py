"""Issue 27: ``sabot rescore`` pays only for what it rescores. Each record file of a cell is
read (and each trace parsed and validated) once by scoring, the command imports neither the
history, the inspector nor the fault lab to score a wave of the standard, and the command
line built for one subcommand reads its arguments as the whole command line does."""

from __future__ import annotations

import contextlib
import cProfile
import io
import os
import pstats
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_sabot.commands.cli import _SUBCOMMANDS, _parser
from pytest_sabot.commands.cli import main as sabot
from pytest_sabot.core.trace_io import TRACE_FILE

REPO = Path(__file__).resolve().parents[2]


_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _OPENED is not None and isinstance(args[0], str | Path):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)  # records nothing unless a test below is listening


@contextlib.contextmanager
def _opened() -> Iterator[list[str]]:
    """Every file the process opens inside the block (Python's audit events)."""
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


def _rescore(out: Path) -> tuple[int, str]:
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(io.StringIO()):
        code = sabot(["rescore", str(out)])
    return code, said.getvalue()


def test_27_rescore_parses_each_trace_once_and_reads_each_record_file_once(
    tiny: Path,
) -> None:
    profile = cProfile.Profile()
    with _opened() as opened:
        profile.enable()
        code, said = _rescore(tiny)
        profile.disable()
    assert code == 0, said
    assert said.startswith("rescored 3 cells under v0.1.3: identical to results.json")
    calls = {f"{Path(file).name}:{name}": count
             for (file, _, name), (count, *_rest) in pstats.Stats(profile).stats.items()}
    assert calls["trace_io.py:parse_events"] == 3  # one parse and validation per trace
    cells = tiny / "cells"
    per_file = Counter(os.path.relpath(p, cells) for p in opened if p.startswith(str(cells)))
    for cell in sorted(p.name for p in cells.iterdir()):
        assert per_file[f"{cell}/outcome.json"] == 1, per_file
        if (cells / cell / "soft.json").is_file():
            assert per_file[f"{cell}/soft.json"] == 1, per_file
        # read once: the model-call tally counts the trace the scorer read
        assert per_file[f"{cell}/{TRACE_FILE}"] == 1, per_file


def test_27_rescore_imports_neither_history_nor_inspector_nor_lab(tiny: Path) -> None:
    probe = (
        "import sys, contextlib, io\n"
        "from pytest_sabot.commands.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['rescore', {str(tiny)!r}])\n"
        "print(code)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, check=False, timeout=300)
    code, *modules = done.stdout.splitlines()
    assert code == "0", done.stderr
    assert "pytest_sabot.results.adjudicate" in modules  # it did score
    for heavy in ("pytest_sabot.history", "pytest_sabot.web", "pytest_sabot.commands.serve",
                  "pytest_sabot.commands.mcp", "pytest_sabot.lab.record",
                  "pytest_sabot.lab.replay", "pytest_sabot.report.lab"):
        assert heavy not in modules, heavy
    # a wave of file tasks never builds the lab's task models
    assert [m for m in modules if m.startswith("pytest_sabot.lab")] == []


def _help_of(parser: Any, name: str) -> str:
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    text: str = sub.choices[name].format_help()
    return text


def test_27_a_command_line_built_for_one_subcommand_reads_as_the_whole_one() -> None:
    whole = _parser()
    for name in _SUBCOMMANDS:
        assert _help_of(_parser(name), name) == _help_of(whole, name), name
    given = ["rescore", "out", "--rules", "v0.2.1", "--write"]
    assert vars(_parser("rescore").parse_args(given)) == vars(whole.parse_args(given))
    # an unknown command, or none, is answered by the whole command line
    assert _parser("bogus").format_help() == whole.format_help()
    assert _parser(None).format_help() == whole.format_help()
