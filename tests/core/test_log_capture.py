"""The shared log capture (core/log_capture.py) the Magentic-One adapters read their
orchestrator's lines through: loud only while some capture is active, thread-bound, and an
error met while receiving a record reaches the run instead of the logging machinery."""

from __future__ import annotations

import logging
import threading
from typing import ClassVar

import pytest

from pytest_sabot.core.log_capture import Loudness, ThreadLogCapture

NAME = "sabot-test-capture"


class _Lines(ThreadLogCapture):
    loudness: ClassVar[Loudness] = Loudness(NAME, pin_children=True)

    def __init__(self, fail_on: str | None = None) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.fail_on = fail_on

    def receive(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message == self.fail_on:
            raise ValueError(f"cannot read {message!r}")
        self.lines.append(message)


def test_the_last_capture_to_exit_restores_level_and_propagation() -> None:
    logger = logging.getLogger(NAME)
    logger.setLevel(logging.WARNING)
    logger.propagate = True
    with _Lines() as outer:
        assert logger.level == logging.DEBUG and logger.propagate is False
        with _Lines() as inner:
            logger.debug("both see it")
        assert logger.level == logging.DEBUG, "one capture is still active"
        logger.debug("only the outer one")
    assert (logger.level, logger.propagate) == (logging.WARNING, True)
    assert inner.lines == ["both see it"]
    assert outer.lines == ["both see it", "only the outer one"]


def test_inheriting_children_keep_the_level_they_had() -> None:
    parent = logging.getLogger(NAME)
    parent.setLevel(logging.INFO)
    child = logging.getLogger(NAME + ".events")
    child.setLevel(logging.NOTSET)
    with _Lines():
        assert parent.level == logging.DEBUG
        assert child.level == logging.INFO, "pinned to the level it inherited"
    assert child.level == logging.NOTSET


def test_records_of_another_thread_are_not_received() -> None:
    logging.getLogger(NAME).setLevel(logging.WARNING)
    with _Lines() as capture:
        other = threading.Thread(target=lambda: logging.getLogger(NAME).warning("elsewhere"))
        other.start()
        other.join()
        logging.getLogger(NAME).warning("here")
    assert capture.lines == ["here"]


def test_an_error_in_receive_is_raised_when_the_capture_exits() -> None:
    logger = logging.getLogger(NAME)
    with pytest.raises(ValueError, match="cannot read 'bad'"), _Lines(fail_on="bad") as capture:
        logger.warning("good")
        logger.warning("bad")
        logger.warning("after")  # no longer received once an error is kept
    assert capture.lines == ["good"]
    assert logging.getLogger(NAME).handlers == [], "the handler is removed all the same"
