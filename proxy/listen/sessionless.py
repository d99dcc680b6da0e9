"""The sessionless 2026-07-28 path of the Streamable HTTP listener: every POST answered on its own.

At 2026-07-28 a request is a self-contained POST (its `_meta` envelope, the
`MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers), with no
handshake and no `Mcp-Session-Id`; the answer is one JSON body, or an SSE
stream scoped to that request (proxy/listen/answer.py decides per call;
with --json-response always a JSON body; a `subscriptions/listen` answer is
always a stream); a client cancels by closing it. Nothing ties one request
to the next, so any replica of the gate can answer any request
(docs/deploy.md).

Requests are gated exactly as in a session: each goes through a shared
`Relay` with its `GuardHooks` and `Catalog` (proxy/session.py:run_session
assembles it, as for every session), whose one client is a `Multiplexer`
(proxy/core/multiplex.py) that renames ids so that clients never meet. A
shared relay is kept per upstream and per value of what is forwarded to it
(`--upstream-header`, `--forward-header`): a server whose tool list depends
on the caller's credentials gets one catalog per credential, keyed by a
hash, never by the value, and never logged. `--upstream-pool N` runs N
shared relays (N stdio children) per key, each request to the least busy.

An upstream that does not speak 2026-07-28 answers `server/discover` with an
error; the client is then told -32022 with the handshake-era versions, so it
falls back to a session, as it does in front of any older server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.responses import Response

from proxy.core.catalog import ToolEntry
from proxy.core.gate import ListenerCheck, Rejection
from proxy.core.jsonrpc import Envelope, dump, envelope_of, frame_of
from proxy.core.multiplex import EventSink, Multiplexer, Reply, Withdrawal, Withdrawn
from proxy.core.relay import Relay
from proxy.listen.answer import Answer
from proxy.session import GateSettings, UpstreamSpec, run_session

logger = logging.getLogger("mcp-schema-gate")

_JSON = "application/json"


@dataclass
class SharedUpstream:
    """One upstream (a stdio child, or an HTTP client) and the relay every sessionless request shares."""

    key: str
    mux: Multiplexer = field(default_factory=Multiplexer)
    relay: Relay | None = None
    legacy: bool = False  # the upstream does not speak 2026-07-28: decline, clients fall back to sessions
    ended: bool = False
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    last_used: float = 0.0

    def bind(self, relay: Relay) -> None:
        self.relay = relay
        relay.answer_cancelled = True  # a withdrawn request's late answer is dropped, never sent on

    @property
    def opened(self) -> bool:
        return self.relay is not None


class Sessionless:
    """The shared upstreams by key, and the handling of one sessionless POST."""

    def __init__(self, spec: UpstreamSpec, settings: GateSettings, task_group: anyio.abc.TaskGroup,
                 stop: anyio.Event, *, pool: int = 1, forward_headers: tuple[str, ...] = (),
                 idle_timeout: float | None = None, max_upstreams: int = 100, json_response: bool = False) -> None:
        self.spec = spec
        self._json_response = json_response
        self.settings = settings
        self._tg = task_group
        self._stop = stop
        self._pool = max(1, pool if spec.kind == "stdio" else 1)
        self._forward = tuple(name.lower() for name in forward_headers)
        self._idle_timeout = idle_timeout
        self._max_upstreams = max_upstreams
        self.upstreams: dict[str, list[SharedUpstream]] = {}
        # Without --forward-header every request has the same key (a hash of JSON): computed once.
        # With it, per request, so that no credential outlives the upstream it opened.
        self._fixed_key: tuple[str, UpstreamSpec] | None = None if self._forward else forwarded_spec(spec, (), {})
        self._opening = anyio.Lock()

    # ---- the shared upstreams ---------------------------------------------------------

    def _key_and_spec(self, headers: Mapping[str, str]) -> tuple[str, UpstreamSpec]:
        if self._fixed_key is not None:
            return self._fixed_key
        return forwarded_spec(self.spec, self._forward, headers)

    async def _shared(self, headers: Mapping[str, str]) -> SharedUpstream:
        key, spec = self._key_and_spec(headers)
        members = self.upstreams.get(key)
        # Only opening an upstream takes the lock: the usual case decides without it, and
        # nothing awaits between this look and the choice below.
        if members is None or len(members) < self._pool or any(m.ended for m in members):
            async with self._opening:
                members = [member for member in self.upstreams.get(key, []) if not member.ended]
                if len(members) < self._pool:
                    if len(self.upstreams) >= self._max_upstreams and key not in self.upstreams:
                        self._evict_idlest()
                    member = SharedUpstream(key)
                    members.append(member)
                    await self._tg.start(self._run, member, spec)
                self.upstreams[key] = members
        member = min(members, key=lambda m: m.mux.open_exchanges)
        member.last_used = anyio.current_time()
        return member

    async def _run(self, member: SharedUpstream, spec: UpstreamSpec, *,
                   task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            with member.scope:
                async with anyio.create_task_group() as tg:
                    if self._idle_timeout is not None:
                        tg.start_soon(self._expire_when_idle, member)
                    end = await run_session(member.mux.streams, spec, self.settings, stop=self._stop,
                                            bind=member.bind, shared=True)
                    if end.reason and end.reason != "stopped":
                        logger.warning("mcp-schema-gate: the shared upstream %s ended: %s", spec.describe(),
                                       end.reason)
                    tg.cancel_scope.cancel()
        except Exception:
            logger.exception("mcp-schema-gate: a shared upstream failed; the next request opens a new one")
        finally:
            member.ended = True
            members = self.upstreams.get(member.key)
            if members is not None and member in members:
                members.remove(member)
                if not members:
                    del self.upstreams[member.key]

    async def _expire_when_idle(self, member: SharedUpstream) -> None:
        assert self._idle_timeout is not None
        while True:
            await anyio.sleep(self._idle_timeout / 4)
            idle = anyio.current_time() - member.last_used
            if member.mux.open_exchanges == 0 and idle >= self._idle_timeout:
                logger.info("mcp-schema-gate: closing a shared upstream idle for %.0f s", idle)
                member.ended = True
                await member.mux.close()
                return

    def _evict_idlest(self) -> None:
        candidates = [m for members in self.upstreams.values() for m in members if m.mux.open_exchanges == 0]
        if candidates:
            victim = min(candidates, key=lambda m: m.last_used)
            victim.ended = True
            victim.scope.cancel()

    def _retire(self, member: SharedUpstream) -> None:
        """An upstream that could not be opened: the next request tries a new one (the server may be back)."""
        member.ended = True
        member.scope.cancel()

    # ---- one POST ---------------------------------------------------------------------

    async def handle(self, scope: dict, receive: Any, send: Any, decoded: Any) -> None:
        """Answer one sessionless request: `decoded` is its body as the wire rule parsed it (`receive` replays it)."""
        if scope["method"] != "POST":
            # No standing streams at 2026-07-28: server events come on subscriptions/listen.
            return await Response(status_code=405, headers={"Allow": "POST"})(scope, receive, send)
        await receive()  # the body, already parsed: what comes after it is the disconnect watched below
        raw_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        headers = {name.lower(): value for name, value in raw_headers}
        accept = headers.get("accept", "")
        if isinstance(decoded, dict) and "method" in decoded and "id" not in decoded:
            # The core protocol has no client notifications on this wire (a client
            # cancels by closing its POST); acknowledged and dropped, as the SDK does.
            return await Response(status_code=202)(scope, receive, send)
        request: Envelope | types.JSONRPCRequest | None = frame_of(decoded)  # the usual shapes, no SDK model
        try:
            if request is None or request.kind != "request":
                request = types.JSONRPCRequest.model_validate(decoded)
        except ValidationError:
            return await _reply(scope, receive, send, _error(
                decoded.get("id") if isinstance(decoded, dict) else None, types.INVALID_REQUEST,
                "Invalid request: a sessionless POST carries one JSON-RPC request (a client never sends "
                "responses at 2026-07-28)"))
        duplicated = find_duplicated_routing_header(raw_headers)
        verdict = (InboundLadderRejection(types.HEADER_MISMATCH, f"{duplicated} header appears more than once")
                   if duplicated is not None else classify_inbound_request(decoded, headers=headers))
        if isinstance(verdict, InboundLadderRejection):
            return await _reply(scope, receive, send, _error(request.id, verdict.code, verdict.message, verdict.data))
        if request.method == "initialize":
            # No handshake at 2026-07-28 (the SDK's server answers the same); and a
            # handshake on the shared relay would switch its own listing off the
            # envelope for every other client.
            return await _reply(scope, receive, send, _error(
                request.id, types.METHOD_NOT_FOUND, "Method not found: initialize is not part of the 2026-07-28 "
                "protocol; send requests with their _meta envelope, or open a session without the "
                "2026-07-28 MCP-Protocol-Version header"))
        if request.method == "subscriptions/listen" and "text/event-stream" not in accept:
            return await _reply(scope, receive, send, _error(
                request.id, types.INVALID_REQUEST, "subscriptions/listen is answered with an event stream: "
                "send 'Accept: application/json, text/event-stream'"), status=406)

        member = await self._shared(headers)
        if member.legacy:
            return await _reply(scope, receive, send, _declined(request.id, verdict.protocol_version))
        # --json-response: one JSON body, as the SDK's server answers in that mode. What belongs to
        # the request before its reply (progress, a log message) is then dropped: at 2026-07-28 there
        # is no GET stream to move it to. A subscriptions/listen answer is a stream whatever the mode.
        answer = None if self._json_response and request.method != "subscriptions/listen" else Answer(send, None)
        on_event = None if answer is None else _events_to(answer)

        withdrawal = Withdrawal()

        async def watch_disconnect() -> None:
            # After the answer is complete the server reports a disconnect too (ASGI); only one
            # before the reply is the client closing its POST, which withdraws the request
            # upstream (Multiplexer.exchange raises Withdrawn then, and there is no one to answer).
            try:
                while (await receive())["type"] != "http.disconnect":
                    pass
            except Exception:  # noqa: BLE001 - the server failed to say; the answer's send will find out
                return
            withdrawal.withdraw()

        # A plain asyncio task rather than an anyio one: spawning into an anyio
        # group (a task-info record, a cancel scope, a name) costs more than the rest of
        # the watch. It is cancelled below whatever happens, so it never outlives the POST.
        watcher = asyncio.get_running_loop().create_task(watch_disconnect())
        try:
            if answer is not None:
                if request.method == "subscriptions/listen":
                    await answer.start_stream()
                answer.watch()
            reply = await member.mux.exchange(
                request, on_event, _param_header_check(headers) if request.method == "tools/call" else None,
                withdrawal)
            if not member.opened:
                self._retire(member)
            error = envelope_of(reply).error
            if request.method == "server/discover" and error is not None and (
                    _field(error, "code") != types.UNSUPPORTED_PROTOCOL_VERSION):
                member.legacy = True
                logger.info("mcp-schema-gate: the upstream answered server/discover with an error (%s); "
                            "sessionless requests are declined so that clients fall back to sessions",
                            _field(error, "message"))
                reply = SessionMessage(_declined(request.id, verdict.protocol_version))
            await _answer(send if answer is None else answer.send, reply)
        except BaseException as exc:
            watcher.cancel()
            if answer is not None:
                await answer.close(abandoned=True)
            if isinstance(exc, Withdrawn):
                return  # the client closed its POST: no one to answer
            raise
        watcher.cancel()
        if answer is not None:
            await answer.close()


def _param_header_check(headers: Mapping[str, str]) -> ListenerCheck:
    """A tools/call whose `Mcp-Param-*` headers disagree with its arguments is refused, as the SDK's server does.

    Headers that a load balancer in front of the gate may route on must say
    what the body says; the upstream gets headers the gate stamps afresh
    from the body (proxy/upstream/streamable_http.py), never the client's.
    The comparison needs the tool's schema, so the hooks run it where the gate
    decides the call, against the same catalog revision: a call that arrives
    before the upstream has listed its tools waits for the listing like any
    other, and is compared then.
    """
    def check(entry: ToolEntry, arguments: dict[str, Any]) -> Rejection | None:
        if not isinstance(entry.input_schema, dict) or not entry.declares_param_headers:
            return None
        problem = validate_mcp_param_headers(entry.input_schema, arguments, headers)
        if problem is None:
            return None
        return Rejection(entry.name, "header_mismatch", problem.message, code=problem.code)

    return ListenerCheck(check)


def forwarded_spec(spec: UpstreamSpec, names: tuple[str, ...], headers: Mapping[str, str]) -> tuple[str, UpstreamSpec]:
    """(key, spec): the upstream with the client's `--forward-header` values added, and a hash naming them.

    `headers` keyed by lower-case name. The key stands for everything sent to
    the upstream that can change what it lists; it is safe to log, the values are not.
    """
    forwarded = {name: headers[name] for name in names if name in headers}
    digest = hashlib.sha256(json.dumps([spec.describe(), spec.headers or {}, forwarded],
                                       sort_keys=True).encode()).hexdigest()[:16]
    if not forwarded:
        return digest, spec
    return digest, replace(spec, headers={**(spec.headers or {}), **forwarded})


def _error(request_id: Any, code: int, message: str, data: Any = None) -> types.JSONRPCError:
    error = types.ErrorData(code=code, message=message) if data is None else types.ErrorData(
        code=code, message=message, data=data)
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def _declined(request_id: Any, requested: str) -> types.JSONRPCError:
    supported = list(HANDSHAKE_PROTOCOL_VERSIONS)
    return _error(request_id, types.UNSUPPORTED_PROTOCOL_VERSION,
                  f"Unsupported protocol version {requested!r}: the upstream server behind this gate speaks the "
                  f"initialize handshake ({', '.join(supported)}); connect with a session",
                  {"supported": supported, "requested": requested})


def _field(error: Any, name: str) -> Any:
    """A member of a reply's error: a dict in a Frame, ErrorData in an SDK model."""
    return error.get(name) if isinstance(error, dict) else getattr(error, name, None)


def _status(error: Any) -> int:
    """The HTTP status of a reply with this error (None: a result), as the SDK's server maps it."""
    code = _field(error, "code") if error is not None else None
    return ERROR_CODE_HTTP_STATUS.get(code, 200) if isinstance(code, int) else 200


async def _reply(scope: dict, receive: Any, send: Any, reply: types.JSONRPCError, status: int | None = None) -> None:
    body = reply.model_dump_json(by_alias=True, exclude_unset=True)
    await Response(body, status_code=status or _status(reply.error), media_type=_JSON)(scope, receive, send)


def _events_to(answer: Answer) -> EventSink:
    """What belongs to the request before its reply, as events of the POST's `Answer` (which then streams)."""
    async def on_event(message: SessionMessage) -> None:
        data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        try:
            await answer.event(data)
        except OSError:
            pass  # the client is gone; the disconnect watcher withdraws the request

    return on_event


async def _answer(send: Any, reply: Reply) -> None:
    """The reply as a JSON body: straight to the client, or through the POST's `Answer` (the last event of its
    stream, if it became one)."""
    body = dump(reply).rstrip(b"\n")
    await send({"type": "http.response.start", "status": _status(envelope_of(reply).error),
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})
