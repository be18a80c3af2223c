"""`agent-workspace-mcp console [DIR...] [--port N] [--no-open] [server options]`: the
operator console on 127.0.0.1, reading the workspaces' state from disk.

The roots are given as for the server (DIR, --root, --workspace), so the console sees
exactly what a server started with the same options serves; it needs no running server.
"""

from __future__ import annotations

import contextlib
import os
import sys
import webbrowser

from ..configuration import preflight, settings_from_sources
from ..core.errors import ConfigError
from ..core.operator import say
from ..transports.workers import listen, listen_error
from .app import Secrets, build_console
from .state import ConsoleState

HOST = "127.0.0.1"  # the console is for the person at this machine; HTTP serves /console


def _take(argv: list[str], flag: str) -> tuple[str | None, list[str]]:
    value, rest, i = None, [], 0
    while i < len(argv):
        if argv[i] == flag:
            if i + 1 >= len(argv):
                raise ConfigError(f"{flag} needs a value")
            value, i = argv[i + 1], i + 2
            continue
        if argv[i].startswith(flag + "="):
            value = argv[i].split("=", 1)[1]
        else:
            rest.append(argv[i])
        i += 1
    return value, rest


def main(argv: list[str]) -> int:
    try:
        port_text, argv = _take(argv, "--port")
        no_open = "--no-open" in argv
        argv = [a for a in argv if a != "--no-open"]
        port = int(port_text) if port_text is not None else 0
        if not 0 <= port <= 65535:
            raise ValueError
    except ValueError:
        say(f"error: --port takes a port number (0-65535), got {port_text!r}")
        return 2
    except ConfigError as exc:
        say(f"error: {exc}")
        return 2
    try:
        settings = settings_from_sources(argv)
        registry = preflight(settings.model_copy(update={"http": False}))
    except ConfigError as exc:
        say(f"error: {exc}")
        return 2
    try:
        sock = listen(HOST, port)
    except OSError as exc:
        say(listen_error(HOST, port, exc))
        return 2
    bound = sock.getsockname()[1]
    state = ConsoleState(
        registry,
        journal_max_bytes=settings.journal_max_bytes,
        checkpoint_max_bytes=settings.checkpoint_max_bytes,
        job_dir=settings.job_dir,
    )
    keys = Secrets()
    app = build_console(state, keys, allowed_hosts={f"{HOST}:{bound}", f"localhost:{bound}"})
    url = f"http://{HOST}:{bound}/login#token={keys.login}"
    names = ", ".join(f"{ws.name}={ws.root}" for ws in registry)
    say(f"console for {names}: {url}")
    say("the link signs in once; keep it private (it can undo the agents' work)")
    if not no_open and (os.environ.get("DISPLAY") or sys.platform == "darwin"):
        with contextlib.suppress(Exception):
            webbrowser.open(url)
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    say("console stopped")
    return 0
