"""Issue 21.3: the secrets a process knows are scrubbed by every writer of the harness, in
every form a writer turns them into (SPEC I106). Each test registers fresh random secrets
(the registry is the process's), then writes with the real writers and reads the bytes."""

from __future__ import annotations

import html
import json
import logging
import secrets
from pathlib import Path
from urllib.parse import quote

import pytest

from pytest_sabot.core import secrets as core_secrets
from pytest_sabot.core.records import cell_dir
from pytest_sabot.core.secrets import REDACTED, redact_in_logs, scrub_text, scrub_value
from pytest_sabot.core.trace_io import TraceWriter, write_json_atomic, write_text_atomic
from pytest_sabot.gateway import secrets as gateway_secrets
from pytest_sabot.tasks.world import Workspace


def _fresh(prefix: str = "s3cr3t") -> str:
    value = f"{prefix}-{secrets.token_urlsafe(18)}"
    redact_in_logs(value)
    return value


def test_I106_the_gateways_registration_is_the_writers_registry() -> None:
    assert gateway_secrets.redact_in_logs is core_secrets.redact_in_logs
    assert gateway_secrets.Scrubber is core_secrets.Scrubber
    secret = secrets.token_urlsafe(24)
    gateway_secrets.redact_in_logs(secret)
    assert scrub_text(f"http://127.0.0.1:1/{secret}/run") == f"http://127.0.0.1:1/{REDACTED}/run"
    # a scrubber of the gateway's own also scrubs what the process registered
    assert gateway_secrets.Scrubber().text(secret) == REDACTED


def test_I106_every_writer_scrubs_a_registered_secret_in_every_form(tmp_path: Path) -> None:
    secret = _fresh()
    odd = _fresh('my "odd" <token> & é')  # escaped differently by JSON, HTML and URLs
    forms = [secret, odd, json.dumps(odd)[1:-1], html.escape(odd), quote(odd, safe="")]
    said = " | ".join(forms)
    trace = TraceWriter(tmp_path / "run")
    event = trace.emit("agent_output", "worker", f"draft {said}", stage="worker")
    trace.finish()
    write_json_atomic(tmp_path / "doc.json", {"k": said, said: [said, {"deep": said}]})
    write_text_atomic(tmp_path / "page.html", f"<p>{html.escape(odd)}</p><a>{secret}</a>")
    workspace = Workspace(tmp_path / "cell")
    workspace.write("answer.md", said)
    assert workspace.committed("answer.md", said)  # the world compares what it keeps
    for path in [tmp_path / "run" / "events.jsonl", tmp_path / "doc.json", tmp_path / "page.html",
                 tmp_path / "cell" / "workspace" / "answer.md"]:
        data = path.read_text(encoding="utf-8")
        assert REDACTED in data, path
        for form in forms:
            assert form not in data, (path, form)
        assert "s3cr3t-" not in data and "odd" not in data, path
    assert secret not in event.text  # the trace in memory is the trace on disk


def test_I106_a_value_without_a_secret_is_left_as_it_is(tmp_path: Path) -> None:
    _fresh()
    value = {"words": ["a sk-like word: risk-averse", "Bearer of news"], "n": 3}
    assert scrub_value(value) is value
    write_json_atomic(tmp_path / "plain.json", value)
    assert json.loads((tmp_path / "plain.json").read_text()) == value


def test_I106_a_log_record_carries_no_registered_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = _fresh()
    with caplog.at_level(logging.INFO):
        logging.getLogger("httpx").info("HTTP Request: POST http://127.0.0.1:9/%s/v1", secret)
    assert secret not in caplog.text and REDACTED in caplog.text


def test_I106_a_log_record_named_after_a_secret_names_it_redacted() -> None:
    """A logger, a thread or a function named after a key prints that name with every
    record (``%(name)s``, ``%(threadName)s``): those fields are scrubbed too."""
    import threading

    secret = _fresh()
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    logger = logging.getLogger("leaky." + secret)
    logger.addHandler(Keep())
    logger.propagate = False
    thread = threading.Thread(target=lambda: logger.warning("plain words"), name="t-" + secret)
    thread.start()
    thread.join()
    [record] = seen
    formatted = logging.Formatter("%(name)s %(threadName)s %(message)s").format(record)
    assert secret not in formatted and formatted.count(REDACTED) == 2


def test_I106_a_too_short_value_is_never_registered() -> None:
    redact_in_logs("abc")
    assert scrub_text("abc abcdef") == "abc abcdef"


def test_I106_a_cell_record_written_by_the_harness_writers_is_scrubbed(tmp_path: Path) -> None:
    secret = _fresh("provider")
    run_dir = cell_dir(tmp_path, "c")
    write_json_atomic(run_dir / "outcome.json", {"artifact": f"key={secret}", "error": secret})
    text = (run_dir / "outcome.json").read_text()
    assert secret not in text and text.count(REDACTED) == 2


