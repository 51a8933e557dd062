"""T4, route planning: order the stops by delivery window, take leg distances from the
route sheet and the fuel range from the fleet registry, and place refuels by the
dispatch note's rule.

Weak tier (O4): the fuel range is ignored, so the plan has no refuel stop.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

from pytest_sabot.core.prompt_format import Section
from pytest_sabot.sim.procedures import common as c
from pytest_sabot.sim.procedures.types import ExchangeLike, Finding, Step

NOTE = "dispatch_note.md"
SHEET = "route_sheet.md"
FIELDS = ("depot", "vehicle", "fuel_range_km", "stops", "legs", "refuel_at", "total_km")
_DEPOT = re.compile(r"Depot:\s*([A-Z][a-z]+)")
_VEHICLE = re.compile(r"van (V\d+)")
_WINDOW = re.compile(r"^\|\s*(C\d+)\s*\|\s*(\d{2}:\d{2})\s*-", re.MULTILINE)
_STATIONS = re.compile(r"Fuel stations on this round:\s*([^(.]*)")
_DIST = re.compile(r"^\|\s*(\w+)\s*\|\s*(\w+)\s*\|\s*(\d+(?:\.\d+)?)\s*\|", re.MULTILINE)
_RANGE_OBS = re.compile(r"fuel range (\d+(?:\.\d+)?) km")
_RANGE_SHEET = re.compile(r"fuel range on a full tank[^:]*:\s*(\d+(?:\.\d+)?) km")
_REV = re.compile(r"\brev ([A-Z])\b")


def dispatch(sections: Sequence[Section]) -> dict[str, Any]:
    note = c.material(sections, NOTE)
    depot = _DEPOT.search(note)
    vehicle = _VEHICLE.search(note)
    windows = sorted(_WINDOW.findall(note), key=lambda w: w[1])
    stations = _STATIONS.search(" ".join(note.split()))
    return {
        "depot": depot.group(1) if depot else "",
        "vehicle": vehicle.group(1) if vehicle else "",
        "order": [w[0] for w in windows],
        "stations": re.findall(r"C\d+", stations.group(1)) if stations else [],
    }


def distances(sheet: str) -> dict[frozenset[str], float]:
    return {frozenset((a, b)): float(km) for a, b, km in _DIST.findall(sheet)}


def number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def refuels(stops: list[str], legs: list[float], stations: list[str], rng: float) -> list[str]:
    """The dispatch rule: at a station, refuel only if the fuel left would not reach the
    next station (or the depot after the last one)."""
    out: list[str] = []
    used = 0.0
    for i, stop in enumerate(stops[:-1]):
        if i > 0 and stop in stations:
            ahead = 0.0
            for j in range(i, len(stops) - 1):
                ahead += legs[j]
                if stops[j + 1] in stations:
                    break
            if rng - used < ahead:
                out.append(stop)
                used = 0.0
        used += legs[i]
    return out


def plan(sections: Sequence[Section], rng: float, weak: bool) -> dict[str, Any]:
    d = dispatch(sections)
    table = distances(c.material(sections, SHEET))
    stops = [d["depot"], *d["order"], d["depot"]]
    kms = [table.get(frozenset((a, b)), 0.0) for a, b in itertools.pairwise(stops)]
    return {
        "depot": d["depot"],
        "vehicle": d["vehicle"],
        "fuel_range_km": number(rng),
        "stops": stops,
        "legs": [
            {"from": a, "to": b, "km": number(km)}
            for (a, b), km in zip(itertools.pairwise(stops), kms, strict=True)
        ],
        "refuel_at": [] if weak else refuels(stops, kms, d["stations"], rng),
        "total_km": number(sum(kms)),
    }


def worker_step(
    sections: Sequence[Section], history: Sequence[ExchangeLike], *, weak: bool
) -> Step:
    vehicle = dispatch(sections)["vehicle"]

    def build(observations: dict[str, str]) -> str:
        m = _RANGE_OBS.search(observations.get(vehicle, ""))
        return json.dumps(plan(sections, float(m.group(1)) if m else 0.0, weak))

    return c.drive(sections, history, [vehicle] if vehicle else [], build)


def contract_problems(sections: Sequence[Section]) -> list[str]:
    p, out = c.json_record(sections, FIELDS)
    if p is None:
        return out
    for key in ("depot", "vehicle"):
        if key in p and not isinstance(p[key], str):
            out.append(f"field '{key}' must be a string")
    if isinstance(p.get("vehicle"), str) and not re.fullmatch(r"V\d+", p["vehicle"]):
        out.append("field 'vehicle' must be V followed by digits")
    out += c.non_numbers(p, ("fuel_range_km", "total_km"))
    stops = p.get("stops")
    if "stops" in p and not (
        isinstance(stops, list) and len(stops) >= 3 and all(isinstance(s, str) for s in stops)
    ):
        out.append("field 'stops' must be an array of at least 3 strings")
    legs = p.get("legs")
    if "legs" in p and not (
        isinstance(legs, list) and len(legs) >= 2 and all(isinstance(x, dict) for x in legs)
    ):
        out.append("field 'legs' must be an array of objects")
    refuel = p.get("refuel_at")
    if "refuel_at" in p and not (
        isinstance(refuel, list) and all(isinstance(s, str) for s in refuel)
    ):
        out.append("field 'refuel_at' must be an array of strings")
    return out


def review(sections: Sequence[Section]) -> list[Finding]:
    out = c.generic_findings(sections)
    p = c.json_object(c.draft(sections))
    sheet = c.material(sections, SHEET)
    if p is None or not sheet or not c.material(sections, NOTE):
        return out
    d = dispatch(sections)
    rev = _REV.search(sheet)
    where = f"{SHEET} (rev {rev.group(1)})" if rev else SHEET
    stated = _RANGE_SHEET.search(" ".join(sheet.split()))
    rng = float(stated.group(1)) if stated else None
    for key in ("depot",):
        if p.get(key) != d[key]:
            out.append(
                Finding(
                    f"depot: the draft names {c.fmt(p.get(key))} but the dispatch note's depot "
                    f"is {d[key]}",
                    (str(p.get(key)), d[key]),
                    "the plan's depot is not the dispatch note's depot",
                )
            )
    if rng is not None and not c.same_number(p.get("fuel_range_km"), str(rng)):
        out.append(
            _km_finding(
                "fuel_range_km", p.get("fuel_range_km"),
                f"{where} states the V7 fuel range is", rng,
                "the fuel range in the plan is not the registry's",
            )
        )
    out += _leg_findings(p, distances(sheet), where)
    if rng is not None:
        out += _refuel_findings(sections, p, rng)
    out += _range_log_findings(sections, rng, where)
    return out


def _leg_findings(
    p: dict[str, Any], table: dict[frozenset[str], float], where: str
) -> list[Finding]:
    out: list[Finding] = []
    legs = p.get("legs") if isinstance(p.get("legs"), list) else []
    for leg in legs or []:
        if not isinstance(leg, dict):
            continue
        known = table.get(frozenset((str(leg.get("from")), str(leg.get("to")))))
        if known is not None and not c.same_number(leg.get("km"), str(known)):
            out.append(
                _km_finding(
                    f"leg {leg.get('from')} to {leg.get('to')}", leg.get("km"),
                    f"{where} gives", known,
                    "a leg distance in the plan differs from the current route sheet",
                )
            )
    return out


def _km_finding(
    subject: str, drafted: object, source: str, stated: float, paraphrase: str
) -> Finding:
    """The draft's distance ``drafted`` differs from the one ``source`` states."""
    has, want = f"{c.fmt(drafted)} km", f"{number(stated)} km"
    return Finding(f"{subject}: the draft has {has} but {source} {want}", (has, want), paraphrase)


