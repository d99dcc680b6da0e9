"""GET /healthz on the HTTP listeners: is this replica able to reach its upstream?

    200 {"status": "ok", "upstream": "reachable"}
    503 {"status": "unavailable", "upstream": "<reason>"}

For a load balancer's health check (HAProxy's `option httpchk GET /healthz`,
a Kubernetes readiness probe; docs/deploy.md). It must stay cheap, since
probes come every few seconds from every balancer:

- a URL upstream: one TCP connect to its host and port (the same check a
  session makes before its first request, streamable_http.reachable, which
  does not try when the environment routes the URL through a proxy), no HTTP
  request and no MCP session;
- a stdio upstream: the command resolves (on PATH, or an executable file
  relative to --cwd); no child is started.

An answer is reused for CACHE_SECONDS, so a burst of probes costs one
connect. The route sits after the Host/Origin check and before the bearer
token (balancers probe without credentials), so the body says nothing an
anonymous caller should not learn: no URL, host, port, command or error
text, only a fixed reason. The details go to the gate's log, once per change
of state.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import socket
import time
from typing import Any

import anyio
from starlette.responses import Response

from proxy.session import UpstreamSpec
from proxy.upstream.streamable_http import reachable

logger = logging.getLogger("mcp-schema-gate")

CACHE_SECONDS = 1.0
CONNECT_TIMEOUT = 2.0  # below HAProxy's default check timeout, so a hung connect reads as down, not as a timeout


def _connect_reason(exc: BaseException) -> str:
    """A fixed phrase for a failed connect (the exception's text names the host and port)."""
    if isinstance(exc, TimeoutError):
        return "connect timed out"
    if isinstance(exc, socket.gaierror):
        return "host name not resolved"
    # anyio.connect_tcp raises one OSError for all its attempts, the attempts' errors grouped in its cause.
    found = [exc, *getattr(exc, "exceptions", ())]
    if exc.__cause__ is not None:
        found += [exc.__cause__, *getattr(exc.__cause__, "exceptions", ())]
    codes = {getattr(one, "errno", None) for one in found}
    if errno.ECONNREFUSED in codes:
        return "connection refused"
    return "connect failed"


def command_reason(spec: UpstreamSpec) -> str | None:
    """None when the stdio command would start (as far as a look at the file system tells), else why not."""
    assert spec.command
    program = spec.command[0]
    if os.sep in program:
        path = program if os.path.isabs(program) or spec.cwd is None else os.path.join(spec.cwd, program)
        return None if os.path.isfile(path) and os.access(path, os.X_OK) else "command not found"
    return None if shutil.which(program) is not None else "command not found on PATH"


async def upstream_reason(spec: UpstreamSpec) -> str | None:
    """None when the upstream is reachable, else a fixed reason safe to show anyone."""
    if spec.command:
        return command_reason(spec)
    assert spec.url is not None
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            await reachable(spec.url)
    except (OSError, TimeoutError) as exc:
        logger.debug("mcp-schema-gate: health check: %s", exc)
        return _connect_reason(exc)
    return None


class Health:
    """The /healthz endpoint of one listener, with its short cache and its state-change log."""

    def __init__(self, spec: UpstreamSpec) -> None:
        self.spec = spec
        self._checked_at = float("-inf")
        self._reason: str | None = None
        self._logged: str | None = None
        self._lock = anyio.Lock()

    async def reason(self) -> str | None:
        async with self._lock:  # concurrent probes wait for the one check in flight
            if time.monotonic() - self._checked_at >= CACHE_SECONDS:
                self._reason = await upstream_reason(self.spec)
                self._checked_at = time.monotonic()
                if self._reason != self._logged:
                    if self._reason is None:
                        logger.warning("mcp-schema-gate: health: upstream reachable again")
                    else:
                        logger.warning("mcp-schema-gate: health: upstream %s: %s", self.spec.describe(), self._reason)
                    self._logged = self._reason
            return self._reason

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            body = json.dumps({"status": "error", "upstream": "use GET /healthz"})
            response = Response(body, status_code=405, media_type="application/json", headers={"Allow": "GET, HEAD"})
            return await response(scope, receive, send)
        reason = await self.reason()
        if reason is None:
            status, body = 200, {"status": "ok", "upstream": "reachable"}
        else:
            status, body = 503, {"status": "unavailable", "upstream": reason}
        # Never cached by anything between the balancer and the gate.
        response = Response(json.dumps(body), status_code=status, media_type="application/json",
                            headers={"Cache-Control": "no-store"})
        await response(scope, receive, send)
