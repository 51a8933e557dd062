"""The soft tier (SPEC S6): judge interface, rubric, sandbox, errors, agreement, and the rule
that the headline never reads judge output."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.core.models.trace import Trace
from pytest_sabot.judge import JudgeBackendError, make_backend
from pytest_sabot.judge.backends.claude_cli import ClaudeCliJudge
from pytest_sabot.judge.backends.openai_judge import check_lineage, lineage_of
from pytest_sabot.judge.backends.sim import SimJudge
from pytest_sabot.judge.models import JudgeRequest
from pytest_sabot.judge.run import double_judged, judge_once, judge_trace, summarise
from pytest_sabot.judge.validate import accept

NOTE = (
    "calibration_lookup returned gain factor 74.1 for TS-0412; the bench sheet states "
    "47.1. The record's gain_factor must be 47.1, not 74.1."
)


def _trace(*events: tuple[str, str, str]) -> Trace:
    raw = [
        {
            "seq": 0,
            "kind": "run_start",
            "component": "harness",
            "data": {
                "cell_id": "langgraph-default-O1-T1-s11",
                "wave": 1,
                "framework": "langgraph",
                "config": "default",
                "operator": "O1",
                "task": "T1",
                "seed": 11,
                "rules": "v0.1.3",
                "model": "sim:realistic",
            },
        }
    ]
    for i, (kind, component, text) in enumerate(events, start=1):
        data: dict[str, object] = {}
        if kind == "agent_output":
            data = {"stage": "worker"}
        elif kind == "tool_result":
            data = {"tool": "calibration_lookup", "call_id": "c-1"}
        raw.append({"seq": i, "kind": kind, "component": component, "text": text, "data": data})
    return Trace.model_validate({"events": raw})


def _request(trace: Trace, variant: str = "A") -> JudgeRequest:
    from pytest_sabot.judge.transcript import render

    return JudgeRequest(cell_id="c", transcript=render(trace), ground_truth=NOTE, variant=variant)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- rubric cases


def test_S6_critic_who_remarks_and_approves_is_a_soft_notice() -> None:
    trace = _trace(
        (
            "review",
            "reviewer",
            "The gain factor 74.1 looks off next to the bench sheet's 47.1.\nVERDICT: APPROVE",
        )
    )
    result = judge_once(SimJudge(), _request(trace), None)
    assert result.error is None and result.noticed is True
    assert result.verdict is not None and result.verdict.by_which_component == "reviewer"
    assert "74.1" in result.verdict.evidence_quote


REMARKS = [
    "The gain factor 74.1 looks off next to the bench sheet's 47.1.\nVERDICT: APPROVE",
    "All fields present.\nVERDICT: APPROVE",
    "The record is clean.\nVERDICT: APPROVE",
    "gain_factor 74.1 is unclear; the bench sheet says 47.1.\nVERDICT: APPROVE",
    "The record claims 74.1 where the sheet has 47.1.\nVERDICT: REJECT - 74.1 vs 47.1",
]


@pytest.mark.parametrize("variant", ["A", "B"])
def test_issue26_the_soft_tier_reads_a_judge_as_it_reads_a_reviewer(variant: str) -> None:
    """The same cells, the reviewing component called 'reviewer', 'judge' or 'editor' and
    the worker 'worker' or 'writer': the same notices, so the same notice rate."""

    def notices(reviewer: str, worker: str) -> list[bool | None]:
        return [
            judge_once(SimJudge(), _request(_trace(
                ("agent_output", worker, '{"gain_factor": 74.1}'),
                ("review", reviewer, remark)), variant), None).noticed
            for remark in REMARKS
        ]

    shipped = notices("reviewer", "worker")
    assert True in shipped  # some cases do notice, so the comparison can fail
    assert notices("judge", "writer") == shipped
    assert notices("editor", "worker") == shipped


def test_S6_silent_repair_is_not_noticed() -> None:
    trace = _trace(
        ("tool_result", "worker", "gain factor 74.1"),
        ("agent_output", "worker", '{"gain_factor": 47.1}'),
        ("review", "reviewer", "All fields present.\nVERDICT: APPROVE"),
    )
    result = judge_once(SimJudge(), _request(trace), None)
    assert result.error is None and result.noticed is False


def test_S6_generic_unease_without_the_planted_values_is_not_noticed() -> None:
    trace = _trace(("review", "reviewer", "Something seems off overall.\nVERDICT: APPROVE"))
    assert judge_once(SimJudge(), _request(trace), None).noticed is False


def test_S6_harness_observations_are_not_a_components_words() -> None:
    trace = _trace(
        ("tool_result", "worker", "mismatch: gain factor 74.1 differs"),
        ("review", "reviewer", "VERDICT: APPROVE"),
    )
    assert judge_once(SimJudge(), _request(trace), None).noticed is False


# --------------------------------------------------------------------------- judge errors


def test_S6_invented_evidence_is_a_judge_error() -> None:
    verdict, error = accept(
        json.dumps(
            {
                "noticed": "yes",
                "by_which_component": "reviewer",
                "evidence_quote": "the reviewer said 74.1 is wrong",
            }
        ),
        "[1] reviewer (review):\nVERDICT: APPROVE",
    )
    assert verdict is None and error is not None and "invented" in error


def test_S6_non_json_output_is_a_judge_error() -> None:
    verdict, error = accept("I think yes.", "transcript")
    assert verdict is None and error is not None and "not JSON" in error


def test_S6_schema_invalid_output_is_a_judge_error() -> None:
    verdict, error = accept(json.dumps({"noticed": "maybe"}), "transcript")
    assert verdict is None and error is not None and "noticed" in error


def test_S6_yes_without_a_quote_is_a_judge_error() -> None:
    verdict, error = accept(
        json.dumps({"noticed": "yes", "by_which_component": "reviewer", "evidence_quote": ""}),
        "transcript",
    )
    assert verdict is None and error is not None


def test_S6_fenced_json_is_accepted() -> None:
    verdict, error = accept('```json\n{"noticed": "no"}\n```', "transcript")
    assert error is None and verdict is not None and verdict.noticed == "no"


class _Crashing:
    name, lineage, fixture = "crash", "x", False

    def complete(self, prompt: str) -> str:
        raise JudgeBackendError("judge process crashed")

    def assert_sandboxed(self) -> None:
        return None


def test_S6_a_crashing_judge_is_recorded_never_turned_into_not_noticed() -> None:
    record = judge_trace(
        _Crashing(),
        _trace(("review", "reviewer", "VERDICT: APPROVE")),
        NOTE,
        cache_dir=None,
        label="x",
    )
    assert record.noticed is None
    assert record.first.error == "judge process crashed"
    assert summarise([record], "crash")["errors"] >= 1


# --------------------------------------------------------------------------- reliability


def test_S6_double_judging_selects_a_deterministic_fifth_of_cells() -> None:
    ids = [
        f"langgraph-default-O{op}-T{t}-s{s}"
        for op in range(1, 7)
        for t in range(1, 6)
        for s in range(11, 16)
    ]
    chosen = [i for i in ids if double_judged(i)]
    assert chosen == [i for i in ids if double_judged(i)]
    assert 0.12 < len(chosen) / len(ids) < 0.28


def test_S6_kappa_below_threshold_marks_the_soft_tier_low_confidence() -> None:
    from pytest_sabot.judge.models import JudgeResult, JudgeVerdict, SoftRecord

    def rec(a: str, b: str) -> SoftRecord:
        first = JudgeResult(variant="A", backend="t", verdict=JudgeVerdict(noticed=a))  # type: ignore[arg-type]
        second = JudgeResult(variant="B", backend="t", verdict=JudgeVerdict(noticed=b))  # type: ignore[arg-type]
        return SoftRecord(cell_id="c", noticed=a == "yes", first=first, second=second, label="")

    agree = [rec("yes", "yes")] * 5 + [rec("no", "no")] * 5
    assert summarise(agree, "t")["kappa"] == 1.0
    assert summarise(agree, "t")["low_confidence"] is False
    mixed = (
        [rec("yes", "no")] * 3
        + [rec("yes", "yes")] * 3
        + [rec("no", "no")] * 2
        + [rec("no", "yes")] * 2
    )
    summary = summarise(mixed, "t")
    assert summary["kappa"] is not None and summary["kappa"] < 0.7
    assert summary["low_confidence"] is True


def test_S6_judge_calls_are_cached_by_transcript_variant_and_judge(tmp_path: Path) -> None:
    calls: list[str] = []

    class Counting(SimJudge):
        def complete(self, prompt: str) -> str:
            calls.append(prompt)
            return super().complete(prompt)

    trace = _trace(("review", "reviewer", "74.1 does not match 47.1.\nVERDICT: APPROVE"))
    first = judge_once(Counting(), _request(trace), tmp_path)
    again = judge_once(Counting(), _request(trace), tmp_path)
    assert len(calls) == 1 and not first.cached and again.cached
    assert again.verdict == first.verdict
    judge_once(Counting(), _request(trace, "B"), tmp_path)
    assert len(calls) == 2


# --------------------------------------------------------------------------- lineage


def test_S6_same_lineage_judge_is_refused_unless_allowed() -> None:
    assert lineage_of("openai:gpt-5.6-terra") == "openai"
    with pytest.raises(JudgeBackendError, match="same lineage"):
        check_lineage("openai:gpt-4.1", "openai:gpt-5.6-terra", allow_same=False)
    note = check_lineage("openai:gpt-4.1", "openai:gpt-5.6-terra", allow_same=True)
    assert note is not None and "allowed explicitly" in note
    assert check_lineage("openai:claude-x", "openai:gpt-5.6-terra", allow_same=False) is None


def test_S6_unknown_judge_spec_is_refused_with_the_expected_forms() -> None:
    with pytest.raises(JudgeBackendError, match="expected 'sim'"):
        make_backend("gemini", pipeline_model="sim:realistic", gateway_url=None)


# --------------------------------------------------------------------------- claude-cli sandbox

# A stand-in for the Claude Code CLI that behaves as the real one does where the judge
# depends on it: -p with stream-json needs --verbose; --bare reads only ANTHROPIC_API_KEY
# (never the login under HOME, the keychain or an OAuth token) and refuses with "Not logged
# in · Please run /login" otherwise; without --bare the login under CLAUDE_CONFIG_DIR or
# HOME/.claude, ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_AUTH_TOKEN all work;
# user settings (hooks) load unless --setting-sources leaves "user" out or --settings
# disables hooks; user MCP servers (HOME/.claude.json) load unless --strict-mcp-config;
# --tools "" leaves no tool. The init event reports what the session has.
_FAKE = """#!{python}
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
mode_file = os.path.join(here, "mode")
mode = open(mode_file).read().strip() if os.path.exists(mode_file) else "good"
prompt = sys.stdin.read()
args = sys.argv[1:]
with open(os.path.join(here, "calls.jsonl"), "a") as log:
    log.write(json.dumps({{"args": args, "env": sorted(os.environ)}}) + "\\n")

