"""``module:callable`` targets: checked by the parent, imported only by the child."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

_NAME = r"[A-Za-z_]\w*"
TARGET_PATTERN = re.compile(rf"^{_NAME}(?:\.{_NAME})*:{_NAME}(?:\.{_NAME})*$")


def is_target(spec: str) -> bool:
    """Whether ``spec`` is spelled 'package.module:callable' (it is not imported here)."""
    return TARGET_PATTERN.fullmatch(spec) is not None


def load_target(spec: str) -> Callable[..., Any]:
    """Import ``module`` and return ``callable`` (a dotted attribute path is allowed)."""
    if not is_target(spec):
        raise ValueError(f"expected 'package.module:callable', got {spec!r}")
    module_name, _, attr_path = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(f"module {module_name!r} has no attribute {attr_path!r}") \
                from None
    if not callable(obj):
        raise TypeError(f"{spec} is a {type(obj).__name__}, not a callable")
    return obj  # type: ignore[no-any-return]
