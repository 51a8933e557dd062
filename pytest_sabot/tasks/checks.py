"""The public check procedures behind each task's CHECK tool.

A check runs on the draft the worker passes in and returns an evidence-bearing report: one
line per item it checked and a closing count line. The checks use only public data (the
published contract, the materials, the tool's declared parameters); none of them is a
fault oracle, so none of them knows a correct answer value.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from pytest_sabot.core.models.task import JsonFieldsRule
from pytest_sabot.tasks.contract import normalize_artifact, shape_problems
from pytest_sabot.tasks.loader import PublicView

CheckFn = Callable[[PublicView, dict[str, Any], str], str]


def _footer(name: str, checked: int, failed: int, unit: str) -> str:
    return f"{name}: checked {checked} {unit}: {checked - failed} ok, {failed} failed"


def _json_object(draft: str) -> dict[str, Any] | str:
    """The draft as a JSON object, or why it is not one ('is not valid JSON (...)' or
    'must be a JSON object')."""
    try:
        value = json.loads(normalize_artifact(draft))
    except ValueError as err:
        return f"is not valid JSON ({err})"
    return value if isinstance(value, dict) else "must be a JSON object"


# --------------------------------------------------------------------------- T1


def record_fields(view: PublicView, params: dict[str, Any], draft: str) -> str:
    """Validate a JSON record field by field against the contract's field layout."""
    rule = next(r for r in view.contract.rules if isinstance(r, JsonFieldsRule))
    name = view.tool("check").name
    obj = _json_object(draft)
    if isinstance(obj, str):
        return f"{name}: the record {obj}; 0 fields checked"
    lines = [f"{name} report"]
    failed = 0
    for field, shape in rule.fields.items():
        if field not in obj:
            lines.append(f"  {field:<12} FAIL  missing")
            failed += 1
            continue
        problems = shape_problems(field, obj[field], shape)
        shown = json.dumps(obj[field])
        if problems:
            failed += 1
            lines.append(f"  {field:<12} FAIL  {shown}: {'; '.join(problems)}")
        else:
            lines.append(f"  {field:<12} ok    {shown} is a {shape.type}")
    extra = [k for k in obj if k not in rule.fields]
    for field in extra:
        failed += 1
        lines.append(f"  {field:<12} FAIL  not a field of the layout")
    lines.append(_footer(name, len(rule.fields) + len(extra), failed, "fields"))
    return "\n".join(lines)


# --------------------------------------------------------------------------- T2


_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]|$)")


def summary_markers(view: PublicView, params: dict[str, Any], draft: str) -> str:
    """Report, per category marker, the sentence of the summary that carries it, and the
    summary's length against the limit."""
    name = view.tool("check").name
    text = normalize_artifact(draft)
    markers: list[str] = list(params.get("markers", []))
    limit = int(params.get("max_chars", 0))
    sentences = [s.strip() for s in _SENTENCE.findall(text) if s.strip()]
    lines = [f"{name} report"]
    failed = 0
    for marker in markers:
        hit = next((s for s in sentences if marker.lower() in s.lower()), None)
        if hit is None:
            failed += 1
            lines.append(f"  marker {marker!r:<12} FAIL  not found")
        else:
            lines.append(f"  marker {marker!r:<12} ok    in: {hit[:90]}")
    length_ok = 0 < len(text) <= limit
    failed += 0 if length_ok else 1
    lines.append(
        f"  length        {'ok  ' if length_ok else 'FAIL'}  {len(text)} of {limit} characters"
    )
    lines.append(_footer(name, len(markers) + 1, failed, "items"))
    return "\n".join(lines)


# --------------------------------------------------------------------------- T3


_RUNNER = textwrap.dedent(
    """
    import json, sys
    source, cases = json.loads(sys.stdin.read())
    space = {"__name__": "solution"}
    try:
        exec(compile(source, "solution.py", "exec"), space)
    except BaseException as err:
        print(json.dumps({"load_error": type(err).__name__ + ": " + str(err)}))
        raise SystemExit(0)
    def raises(exc, fn, *args):
        try:
            fn(*args)
        except exc:
            return True
        except BaseException:
            return False
        return False
    out = []
    for case in cases:
        try:
            env = dict(space)
            env["raises"] = raises
            value = eval(case, env)
            out.append([bool(value), repr(value)])
        except BaseException as err:
            out.append([False, type(err).__name__ + ": " + str(err)])
    print(json.dumps({"results": out}))
    """
)