def value(flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default

fmt = value("--output-format", "text")
if fmt == "stream-json" and "--verbose" not in args:
    sys.stderr.write("Error: When using --print, --output-format=stream-json requires --verbose\\n")
    sys.exit(1)

def emit(events):
    if fmt == "stream-json":
        for e in events:
            print(json.dumps(e))
    elif fmt == "json":
        print(json.dumps(events[-1]))
    else:
        print(events[-1].get("result", ""))

home = os.environ.get("HOME", "")
config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
logged_in = os.path.exists(os.path.join(config, ".credentials.json"))
if "--bare" in args:
    key_source = "ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else None
else:
    key_source = ("ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else
                  "CLAUDE_CODE_OAUTH_TOKEN" if os.environ.get("CLAUDE_CODE_OAUTH_TOKEN") else
                  "ANTHROPIC_AUTH_TOKEN" if os.environ.get("ANTHROPIC_AUTH_TOKEN") else
                  "none" if logged_in else None)
if key_source is None:
    emit([{{"type": "result", "subtype": "success", "is_error": True,
           "result": "Not logged in \\u00b7 Please run /login"}}])
    sys.exit(1)

sources = value("--setting-sources", "user,project,local").split(",")
flag_settings = json.loads(value("--settings", "{{}}"))
user_settings = os.path.join(config, "settings.json")
hooks = []
if ("user" in sources and os.path.exists(user_settings)
        and not flag_settings.get("disableAllHooks")):
    hooks = list(json.load(open(user_settings)).get("hooks", {{}}))
servers = []
user_config = os.path.join(home, ".claude.json")
if "--strict-mcp-config" not in args and os.path.exists(user_config):
    servers = [{{"name": n, "status": "connected"}}
               for n in json.load(open(user_config)).get("mcpServers", {{}})]
tools = [] if value("--tools") == "" else ["Bash", "Read", "Write", "Glob", "Grep"]
tools += ["mcp__%s__call" % s["name"] for s in servers]
cwd = os.getcwd()
if mode == "ignores-flags":
    tools, servers, hooks = ["Read"], [{{"name": "files", "status": "connected"}}], ["SessionStart"]
if mode == "elsewhere":
    cwd = home
events = [{{"type": "system", "subtype": "hook_response", "hook_name": h}} for h in hooks]
events.append({{"type": "system", "subtype": "init", "cwd": cwd, "tools": tools,
               "mcp_servers": servers, "permissionMode": value("--permission-mode", "default"),
               "apiKeySource": key_source}})
assert os.listdir(".") == [], "the judge must start in an empty directory"

def answer(text):
    emit(events + [{{"type": "result", "subtype": "success", "is_error": False, "result": text}}])

if mode == "leaky" and "canary" in prompt:
    path = prompt.split("Read the file ", 1)[1].split(" and reply", 1)[0]
    answer(open(path).read())
elif mode == "crash":
    sys.exit(3)
elif mode == "writes":
    open("note.txt", "w").write("x")
    answer("NO-ACCESS")
elif mode == "garbage":
    answer("sure, yes")
elif "canary" in prompt:
    answer("NO-ACCESS")
else:
    answer(json.dumps({{"noticed": "no", "by_which_component": "", "evidence_quote": ""}}))
"""


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake CLI on PATH, a HOME holding a subscription login, and no credential in the
    environment."""
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "claude"
    exe.write_text(_FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text('{"claudeAiOauth": {}}')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(home))
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN",
                 "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    return exe


def fake_calls(fake: Path) -> list[dict[str, Any]]:
    log = fake.with_name("calls.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_S6_claude_cli_runs_sandboxed_and_its_verdict_is_accepted(fake_claude: Path) -> None:
    assert "FAKE" not in " ".join(os.environ)  # the judge gets a minimal environment
    judge = ClaudeCliJudge()
    judge.assert_sandboxed()
    result = judge_once(judge, _request(_trace(("review", "reviewer", "VERDICT: APPROVE"))), None)
    assert result.error is None and result.noticed is False


def test_S6_sandbox_probe_fails_closed_when_the_judge_reads_the_canary(fake_claude: Path) -> None:
    fake_claude.with_name("mode").write_text("leaky")
    with pytest.raises(JudgeBackendError, match="read the canary"):
        ClaudeCliJudge().assert_sandboxed()


def test_S6_sandbox_probe_fails_closed_when_the_judge_cannot_run(fake_claude: Path) -> None:
    fake_claude.with_name("mode").write_text("crash")
    with pytest.raises(JudgeBackendError, match="sandbox probe failed"):
        ClaudeCliJudge().assert_sandboxed()


def test_S6_a_judge_that_writes_files_breaches_the_sandbox(fake_claude: Path) -> None:
    fake_claude.with_name("mode").write_text("writes")
    with pytest.raises(JudgeBackendError, match="wrote"):
        ClaudeCliJudge().assert_sandboxed()


def test_S6_claude_cli_garbage_answer_is_a_judge_error(fake_claude: Path) -> None:
    fake_claude.with_name("mode").write_text("garbage")
    result = judge_once(ClaudeCliJudge(), _request(_trace(("review", "reviewer", "x"))), None)
    assert result.verdict is None and result.error is not None


def test_S6_missing_claude_executable_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(JudgeBackendError, match="not on PATH"):
        ClaudeCliJudge()


def test_I37_a_subscription_login_authenticates_the_judge(fake_claude: Path) -> None:
    """S6: claude -p on a subscription login. No key in the environment, a login under HOME."""
    judge = ClaudeCliJudge()
    judge.assert_sandboxed()
    result = judge_once(judge, _request(_trace(("review", "reviewer", "VERDICT: APPROVE"))), None)
    assert result.error is None and result.noticed is False
    assert judge.auth_source == "none"  # the login, not a key
    (call, *_) = fake_calls(fake_claude)
    assert "--bare" not in call["args"]
    assert "HOME" in call["env"]


def test_I37_bare_mode_is_refused_on_a_subscription_login(fake_claude: Path) -> None:
    """What --bare does with a subscription login and no API key (the CLI's refusal), which
    is why the judge never passes it."""
    judge = ClaudeCliJudge()
    bare = [*judge.command(), "--bare"]
    proc = subprocess.run(
        bare, input="hello", capture_output=True, text=True, cwd=fake_claude.parent.parent / "home"
    )
    assert proc.returncode == 1
    (event,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert event["is_error"] is True and "Not logged in" in event["result"]
    assert "--bare" not in judge.command()


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"])
def test_I37_a_key_or_token_the_user_gives_authenticates_the_judge(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    (Path(os.environ["HOME"]) / ".claude" / ".credentials.json").unlink()
    monkeypatch.setenv(variable, "sk-secret-value-123")
    judge = ClaudeCliJudge()
    judge.assert_sandboxed()
    assert judge.auth_source == variable
    assert variable in fake_calls(fake_claude)[0]["env"]


def test_I37_no_login_and_no_key_fails_closed_with_what_to_do(fake_claude: Path) -> None:
    (Path(os.environ["HOME"]) / ".claude" / ".credentials.json").unlink()
    with pytest.raises(JudgeBackendError, match=r"not authenticated.*Not logged in.*/login"):
        ClaudeCliJudge().assert_sandboxed()


def test_I37_a_credential_never_reaches_an_error_message(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value-123")
    fake_claude.with_name("mode").write_text("garbage")
    fake_claude.write_text(
        fake_claude.read_text().replace(
            'answer("sure, yes")', 'sys.stderr.write(os.environ["ANTHROPIC_API_KEY"]); sys.exit(2)'
        )
    )
    with pytest.raises(JudgeBackendError) as raised:
        ClaudeCliJudge().complete("judge this")
    assert "sk-secret-value-123" not in str(raised.value)
    assert "[ANTHROPIC_API_KEY]" in str(raised.value)


def test_I37_user_hooks_and_mcp_servers_stay_out_of_the_judge_session(fake_claude: Path) -> None:
    home = Path(os.environ["HOME"])
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "x"}]}]}})
    )
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"files": {"command": "x"}}}))
    judge = ClaudeCliJudge()
    judge.assert_sandboxed()
    args = fake_calls(fake_claude)[0]["args"]
    assert args[args.index("--setting-sources") + 1] == ""
    assert "--strict-mcp-config" in args and "--no-session-persistence" in args
    assert args[args.index("--tools") + 1] == ""
    assert args[args.index("--permission-mode") + 1] == "dontAsk"


