"""The child's end of the supervisor's pipes: requests out, answers in, one at a time.

Calls may come from several threads (frameworks run tools in thread pools); the channel
serializes them, so each request is answered before the next is sent and the parent sees
one order.
"""

from __future__ import annotations

import threading
from typing import Any, BinaryIO

from pytest_sabot.trusted.protocol import (
    MAX_LINE_BYTES,
    Message,
    ProtocolError,
    RefusalReason,
    Refused,
    Request,
    Sleep,
    Slept,
    ToChild,
    ToolCall,
    ToolResult,
    decode_to_child,
    encode,
    jsonable,
)


class Refusal(Exception):
    """A refused request; ``reason`` says why (see protocol.RefusalReason).

    The child's channel raises it when the parent refuses. The parent's handlers raise it
    to refuse; ``final=True`` says the run is over (the supervisor then refuses every later
    request itself and gives the child its grace to return).
    """

    def __init__(self, reason: RefusalReason, message: str, *, final: bool = False) -> None:
        super().__init__(message)
        self.reason: RefusalReason = reason
        self.message = message
        self.final = final


class ChildChannel:
    """Speaks the protocol from the child's side over two file objects."""

    def __init__(self, incoming: BinaryIO, outgoing: BinaryIO) -> None:
        self._in = incoming
        self._out = outgoing
        self._lock = threading.Lock()
        self._last_id = 0

    def send(self, message: Message) -> None:
        self._out.write(encode(message))
        self._out.flush()

    def receive(self) -> ToChild:
        line = self._in.readline(MAX_LINE_BYTES + 1)
        if not line:
            raise EOFError("the supervisor closed the channel")
        return decode_to_child(line)

    def _ask(self, build: type[ToolCall] | type[Sleep], **fields: Any) -> ToChild:
        with self._lock:
            self._last_id += 1
            request: Request = build(id=self._last_id, **fields)
            try:
                self.send(request)
                answer = self.receive()
            except (EOFError, BrokenPipeError) as exc:
                raise Refusal("closed", f"the run has ended ({exc})") from None
            if isinstance(answer, Refused):
                if answer.id != request.id:
                    raise ProtocolError(f"answer to request {answer.id}, expected {request.id}")
                raise Refusal(answer.reason, answer.message)
            if not isinstance(answer, ToolResult | Slept) or answer.id != request.id:
                raise ProtocolError(f"unexpected answer to request {request.id}: {answer!r}")
            return answer

    def call_tool(self, name: str, arguments: object) -> Any:
        """Route one tool call to the parent; its JSON answer, or Refusal."""
        clean = jsonable(arguments)
        unreadable = None if clean is not None else repr(arguments)
        answer = self._ask(ToolCall, name=str(name), arguments=clean, unreadable=unreadable)
        if not isinstance(answer, ToolResult):
            raise ProtocolError(f"a tool call was answered with {answer.type}")
        return answer.result

    def sleep(self, ms: int) -> None:
        """Ask the parent to account a wait of ``ms`` milliseconds (its clock, not ours)."""
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise ValueError(f"sleep takes a whole number of milliseconds >= 0, got {ms!r}")
        answer = self._ask(Sleep, ms=ms)
        if not isinstance(answer, Slept):
            raise ProtocolError(f"a sleep was answered with {answer.type}")
