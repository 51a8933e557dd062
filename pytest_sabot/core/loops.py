"""Running a framework's coroutine from the harness's synchronous pipeline thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

_T = TypeVar("_T")


def in_fresh_loop(make: Awaitable[_T], thread_name: str) -> _T:
    """Run ``make`` on a new event loop; on a thread of its own (named ``thread_name``)
    when an event loop is already running in this one. An error is raised here as it was
    raised there."""

    async def main() -> _T:
        return await make

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(main())
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name=thread_name)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: _T = box["value"]
    return value