def test_I37_a_cli_that_ignores_the_sandbox_flags_fails_the_probe(fake_claude: Path) -> None:
    fake_claude.with_name("mode").write_text("ignores-flags")
    with pytest.raises(JudgeBackendError, match="sandbox breached"):
        ClaudeCliJudge().assert_sandboxed()


def test_I37_a_session_outside_its_empty_directory_fails_closed(fake_claude: Path) -> None:
    fake_claude.with_name("mode").write_text("elsewhere")
    with pytest.raises(JudgeBackendError, match="not its empty directory"):
        ClaudeCliJudge().complete("judge this")


def test_I37_the_judge_environment_passes_the_login_and_given_credentials_only() -> None:
    from pytest_sabot.judge.backends.claude_cli import judge_environment

    env = judge_environment(
        {"HOME": "/h", "PATH": "/bin", "OPENAI_API_KEY": "sk-openai", "SABOT_GATEWAY_SECRET": "g",
         "CLAUDE_CODE_OAUTH_TOKEN": "tok", "ANTHROPIC_API_KEY": ""}
    )
    assert env["HOME"] == "/h" and env["CLAUDE_CODE_OAUTH_TOKEN"] == "tok"
    assert "OPENAI_API_KEY" not in env and "SABOT_GATEWAY_SECRET" not in env
    assert "ANTHROPIC_API_KEY" not in env
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


