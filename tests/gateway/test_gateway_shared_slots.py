"""The session's connection budget shared by its gateways (gateway/slots.py, SPEC I162):
the gateways together never hold more upstream calls than the budget, any one of them may
hold all of it, and a killed process's slots are free again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_fakes import CANARY_KEY, FakeUpstream, Step

from pytest_sabot.gateway.limiter import AdaptiveLimit, SlotTimeout
from pytest_sabot.gateway.settings import GatewaySettings
from pytest_sabot.gateway.slots import SharedSlots, make_slots_dir, remove_slots_dir

HERE = Path(__file__).resolve().parent


@pytest.fixture
def slots_dir() -> Iterator[Path]:
    directory = make_slots_dir(4)
    yield directory
    remove_slots_dir(directory)


def _gateway_process(
    slots: Path, connections: int, upstream: str, calls: int
) -> subprocess.Popen[str]:
    env = {**os.environ, "OPENAI_API_KEY": CANARY_KEY}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "slot_gateway.py"), str(slots), str(connections), upstream,
         str(calls)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def _statuses(proc: subprocess.Popen[str]) -> list[int]:
    assert proc.stdout is not None
    statuses: list[int] = json.loads(proc.stdout.readline())
    return statuses


def _end(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None and proc.stdin is not None:
            proc.stdin.close()
    for proc in procs:
        proc.wait(timeout=30)


def test_i162_the_made_directory_is_private_and_holds_one_file_per_slot(slots_dir: Path) -> None:
    assert slots_dir.stat().st_mode & 0o777 == 0o700
    assert sorted(p.name for p in slots_dir.iterdir()) == [f"slot-{i:04d}" for i in range(4)]
    assert str(slots_dir) not in "".join(os.environ.values())


def test_i162_two_holders_in_one_process_exclude_each_other(slots_dir: Path) -> None:
    first, second = SharedSlots(slots_dir, 4), SharedSlots(slots_dir, 4)
    try:
        taken = [first.acquire(0) for _ in range(3)]
        assert None not in taken
        assert second.idle() == 1
        last = second.acquire(0)
        assert last is not None
        assert first.acquire(0) is None and second.acquire(0.05) is None
        first.release(taken[0])  # type: ignore[arg-type]
        assert second.acquire(0) is not None
        assert first.idle() == 0
    finally:
        first.close()
        second.close()
    third = SharedSlots(slots_dir, 4)
    try:
        assert third.idle() == 4  # closing freed every slot
    finally:
        third.close()


def test_i162_a_waiter_is_woken_by_a_release_in_its_own_process(slots_dir: Path) -> None:
    slots = SharedSlots(slots_dir, 4)
    try:
        held = [slots.acquire(0) for _ in range(4)]
        got: list[int | None] = []
        waiter = threading.Thread(target=lambda: got.append(slots.acquire(30)))
        waiter.start()
        time.sleep(0.05)
        assert waiter.is_alive() and not got  # every slot is held: it waits
        slots.release(held[1])  # type: ignore[arg-type]
        waiter.join(30)
        assert got == [held[1]]
    finally:
        slots.close()


def test_i162_the_limit_gives_its_slot_back_when_the_budget_has_none(slots_dir: Path) -> None:
    holder = SharedSlots(slots_dir, 4)
    shared = SharedSlots(slots_dir, 4)
    try:
        for _ in range(4):
            holder.acquire(0)
        limit = AdaptiveLimit(4, shared=shared)
        with pytest.raises(SlotTimeout, match="session's budget"), limit.slot(timeout=0.05):
            pass
        holder.release(0)
        with limit.slot(timeout=5):
            assert shared.held == 1
        assert shared.held == 0
    finally:
        holder.close()
        shared.close()


def test_i162_a_gateway_of_a_shared_session_keeps_the_whole_budget_as_its_ceiling(
    slots_dir: Path, tmp_path: Path
) -> None:
    shared = GatewaySettings.for_session(
        "sim:terra", tmp_path / "out", max_connections=16, share=2, slots_dir=slots_dir
    )
    assert (shared.max_connections, shared.slots_dir) == (16, slots_dir)
    missing = GatewaySettings.for_session(
        "sim:terra", tmp_path / "out", max_connections=16, share=2, slots_dir=tmp_path / "gone"
    )
    assert (missing.max_connections, missing.slots_dir) == (8, None)  # today's fixed share


def test_i162_gateways_in_several_processes_never_pass_the_shared_budget(
    slots_dir: Path,
) -> None:
    upstream = FakeUpstream()
    upstream.queue(*[Step("ok", delay_s=0.15)] * 36)
    procs = [_gateway_process(slots_dir, 4, upstream.url, 12) for _ in range(3)]
    try:
        for proc in procs:
            _go(proc)
        assert [_statuses(p) for p in procs] == [[200] * 12] * 3
    finally:
        _end(procs)
        upstream.close()
    assert len(upstream.seen) == 36
    assert upstream.max_in_flight == 4  # reached, never passed (each gateway's ceiling is 4)


def test_i162_one_gateway_alone_reaches_the_whole_budget(slots_dir: Path) -> None:
    upstream = FakeUpstream()
    upstream.queue(*[Step("ok", delay_s=0.2)] * 8)
    busy = _gateway_process(slots_dir, 4, upstream.url, 8)
    idle = [_gateway_process(slots_dir, 4, upstream.url, 0) for _ in range(2)]
    try:
        _go(busy)
        assert _statuses(busy) == [200] * 8
    finally:
        _end([busy, *idle])
        upstream.close()
    assert upstream.max_in_flight == 4  # not 4 // 3: the idle gateways hold nothing


def test_i162_a_killed_gateway_process_leaves_its_slots_free(slots_dir: Path) -> None:
    upstream = FakeUpstream()
    upstream.queue(*[Step("hang", delay_s=8)] * 4)
    proc = _gateway_process(slots_dir, 4, upstream.url, 4)
    probe = SharedSlots(slots_dir, 4)
    try:
        _go(proc)
        deadline = time.monotonic() + 30
        while len(upstream.seen) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(upstream.seen) == 4
        assert probe.idle() == 0  # the process holds every slot of the budget
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert probe.idle() == 4  # the kernel freed them with the process
        assert probe.acquire(0) is not None
    finally:
        probe.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        upstream.close()


def test_i162_a_rate_limited_gateway_of_a_shared_budget_halves_what_it_holds() -> None:
    """A ceiling of the whole budget halved while the gateway holds half of it would not
    slow the gateway: the limit halves from the calls it holds and the one refused."""
    from contextlib import ExitStack

    big = make_slots_dir(16)
    shared = SharedSlots(big, 16)
    try:
        limit = AdaptiveLimit(16, shared=shared)
        with ExitStack() as held:
            generations = [held.enter_context(limit.slot(timeout=5)) for _ in range(7)]
            generation = generations[-1]
            limit.rate_limited(generation)  # 7 held + the refused call: 8 -> 4
            assert limit.limit == 4
        alone = AdaptiveLimit(16)  # a budget of its own: halves its ceiling, as before
        with ExitStack() as held:
            generations = [held.enter_context(alone.slot(timeout=5)) for _ in range(7)]
            generation = generations[-1]
            alone.rate_limited(generation)
            assert alone.limit == 8
    finally:
        shared.close()
        remove_slots_dir(big)
