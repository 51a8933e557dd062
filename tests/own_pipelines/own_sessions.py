"""One keyless session of the two wrapped pipelines per wiring, shared by the tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sabot.core.paths import standard_root

PIPELINES = Path(__file__).parent / "pipelines"
WORKTREE = Path(__file__).resolve().parents[2]
ADAPTERS = "own_wrap:reflection,own_wrap:critic_team"


def project(path: Path) -> Path:
    """A standard root: the shipped data plus the candidate matrix of the two pipelines."""
    root = path / "root"
    if not root.is_dir():
        for folder in ("cells", "tasks", "mappings"):
            shutil.copytree(standard_root() / folder, root / folder)
        shutil.copy(PIPELINES / "own.yaml", root / "cells" / "own.yaml")
        (root / "cells" / "seeds" / "own.json").write_text(
            json.dumps({"wave": 126, "registered": "2026-12-01", "seeds": [11]})
        )
    return root


@dataclass(frozen=True)
class Session:
    out: Path
    returncode: int
    text: str

    def results(self) -> dict[str, Any]:
        return json.loads((self.out / "results.json").read_text())

    def outcome(self, cell_id: str) -> dict[str, Any]:
        return json.loads((self.out / "cells" / cell_id / "outcome.json").read_text())

    def events(self, cell_id: str) -> list[dict[str, Any]]:
        path = self.out / "cells" / cell_id / "events.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line]


def session(path: Path, *args: str, wiring: str = "", model: str = "sim:vigilant") -> Session:
    """``pytest --sabot-wave=own`` over the two pipelines, in a subprocess."""
    root = project(path)
    out = path / f"out-{wiring or 'own'}-{len(list(path.glob('out-*')))}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PIPELINES), str(WORKTREE),
                                         env.get("PYTHONPATH", "")])
    env["OWN_WIRING"] = wiring
    env["COLUMNS"] = "200"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--sabot-wave=own", f"--sabot-root={root}", f"--sabot-adapter={ADAPTERS}",
         f"--sabot-model={model}", f"--sabot-out={out}", "--sabot-timeout=60", *args],
        cwd=path, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    return Session(out, done.returncode, done.stdout + done.stderr)
