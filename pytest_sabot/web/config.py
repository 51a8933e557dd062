"""What ``sabot serve`` was started with: the output root it shows, the history it reads,
the access token, the address, and the opt-ins that widen what may be launched."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK = ("127.0.0.1", "localhost", "::1")
TOKEN_BYTES = 24


def new_token() -> str:
    """A fresh access token (printed once, in the URL, as Jupyter does)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


@dataclass(frozen=True)
class ServeConfig:
    """One server's settings. ``project`` is the directory launched runs start in (the
    one ``sabot serve`` was started from); ``standard`` holds cells/, tasks/, mappings/."""

    root: Path
    history: Path
    standard: Path
    project: Path
    token: str = field(default_factory=new_token, repr=False)
    host: str = "127.0.0.1"
    port: int = 8765
    read_only: bool = False
    allow_live: bool = False
    trust_local_agent: bool = False

    @property
    def csrf(self) -> str:
        """The CSRF token of every form: derived from the access token, never equal to it
        (a page may show it; the access token itself is only ever in the cookie)."""
        return hmac.new(self.token.encode(), b"sabot-serve-csrf", hashlib.sha256).hexdigest()

    def allowed_hosts(self) -> set[str]:
        """Host header values a request may carry: this server's own names and port, so a
        page of another site whose name resolves here (DNS rebinding) is refused."""
        names = {self.host, *LOOPBACK} if self.host in LOOPBACK else {self.host}
        hosts = set()
        for name in names:
            shown = f"[{name}]" if ":" in name else name
            hosts.add(f"{shown}:{self.port}")
        return hosts

    def allowed_origins(self) -> set[str]:
        return {f"http://{host}" for host in self.allowed_hosts()}

    def url(self, path: str = "/") -> str:
        """The URL ``sabot serve`` prints: the first visit carries the token."""
        name = "127.0.0.1" if self.host in ("localhost", "::1", "127.0.0.1") else self.host
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{self.port}{path}?token={self.token}"


def is_loopback(host: str) -> bool:
    return host in LOOPBACK
