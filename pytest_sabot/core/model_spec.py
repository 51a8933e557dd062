"""A model spec, parsed once into a typed value.

A pipeline model is ``sim`` or ``sim:<persona>`` (the embedded model, keyless),
``openai:<model>`` (a live OpenAI-compatible upstream, opt-in), ``local:<model>@<url>``
(a local OpenAI-compatible server such as Ollama, llama.cpp's server or vLLM: no key, no
spend) or ``replay:<dir>`` (recorded exchanges). A judge is named the same way (``sim``,
``claude-cli[:<model>]``, ``openai:<model>``). The option, the session, the harness, the
gateway, the results and the plan all hold the :class:`ModelSpec` parsed here, never the
text: the text as given (``spec.given``) is what records carry, so a record made with
``sim`` still says ``sim``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_PERSONA",
    "PIPELINE_SCHEMES",
    "ModelSpec",
    "downgrade_target",
    "parse_judge",
    "parse_model",
]

DEFAULT_PERSONA = "realistic"
"""The embedded model's persona when none is named (``sim`` alone)."""
PIPELINE_SCHEMES = ("sim", "openai", "local", "replay")


@dataclass(frozen=True)
class ModelSpec:
    """``scheme:name``, e.g. sim:realistic, openai:gpt-5.6-terra, replay:/path."""

    scheme: str
    name: str
    given: str = field(default="", compare=False)
    """The text as given (what records and results carry); ``text`` when built directly."""

    def __post_init__(self) -> None:
        if not self.given:
            object.__setattr__(self, "given", self.text)

    @property
    def text(self) -> str:
        """The spec spelled out in full, e.g. 'sim:realistic' for 'sim'."""
        return f"{self.scheme}:{self.name}" if self.name else self.scheme

    @property
    def is_sim(self) -> bool:
        """The embedded model: keyless, its numbers are fixtures."""
        return self.scheme == "sim"

    @property
    def is_live(self) -> bool:
        """A live upstream: opt-in, budget-capped, recorded."""
        return self.scheme == "openai"

    @property
    def is_local(self) -> bool:
        """A local OpenAI-compatible server (``local:<model>@<url>``): no key, no spend,
        recorded as a live model is."""
        return self.scheme == "local"

    @property
    def local_model(self) -> str:
        """The model name a local server is asked for (the part before the last '@')."""
        return self.name.rpartition("@")[0] if "@" in self.name else self.name

    @property
    def local_url(self) -> str:
        """The local server's base URL (the part after the last '@')."""
        return self.name.rpartition("@")[2] if "@" in self.name else ""

    @property
    def is_replay(self) -> bool:
        """Recorded exchanges served again: no model is called."""
        return self.scheme == "replay"

    @property
    def costs_nothing(self) -> bool:
        """Nothing is paid for: the embedded model, a local server or a replay."""
        return self.is_sim or self.is_local or self.is_replay

    @property
    def replay_dir(self) -> Path:
        """The recordings directory of a replay."""
        return Path(self.name)

    def __str__(self) -> str:
        return self.given


def parse_model(text: str | ModelSpec) -> ModelSpec:
    """A pipeline model spec; 'sim' alone is the realistic persona. ValueError when the
    text is not 'scheme:name' (the scheme is checked against the registered backends
    where the model is served)."""
    if isinstance(text, ModelSpec):
        return text
    given = text.strip()
    if given == "sim":
        return ModelSpec("sim", DEFAULT_PERSONA, text)
    scheme, sep, name = given.partition(":")
    if not sep or not scheme or not name:
        raise ValueError(
            f"model {given!r} is not 'sim', 'sim:<persona>', 'openai:<model>', "
            "'local:<model>@<url>' or 'replay:<dir>'"
        )
    spec = ModelSpec(scheme, name, text)
    if spec.is_local:
        check_local(spec)
    return spec


def check_local(spec: ModelSpec) -> None:
    """ValueError unless a local spec names a model and an http(s) base URL."""
    parts = urlsplit(spec.local_url)
    if not spec.local_model or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"model {spec.given!r}: expected 'local:<model>@<base url>', such as "
            "'local:qwen2.5:7b@http://127.0.0.1:11434/v1' (Ollama)"
        )


def parse_judge(text: str | ModelSpec) -> ModelSpec:
    """A judge spec: 'scheme' alone (e.g. 'sim', 'claude-cli') or 'scheme:name'."""
    if isinstance(text, ModelSpec):
        return text
    scheme, _, name = text.strip().partition(":")
    return ModelSpec(scheme, name, text)


def downgrade_target(text: str, run: ModelSpec) -> ModelSpec:
    """The O4 downgrade model as named (the wave's bare 'gpt-5.6-luna' or a whole spec such
    as 'openai:gpt-5.5-mini'): a bare name is a model of the run's own backend."""
    if ":" in text and not run.is_local:
        return parse_model(text)
    if run.is_local:  # a model of the same local server, unless a whole spec is named
        if text.strip().startswith(("local:", "sim:", "openai:", "replay:")):
            return parse_model(text)
        return ModelSpec("local", f"{text.strip()}@{run.local_url}", text)
    return ModelSpec(run.scheme, text.strip(), text)
