"""The inspector's Starlette application: the routes behind the guard, the opening page
built as the server starts, and the launched runs stopped when the server stops."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware

from pytest_sabot.web.config import ServeConfig
from pytest_sabot.web.launch import Launches
from pytest_sabot.web.pages import policy
from pytest_sabot.web.routes import ROUTES, State, warm
from pytest_sabot.web.security import Guard


def create_app(config: ServeConfig) -> Starlette:
    """The ASGI app of one ``sabot serve``: every request passes :class:`Guard` first."""
    launches = Launches(config)

    state = State(config=config, launches=launches)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # the page the printed URL opens on, built while the browser is being opened (a
        # daemon thread: stopping the server never waits for it)
        threading.Thread(target=warm, args=(state,), name="sabot-serve-warm",
                         daemon=True).start()
        try:
            yield
        finally:
            await launches.close()

    app = Starlette(
        routes=ROUTES,
        middleware=[Middleware(Guard, config=config, policy=policy())],
        lifespan=lifespan,
    )
    app.state.sabot = state
    return app