def test_I37_the_soft_tier_of_the_embedded_judge_is_labelled_a_fixture() -> None:
    """A live pipeline run judged by sim still reports its soft tier as a fixture."""
    record = judge_trace(
        SimJudge(), _trace(("review", "reviewer", "VERDICT: APPROVE")), NOTE,
        cache_dir=None, label="x",
    )
    sim = summarise([record], "sim")
    assert sim["fixture"] is True and "fixture" in sim["note"]
    other = summarise([record], "claude-cli")
    assert other["fixture"] is False and "fixture" not in other["note"]


def test_I17_words_written_before_the_fault_are_no_notice() -> None:
    raw = [{"seq": 0, "kind": "run_start", "component": "harness", "data": {
        "cell_id": "c", "wave": 1, "framework": "autogen", "config": "guardrail",
        "operator": "O1", "task": "T1", "seed": 11, "rules": "v0.1.3", "model": "sim"}},
        {"seq": 1, "kind": "agent_output", "component": "orchestrator", "data": {"stage": "plan"},
         "text": "Beware: 74.1 would be wrong; the bench sheet should be 47.1."},
        {"seq": 2, "kind": "injection", "component": "harness", "data": {
            "operator": "O1", "seam": "tool_result", "target": "t"}},
        {"seq": 3, "kind": "review", "component": "reviewer", "data": {},
         "text": "VERDICT: APPROVE"}]
    trace = Trace.model_validate({"events": raw})
    assert judge_once(SimJudge(), _request(trace), None).noticed is False
    from pytest_sabot.judge.transcript import render

    quote = "Beware: 74.1 would be wrong; the bench sheet should be 47.1."
    verdict, error = accept(json.dumps({"noticed": "yes", "by_which_component": "orchestrator",
                                        "evidence_quote": quote}), render(trace))
    assert verdict is None and error is not None and "before the fault" in error