def test_I106_a_file_a_pipeline_wrote_itself_is_scrubbed_and_every_other_left_untouched(
    tmp_path: Path,
) -> None:
    from pytest_sabot.core.trace_io import scrub_tree

    secret = _fresh()
    run = tmp_path / "cell"
    (run / "nested").mkdir(parents=True)
    (run / "notes.txt").write_text(f"key {secret} and {json.dumps(secret)}")
    (run / "nested" / "blob.bin").write_bytes(b"\x00\xff" + secret.encode() + b"\x80")
    (run / "plain.txt").write_text("nothing to hide")
    outside = tmp_path / "outside.txt"
    outside.write_text(secret)
    (run / "link").symlink_to(outside)
    before = (run / "plain.txt").stat().st_mtime_ns
    assert sorted(scrub_tree(run)) == [run / "nested" / "blob.bin", run / "notes.txt"]
    assert (run / "notes.txt").read_text() == f'key {REDACTED} and "{REDACTED}"'
    assert (run / "nested" / "blob.bin").read_bytes() == b"\x00\xff" + REDACTED.encode() + b"\x80"
    assert (run / "plain.txt").stat().st_mtime_ns == before  # not rewritten
    assert outside.read_text() == secret  # a link is not followed out of the directory
    assert scrub_tree(run) == []


def test_I106_a_recorded_warning_carries_no_registered_secret() -> None:
    import warnings

    from pytest_sabot.session.secrets import scrub_warning

    secret = _fresh()

    class TwoArgs(UserWarning):
        def __init__(self, a: str, b: str) -> None:
            super().__init__(f"{a} {b}")

    for made in (UserWarning(f"leak {secret}"), DeprecationWarning(f"old {secret}"),
                 TwoArgs("two", secret)):
        record = warnings.WarningMessage(made, type(made), "f.py", 1, line=f"x = '{secret}'")
        scrub_warning(record)
        assert secret not in str(record.message) and REDACTED in str(record.message)
        assert record.category is type(made)  # still shown under its own category
        assert record.line == f"x = '{REDACTED}'"
    # The file shown beside it and a category named after a secret are scrubbed as well.
    word = "Cat" + secrets.token_hex(12)  # a secret that is a class name
    redact_in_logs(word)
    named = type(word, (UserWarning,), {})
    odd = warnings.WarningMessage(named("words"), named, f"/src/{secret}.py", 3)
    scrub_warning(odd)
    assert odd.filename == f"/src/{REDACTED}.py"
    assert odd.category is UserWarning and str(odd.message) == "words"
    kept = warnings.WarningMessage(DeprecationWarning(f"old {secret}"), DeprecationWarning,
                                   "f.py", 1)
    scrub_warning(kept)
    assert type(kept.message) is DeprecationWarning  # a one-text class keeps its class


def test_I106_no_file_or_folder_a_pipeline_made_is_named_after_a_secret(tmp_path: Path) -> None:
    from pytest_sabot.core.trace_io import scrub_tree

    secret = "tok" + secrets.token_hex(10)  # a secret that fits in a plain file name
    redact_in_logs(secret)
    run = tmp_path / "cell"
    (run / f"dir-{secret}").mkdir(parents=True)
    (run / f"dir-{secret}" / f"f-{secret}.txt").write_text("plain")
    (run / "dir-REDACTED").mkdir()  # a name already taken is not overwritten
    changed = scrub_tree(run)
    names = sorted(str(p.relative_to(run)) for p in run.rglob("*"))
    assert names == ["dir-REDACTED", "dir-REDACTED-2", "dir-REDACTED-2/f-REDACTED.txt"]
    assert (run / "dir-REDACTED-2" / "f-REDACTED.txt").read_text() == "plain"
    assert run / "dir-REDACTED-2" in changed
    # The workspace the task tools write never makes such a name in the first place.
    workspace = Workspace(tmp_path / "other")
    workspace.write(f"{secret}.md", "words")
    assert list(workspace.files()) == ["REDACTED.md"]
    assert workspace.read(f"{secret}.md") == "words"  # read back under the name it was given


def test_I106_a_file_written_after_its_run_is_scrubbed_when_the_process_ends(
    tmp_path: Path,
) -> None:
    """A pipeline's thread that outlived its run wrote after the run's own scrub: each
    process scrubs the cell directories it ran once more as its session ends."""
    from pytest_sabot.session.runner import CellRunner

    secret = _fresh()
    runner = CellRunner(std=None, settings=None, selected=frozenset())  # type: ignore[arg-type]
    ran = tmp_path / "cells" / "c"
    ran.mkdir(parents=True)
    runner._ran.append(ran)
    (ran / "late.txt").write_text(f"written late: {secret}")
    other = tmp_path / "cells" / "not-run-here"
    other.mkdir()
    (other / "note.txt").write_text(secret)  # another process's cell: its own to scrub
    runner.scrub_again()
    assert (ran / "late.txt").read_text() == f"written late: {REDACTED}"
    assert (other / "note.txt").read_text() == secret
