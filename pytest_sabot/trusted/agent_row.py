"""What a trusted local agent's row declares of itself (``--sabot-agent-row``,
``--sabot-agent-mapping``, ``--sabot-agent-env``): its name, the mapping that reads its
own checks, the environment variables its child is given. Each one is checked before
anything runs; the messages name the option and what was expected (SPEC I155-I157)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.loading import read_yaml_mapping
from pytest_sabot.core.models.trace import FRAMEWORK_NAME

ROW_OPTION = "--sabot-agent-row"
MAPPING_OPTION = "--sabot-agent-mapping"
ENV_OPTION = "--sabot-agent-env"
RESERVED_ROWS = ("mcp_client",)
"""Names a trusted agent's row never takes: the MCP client's row (``sabot mcp``)."""
HARNESS_ENV = ("OPENAI_API_KEY",)
"""Variables a trusted agent's child is never given: the provider key stays in the
harness (the child talks to the model through its scoped endpoints)."""
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NOT_NAME = re.compile(r"[^a-z0-9]+")


def default_row(target: str) -> str:
    """The row's name when ``--sabot-agent-row`` is not given (SPEC I155): the callable's
    dotted path, module and callable alike, lower-cased, every run of characters other
    than letters and digits one underscore (``mypkg.agent:run`` -> ``mypkg_agent_run``,
    ``My.Pipeline:Team.go`` -> ``my_pipeline_team_go``); ``agent_`` leads a name that
    would start with a digit or an underscore."""
    name = _NOT_NAME.sub("_", target.lower()).strip("_")
    return name if re.match(r"^[a-z]", name) else f"agent_{name}"


def row_refusal(row: str, registered: Iterable[str]) -> str | None:
    """Why ``row`` cannot name the trusted agent's row (None when it can): the shape of a
    framework's name, and no name of a registered framework or of the MCP client's row."""
    if not re.match(FRAMEWORK_NAME, row):
        return (f"{ROW_OPTION}={row}: expected a row name of lower-case letters, digits "
                "and underscores, starting with a letter (e.g. my_pipeline)")
    taken = [*registered, *RESERVED_ROWS]
    if row in taken:
        whose = "sabot mcp's clients" if row in RESERVED_ROWS else "a registered framework"
        return (f"{ROW_OPTION}={row}: expected a name of your own for the agent's row; "
                f"{row!r} is the row of {whose} (taken: {', '.join(sorted(set(taken)))})")
    return None


def env_refusal(names: Iterable[str], environ: Mapping[str, str]) -> str | None:
    """Why the variables named by ``--sabot-agent-env`` cannot be passed (None when they
    can): each one a variable's name, set here, and never the provider key."""
    for name in names:
        flag = f"{ENV_OPTION}={name}"
        if not _ENV_NAME.match(name):
            return (f"{flag}: expected the name of an environment variable (letters, "
                    "digits and underscores)")
        if name in HARNESS_ENV:
            return (f"{flag}: the provider key stays in the harness; the agent's child "
                    "calls the model through the endpoints its context gives it")
        if name not in environ:
            return (f"{flag}: the environment variable {name} is not set here, so there is "
                    "nothing to pass to the agent (set it, or drop the option)")
    return None


def mapping_refusal(path: Path, row: str) -> str | None:
    """Why the file given to ``--sabot-agent-mapping`` cannot score the row (None when its
    top level can): a readable YAML mapping whose ``framework`` is the row's name. The
    rest of it is validated like every shipped mapping when the wave is loaded."""
    flag = f"{MAPPING_OPTION}={path}"
    if not path.is_file():
        return f"{flag}: expected a mapping file (YAML), and there is no file there"
    try:
        raw = read_yaml_mapping(path)
    except SabotDataError as exc:
        return f"{flag}: {exc}"
    if raw.get("framework") != row:
        return (f"{flag}: " + str(SabotDataError(
            path, "framework", f"{row!r}, the name of the row it scores ({ROW_OPTION}, by "
            "default built from the callable's path)", raw.get("framework"))))
    return None


def render_shipped(shipped: Path, row: str, folder: Path) -> Path:
    """The shipped mapping of a trusted agent's row, written under ``row``'s name into
    ``folder`` (SPEC I156): the same revisions and act rows, its ``framework`` line the
    row's name."""
    text = shipped.read_text(encoding="utf-8")
    line = re.compile(r"^framework: *\S+ *$", re.MULTILINE)
    if len(line.findall(text)) != 1:
        raise SabotDataError(shipped, "framework", "one top-level 'framework:' line")
    path = folder / f"{row}.yaml"
    path.write_text(line.sub(f"framework: {row}", text), encoding="utf-8")
    return path
