"""``python -m pytest_sabot.gateway [--port N] ...``: a standalone gateway, a shim over
:mod:`pytest_sabot.commands.gateway`."""

from pytest_sabot.commands.gateway import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
