"""One ``ast.parse`` at a time in a process with cells in flight (session/parse_lock.py):
the race of CPython before 3.11.8 (gh-106905), performed step by step, and what the lock
changes. The race needs another thread to take the interpreter inside a parse; a garbage
collection does that in a real process (its finalizers are Python code), here a gc
callback that hands the interpreter over on every collection, with collections made
frequent."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

from pytest_sabot.session.parse_lock import parses_serialised, serialise_parses

RACE = textwrap.dedent(
    """
    import ast, gc, sys, threading, time
    sys.path.insert(0, {root!r})
    if {serialised}:
        from pytest_sabot.session.parse_lock import serialise_parses
        serialise_parses()
    SRC = "\\n".join(
        f"def f{{i}}(a, b=[1, (2, {{{{3: 4}}}})]):\\n    return [x for x in (a, b) if x]"
        for i in range(60)
    )
    errors = []
    def hand_over(phase, info):
        time.sleep(0)  # what a finalizer run by a collection may do
    def parse_until(stop):
        while time.monotonic() < stop and not errors:
            try:
                ast.parse(SRC)
            except SystemError as exc:
                errors.append(str(exc))
    gc.callbacks.append(hand_over)
    gc.set_threshold(50)
    stop = time.monotonic() + {seconds}
    threads = [threading.Thread(target=parse_until, args=(stop,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("ERRORS", len(errors), errors[:1])
    """
)


def _race(serialised: bool, seconds: float) -> str:
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    code = RACE.format(root=root, serialised=serialised, seconds=seconds)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(sys.version_info >= (3, 11, 8) or sys.version_info < (3, 11),
                    reason="the interpreter's parser keeps its depth per parse")
def test_I126_parses_in_two_threads_fail_on_this_interpreter_without_the_lock() -> None:
    """The step the cells' first-cell-alone rule guarded against: four threads parsing
    while collections hand the interpreter over fail with the depth mismatch."""
    out = _race(serialised=False, seconds=5.0)
    assert "AST constructor recursion depth mismatch" in out, out


def test_I126_parses_take_turns_with_the_lock_and_none_fails() -> None:
    out = _race(serialised=True, seconds=3.0)
    assert "ERRORS 0 []" in out, out


def test_I126_the_lock_keeps_what_a_parse_returns_and_raises() -> None:
    import ast

    serialise_parses()
    serialise_parses()  # once is enough: a second call wraps nothing more
    assert parses_serialised()
    wrapped: Any = ast.parse
    assert not hasattr(wrapped.__wrapped__, "__wrapped__")
    tree = ast.parse("x = [1, 2]")
    assert ast.dump(tree) == ast.dump(compile("x = [1, 2]", "<s>", "exec", ast.PyCF_ONLY_AST))
    assert ast.literal_eval("{'a': (1, 2)}") == {"a": (1, 2)}
    with pytest.raises(SyntaxError):
        ast.parse("def (")
