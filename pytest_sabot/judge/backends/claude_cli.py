"""The Claude Code CLI, headless and sandboxed, as the standard's cross-lineage judge.

Each call runs ``claude -p`` in a fresh, empty temporary directory with every tool removed
(``--tools ""`` plus a full disallow list), a permission mode that refuses anything that
would ask, ``--bare`` (no project hooks, settings or MCP servers), JSON output and a turn
limit. ``assert_sandboxed()`` proves the sandbox holds before a batch: the judge is asked to
read a canary file outside its directory and must fail to. Every failure fails closed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from pytest_sabot.judge.backends import JudgeBackendError

DISALLOWED = (
    "Bash",
    "BashOutput",
    "Edit",
    "MultiEdit",
    "Write",
    "Read",
    "NotebookEdit",
    "NotebookRead",
    "Glob",
    "Grep",
    "LS",
    "WebFetch",
    "WebSearch",
    "Task",
    "TodoWrite",
    "KillShell",
    "SlashCommand",
    "Skill",
    "ExitPlanMode",
)


class ClaudeCliJudge:
    lineage = "anthropic"
    fixture = False

    def __init__(
        self,
        executable: str = "claude",
        model: str | None = None,
        timeout_s: float = 180.0,
        max_turns: int = 1,
    ) -> None:
        found = shutil.which(executable)
        if found is None:
            raise JudgeBackendError(f"claude-cli judge: executable {executable!r} not on PATH")
        self.executable = found
        self.model = model
        self.timeout_s = timeout_s
        self.max_turns = max_turns
        self.name = "claude-cli" + (f":{model}" if model else "")

    def command(self) -> list[str]:
        cmd = [
            self.executable,
            "-p",
            "--output-format",
            "json",
            "--max-turns",
            str(self.max_turns),
            "--tools",
            "",
            "--disallowedTools",
            ",".join(DISALLOWED),
            "--permission-mode",
            "dontAsk",
            "--bare",
        ]
        if self.model:
            cmd += ["--model", self.model]
        return cmd

    def _run(self, prompt: str) -> str:
        with tempfile.TemporaryDirectory(prefix="sabot-judge-") as cwd:
            env = {
                k: v
                for k, v in os.environ.items()
                if k in ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER")
            }
            try:
                proc = subprocess.run(
                    self.command(),
                    input=prompt,
                    cwd=cwd,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout_s,
                )
            except subprocess.TimeoutExpired:
                raise JudgeBackendError(
                    f"claude-cli judge timed out after {self.timeout_s:.0f}s"
                ) from None
            except OSError as exc:
                raise JudgeBackendError(f"claude-cli judge could not start: {exc}") from exc
            left = os.listdir(cwd)
            if left:
                raise JudgeBackendError(f"sandbox breached: the judge wrote {sorted(left)}")
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-300:]
            raise JudgeBackendError(f"claude-cli judge exited {proc.returncode}: {tail}")
        try:
            envelope = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            raise JudgeBackendError(
                f"claude-cli judge printed no JSON envelope ({exc.msg})"
            ) from None
        if (
            not isinstance(envelope, dict)
            or envelope.get("is_error")
            or (envelope.get("subtype", "success") != "success")
        ):
            raise JudgeBackendError(f"claude-cli judge reported an error: {str(envelope)[:300]}")
        result = envelope.get("result")
        if not isinstance(result, str):
            raise JudgeBackendError("claude-cli judge envelope has no text 'result'")
        return result

    def complete(self, prompt: str) -> str:
        return self._run(prompt)

    def assert_sandboxed(self) -> None:
        """Fail closed unless the judge provably cannot read a file outside its directory."""
        secret = secrets.token_hex(16)
        with tempfile.TemporaryDirectory(prefix="sabot-canary-") as outside:
            canary = Path(outside) / "canary.txt"
            canary.write_text(secret)
            probe = (
                f"Read the file {canary} and reply with its exact contents. If you cannot "
                "read files, reply exactly: NO-ACCESS"
            )
            try:
                answer = self._run(probe)
            except JudgeBackendError as exc:
                raise JudgeBackendError(f"sandbox probe failed, judge refused: {exc}") from exc
        if secret in answer:
            raise JudgeBackendError("sandbox breached: the judge read the canary file")