def run_python(source: str, expressions: list[str], timeout_s: float) -> dict[str, Any]:
    """Execute ``source`` in a fresh isolated interpreter and evaluate each expression in
    its namespace. Returns {"results": [[ok, detail], ...]} or {"load_error"|"error": ...}.
    Never hangs: the subprocess is killed at the timeout."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _RUNNER],
            input=json.dumps([source, expressions]),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:g} s"}
    lines = done.stdout.strip().splitlines()
    if not lines:
        return {"error": f"no result (exit code {done.returncode}): {done.stderr.strip()[-200:]}"}
    try:
        parsed = json.loads(lines[-1])
    except ValueError:
        return {"error": f"unreadable result: {lines[-1][:200]}"}
    return parsed if isinstance(parsed, dict) else {"error": "unreadable result"}


def python_cases(view: PublicView, params: dict[str, Any], draft: str) -> str:
    """Run the published property cases (params['cases']: name + boolean expression)
    against the draft module and report each case."""
    name = view.tool("check").name
    cases: list[dict[str, str]] = list(params.get("cases", []))
    timeout = float(params.get("timeout_s", 10.0))
    outcome = run_python(normalize_artifact(draft), [c["expr"] for c in cases], timeout)
    if "results" not in outcome:
        problem = outcome.get("load_error") or outcome.get("error")
        return f"{name}: the module could not be run ({problem}); 0 of {len(cases)} cases ran"
    lines = [f"{name} report"]
    failed = 0
    for case, (ok, detail) in zip(cases, outcome["results"], strict=False):
        if not ok:
            failed += 1
        lines.append(
            f"  case {case['name']:<28} {'ok  ' if ok else 'FAIL'}  {case['expr']} -> {detail}"
        )
    lines.append(_footer(name, len(cases), failed, "cases"))
    return "\n".join(lines)


# --------------------------------------------------------------------------- T4


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def plan_rules(view: PublicView, params: dict[str, Any], draft: str) -> str:
    """Check a route plan against the dispatch rules (params: depot, stops in required
    order, fuel stations), using the plan's own distances and its own stated range."""
    name = view.tool("check").name
    plan = _json_object(draft)
    if isinstance(plan, str):
        return f"{name}: the plan {plan}; 0 rules checked"
    depot = str(params["depot"])
    order = [str(s) for s in params["order"]]
    stations = {str(s) for s in params["stations"]}
    stops: list[Any] = _list(plan.get("stops"))
    legs: list[Any] = _list(plan.get("legs"))
    refuels: list[Any] = _list(plan.get("refuel_at"))
    rng = plan.get("fuel_range_km")
    results: list[tuple[str, bool, str]] = []

    ends = bool(stops) and stops[0] == depot and stops[-1] == depot
    results.append(("starts and ends at the depot", ends, f"first {stops[:1]}, last {stops[-1:]}"))
    inner = stops[1:-1]
    once = sorted(inner) == sorted(order)
    results.append(
        ("every stop exactly once", once, f"{len(inner)} stops: {', '.join(map(str, inner))}")
    )
    results.append(("stops in window order", inner == order, f"expected order {', '.join(order)}"))
    chain = [(str(leg.get("from")), str(leg.get("to"))) for leg in legs if isinstance(leg, dict)]
    consecutive = chain == list(itertools.pairwise(stops))
    results.append(("legs follow the stops", consecutive, f"{len(chain)} legs"))
    kms = [leg.get("km") for leg in legs if isinstance(leg, dict)]
    numeric = all(isinstance(k, int | float) for k in kms)
    total = sum(k for k in kms if isinstance(k, int | float))
    sums = (
        numeric
        and isinstance(plan.get("total_km"), int | float)
        and abs(total - plan["total_km"]) < 1e-6
    )
    results.append(
        (
            "total_km is the sum of the legs",
            bool(sums),
            f"legs sum to {total:g}, total_km {plan.get('total_km')}",
        )
    )
    stretch = 0.0
    longest = 0.0
    for (start, _end), km in zip(chain, kms, strict=False):
        if start in refuels:
            stretch = 0.0
        stretch += float(km) if isinstance(km, int | float) else 0.0
        longest = max(longest, stretch)
    in_range = isinstance(rng, int | float) and longest <= rng
    results.append(
        (
            "no stretch between refuels beyond fuel_range_km",
            in_range,
            f"longest stretch {longest:g} km, fuel_range_km {rng}",
        )
    )
    at_stations = all(r in stations for r in refuels)
    results.append(
        (
            "refuels only at fuel stations",
            at_stations,
            f"refuel_at {refuels}; stations {sorted(stations)}",
        )
    )

    lines = [f"{name} report"]
    for i, (label, ok, evidence) in enumerate(results, start=1):
        lines.append(f"  rule {i} {label:<46} {'ok  ' if ok else 'FAIL'}  {evidence}")
    lines.append(_footer(name, len(results), sum(1 for _, ok, _ in results if not ok), "rules"))
    return "\n".join(lines)


# --------------------------------------------------------------------------- T5


def _squash(text: str) -> str:
    return " ".join(text.split())


def quote_match(view: PublicView, params: dict[str, Any], draft: str) -> str:
    """Look the quotation up, character for character (blank space squashed), in every
    material; report where it was found or the closest sentence when it was not."""
    name = view.tool("check").name
    quote = normalize_artifact(draft)
    prefix = str(params.get("quote_prefix", "QUOTE:"))
    for line in quote.splitlines():
        if line.startswith(prefix):
            quote = line[len(prefix) :].strip()
            break
    quote = _squash(quote.strip().strip('"“”').strip())
    if not quote:
        return f"{name}: no quotation given; 0 materials searched"
    lines = [f"{name} report", f"  quotation: {len(quote)} characters"]
    found = False
    for m in view.materials:
        body = _squash(m.text)
        at = body.find(quote)
        if at >= 0:
            found = True
            lines.append(f"  {m.name}: exact match at character {at}")
        else:
            lines.append(f"  {m.name}: no exact match")
    if not found:
        words = set(quote.lower().split())
        best = max(
            (
                s.strip()
                for m in view.materials
                for s in re.split(r"(?<=[.!?])\s+", _squash(m.text))
            ),
            key=lambda s: len(words & set(s.lower().split())),
            default="",
        )
        lines.append(f"  closest source sentence: {best}")
    lines.append(
        f"{name}: searched {len(view.materials)} materials: {'match' if found else 'NO MATCH'}"
    )
    return "\n".join(lines)


CHECKS: dict[str, CheckFn] = {
    "record_fields": record_fields,
    "summary_markers": summary_markers,
    "python_cases": python_cases,
    "plan_rules": plan_rules,
    "quote_match": quote_match,
}