def _refuel_findings(sections: Sequence[Section], p: dict[str, Any], rng: float) -> list[Finding]:
    correct = plan(sections, rng, weak=False)
    drafted = p.get("refuel_at")
    if drafted == correct["refuel_at"]:
        return []
    longest, stretch = 0.0, 0.0
    drafted_list = drafted if isinstance(drafted, list) else []
    for leg in correct["legs"]:
        if leg["from"] in drafted_list:
            stretch = 0.0
        stretch += float(leg["km"])
        longest = max(longest, stretch)
    need = ", ".join(correct["refuel_at"]) or "nowhere"
    return [
        Finding(
            f"refuel stops: the draft refuels at {c.fmt(drafted)}, but with the fuel range of "
            f"{number(rng)} km the dispatch rule requires a refuel at {need}; as drafted the "
            f"longest stretch on one tank is {number(longest)} km",
            (c.fmt(drafted), need),
            "the refuel stops do not follow the fuel range and the dispatch rule",
        )
    ]


def _range_log_findings(
    sections: Sequence[Section], rng: float | None, where: str
) -> list[Finding]:
    out: list[Finding] = []
    if rng is None:
        return out
    for call in c.calls_of(c.tool_log(sections), sections, "data"):
        m = _RANGE_OBS.search(call.observation)
        if m and not c.same_number(m.group(1), str(rng)):
            out.append(
                Finding(
                    f"{call.tool} returned a fuel range of {m.group(1)} km while {where} states "
                    f"{number(rng)} km",
                    (f"{m.group(1)} km", f"{number(rng)} km"),
                    "the fleet registry and the route sheet disagree on the fuel range",
                )
            )
    return out


def looks_like_artifact(text: str) -> bool:
    p = c.json_object(text)
    return p is not None and "stops" in p
