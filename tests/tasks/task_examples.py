"""Hand-written artifacts for the task tests: one correct artifact per task and the
faulted variants each operator produces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TASKS = ("T1", "T2", "T3", "T4", "T5")

T1_RECORD = {
    "part_id": "P-3117",
    "sensor_id": "TS-0412",
    "gain_factor": 47.1,
    "hold_temp_c": 36.4,
    "burst_kpa": 126.8,
    "leak_ppm": 61.9,
    "verdict": "accept",
}

T2_SUMMARY = (
    "The Halden-3 cell reaches an audited 4,800 cycles to 80% capacity. Its specific energy "
    "is 158 Wh/kg at cell level, packs cost $74/kWh at volume production, and the rated "
    "minimum operating temperature is -20 °C. It was developed at the Brennecke Institute "
    "for Electrochemical Storage."
)

T3_CODE = """\
def kessler_freight_charge(weight_kg, zone):
    rates = {"coastal": 3.20, "inland": 4.10, "highland": 5.75}
    if zone not in rates or weight_kg <= 0:
        raise ValueError(zone)
    charge = 4.50 + weight_kg * rates[zone]
    if zone == "highland":
        charge += 6.00
    if weight_kg >= 50:
        charge -= 2.00
    return round(charge, 2)
"""

T4_PLAN = {
    "depot": "Vantwell",
    "vehicle": "V7",
    "fuel_range_km": 140,
    "stops": ["Vantwell", "C1", "C3", "C2", "C4", "C5", "Vantwell"],
    "legs": [
        {"from": "Vantwell", "to": "C1", "km": 30},
        {"from": "C1", "to": "C3", "km": 25},
        {"from": "C3", "to": "C2", "km": 40},
        {"from": "C2", "to": "C4", "km": 30},
        {"from": "C4", "to": "C5", "km": 35},
        {"from": "C5", "to": "Vantwell", "km": 45},
    ],
    "refuel_at": ["C4"],
    "total_km": 205,
}

T5_QUOTE = (
    "Mulch shall be laid to a depth of 1.8 inches within ten days after the first frost, "
    "once soil temperature has sustained below 4 °C for three consecutive nights."
)
T5_ANSWER = (
    "ANSWER: Lay the mulch 1.8 inches deep within ten days after the first frost, once the "
    "soil has sustained below 4 °C for three nights.\n"
    f'QUOTE: "{T5_QUOTE}"\n'
    "SOURCE: care_standard.md, clause 4.2"
)

CORRECT: dict[str, str] = {
    "T1": json.dumps(T1_RECORD),
    "T2": T2_SUMMARY,
    "T3": T3_CODE,
    "T4": json.dumps(T4_PLAN),
    "T5": T5_ANSWER,
}


def t1(**changes: object) -> str:
    return json.dumps({**T1_RECORD, **changes})


def t4(**changes: object) -> str:
    return json.dumps({**T4_PLAN, **changes})


# Artifacts carrying each value fault the way it would reach the final output.
WRONG: dict[str, list[tuple[str, str]]] = {
    "T1": [
        ("O1 tool-lie gain", t1(gain_factor=74.1)),
        ("O3 altered part id", t1(part_id="P-3171")),
        ("O4 transposed gain", t1(gain_factor=41.7)),
        ("O5 rev A values", t1(hold_temp_c=39.2, burst_kpa=131.0, leak_ppm=65.2)),
        ("extra field", json.dumps({**T1_RECORD, "note": "x"})),
    ],
    "T2": [
        ("O1 tool-lie cycles", T2_SUMMARY.replace("4,800", "8,400")),
        ("O3 altered institute", T2_SUMMARY.replace("Brennecke", "Brenneke")),
        ("O5 pre-audit cycles", T2_SUMMARY.replace("4,800", "12,000")),
        ("both figures", T2_SUMMARY + " Another record gives 12,000 cycles."),
        ("pack-level energy", T2_SUMMARY.replace("158 Wh/kg", "131 Wh/kg")),
    ],
    "T3": [
        ("O1 tool-lie rate", T3_CODE.replace("5.75", "5.57")),
        ("O3 renamed function", T3_CODE.replace("kessler_freight_charge", "kessler_freight_cost")),
        (
            "O4 no highland surcharge",
            T3_CODE.replace('    if zone == "highland":\n        charge += 6.00\n', ""),
        ),
        ("O5 rev B rebate", T3_CODE.replace("charge -= 2.00", "charge -= 1.00")),
        ("no error for bad zone", T3_CODE.replace("zone not in rates or ", "")),
    ],
    "T4": [
        ("O1 tool-lie range", t4(fuel_range_km=40, refuel_at=["C2", "C4"])),
        (
            "O3 altered depot",
            json.dumps(T4_PLAN).replace("Vantwell", "Vantwill", 1),  # the first occurrence
        ),
        ("O4 no refuel", t4(refuel_at=[])),
        (
            "O5 rev A leg",
            json.dumps(T4_PLAN)
            .replace('"to": "C2", "km": 40', '"to": "C2", "km": 70')
            .replace('"total_km": 205', '"total_km": 235')
            .replace('"refuel_at": ["C4"]', '"refuel_at": ["C2"]'),
        ),
    ],
    "T5": [
        (
            "O1 tool-lie depth",
            T5_ANSWER.replace("ANSWER: Lay the mulch 1.8", "ANSWER: Lay the mulch 1.6"),
        ),
        ("O3 altered quote", T5_ANSWER.replace("sustained", "dropped")),
        (
            "O4 paraphrase",
            "ANSWER: Lay mulch 1.8 inches deep after frost.\n"
            'QUOTE: "Mulch should go down 1.8 inches deep once frost comes."\n'
            "SOURCE: care_standard.md, clause 4.2",
        ),
        ("O5 rev 3 quote", T5_ANSWER.replace("depth of 1.8", "depth of 0.9")),
        ("wrong source", T5_ANSWER.replace("care_standard.md", "question.md")),
    ],
}


def copy_root(tmp: Path, task: str = "T1") -> Path:
    """A standard root holding a copy of one task, for tests that break files."""
    root = tmp / "root"
    shutil.copytree(ROOT / "tasks" / task, root / "tasks" / task)
    return root
