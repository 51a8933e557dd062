"""The Claude Code CLI, headless and sandboxed, as the standard's cross-lineage judge.

Section 6 names Claude "run headless via claude -p on the Max plan": a CLI logged in with a
subscription. So the CLI authenticates the way the user set it up — the subscription login
it keeps under the user's home (or the keychain), or a key or token the user gives in the
environment (``ANTHROPIC_API_KEY``, ``CLAUDE_CODE_OAUTH_TOKEN``, ``ANTHROPIC_AUTH_TOKEN``).
``--bare`` is never passed: it skips the login and the keychain and accepts only an API key,
so a subscription login could never authenticate (SPEC.md I37).

The sandbox is built from flags that leave authentication alone, and proven on every call:

* ``--tools ""`` (no built-in tool is offered) plus ``--disallowedTools`` with every tool
  name, ``--permission-mode dontAsk`` (anything that would ask is refused), ``--max-turns 1``;
* ``--setting-sources ""`` (no user, project or local settings, so none of their hooks,
  permissions or plugins), ``--settings '{"disableAllHooks": true}'``,
  ``--strict-mcp-config`` with no MCP configuration (no MCP server at all),
  ``--no-session-persistence``;
* a fresh, empty temporary working directory, which must still be empty afterwards;
* a minimal environment: what the CLI needs to find its login (``HOME``,
  ``CLAUDE_CONFIG_DIR``), the key or token variables the user set, proxy and certificate
  settings; non-essential traffic (auto-update, telemetry) off.

Output is ``stream-json``: its ``init`` event states the tools, MCP servers and working
directory the session really has, and any hook that ran shows as an event. Every call
checks them (no tools, no MCP servers, the empty directory, no hook event) before its answer
is used; ``assert_sandboxed()`` also asks the judge to read a canary file outside its
directory, and it must fail to. Every failure fails closed, with a message that names what
to do (for example, log in).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from pytest_sabot.core.model_spec import ModelSpec
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

# Settings given on the command line (the only settings source left): no hooks at all.
FLAG_SETTINGS = json.dumps({"disableAllHooks": True})

# Variables passed through to the CLI. Credentials are passed only when the user set them.
PASSED_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "CLAUDE_CONFIG_DIR",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
)
CREDENTIAL_ENV = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN")
QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}

_LOGIN_HINT = (
    "log the CLI in once (run `claude`, then /login) or set ANTHROPIC_API_KEY or "
    "CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`)"
)


def judge_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment: the passed-through variables that are set, plus quiet mode."""
    source = dict(os.environ if environ is None else environ)
    env = {k: source[k] for k in (*PASSED_ENV, *CREDENTIAL_ENV) if source.get(k)}
    env.update(QUIET_ENV)
    return env


def _redact(text: str, env: dict[str, str]) -> str:
    """Text with every credential value of ``env`` blanked out."""
    for name in CREDENTIAL_ENV:
        value = env.get(name)
        if value:
            text = text.replace(value, f"[{name}]")
    return text


def claude_cli_judge(spec: ModelSpec, gateway_url: str | None) -> ClaudeCliJudge:
    """The registry's factory of ``claude-cli[:<model>]`` (the standard's judge)."""
    del gateway_url  # the CLI reaches its own provider
    return ClaudeCliJudge(model=spec.name or None)


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
        self.auth_source: str | None = None  # as the CLI's init event reports it

    def command(self) -> list[str]:
        cmd = [
            self.executable,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--max-turns",
            str(self.max_turns),
            "--tools",
            "",
            "--disallowedTools",
            ",".join(DISALLOWED),
            "--permission-mode",
            "dontAsk",
            "--setting-sources",
            "",
            "--settings",
            FLAG_SETTINGS,
            "--strict-mcp-config",
            "--no-session-persistence",
        ]
        if self.model:
            cmd += ["--model", self.model]
        return cmd

    def _run(self, prompt: str) -> str:
        env = judge_environment()
        with tempfile.TemporaryDirectory(prefix="sabot-judge-") as cwd:
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
            events = _stream_events(proc.stdout)
            result = _result_event(events)
            if proc.returncode != 0 or result is None or _is_error(result):
                raise JudgeBackendError(_redact(_failure(proc, result), env))
            self._check_session(events, Path(cwd))
        answer = result.get("result")
        if not isinstance(answer, str):
            raise JudgeBackendError("claude-cli judge result event has no text 'result'")
        return answer

    def _check_session(self, events: list[dict[str, Any]], cwd: Path) -> None:
        """Fail closed unless the session the CLI reports is the sandbox asked for."""
        init = next(
            (e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), None
        )
        if init is None:
            raise JudgeBackendError("claude-cli judge reported no init event; sandbox unproven")
        tools = init.get("tools")
        if tools != []:
            raise JudgeBackendError(f"sandbox breached: the judge session has tools {tools!r}")
        servers = init.get("mcp_servers")
        if servers not in (None, []):
            raise JudgeBackendError(
                f"sandbox breached: the judge session has MCP servers {servers!r}"
            )
        reported = init.get("cwd")
        if not isinstance(reported, str) or Path(reported).resolve() != cwd.resolve():
            raise JudgeBackendError(
                f"sandbox breached: the judge ran in {reported!r}, not its empty directory"
            )
        hooks = [e for e in events if e.get("type") == "system" and "hook" in str(e.get("subtype"))]
        if hooks:
            raise JudgeBackendError(f"sandbox breached: {len(hooks)} hook event(s) in the session")
        source = init.get("apiKeySource")
        self.auth_source = str(source) if source is not None else None

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


def _stream_events(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects of a stream-json output, one per line (other lines skipped)."""
    events: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def _result_event(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((e for e in reversed(events) if e.get("type") == "result"), None)


def _is_error(result: dict[str, Any]) -> bool:
    return bool(result.get("is_error")) or result.get("subtype", "success") != "success"


def _failure(proc: subprocess.CompletedProcess[str], result: dict[str, Any] | None) -> str:
    """Why a call failed, in words a user can act on."""
    said = ""
    if result is not None:
        said = str(result.get("result") or result.get("subtype") or "")
    if not said:
        said = (proc.stderr or proc.stdout or "").strip()[-300:]
    if "not logged in" in said.lower() or "/login" in said:
        return f"claude-cli judge is not authenticated ({said}); {_LOGIN_HINT}"
    if result is None:
        return f"claude-cli judge exited {proc.returncode} with no result event: {said}"
    return f"claude-cli judge reported an error (exit {proc.returncode}): {said[:300]}"
