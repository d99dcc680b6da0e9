"""The upstream side over the legacy HTTP+SSE transport: the SDK's `sse_client`, with the gate's `http_client`.

A relay needs nothing from that transport the SDK does not give: messages
arrive on one event stream and are sent by POST, with no per-request streams
to tag and no headers to stamp.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from mcp.client.sse import sse_client

from proxy.upstream.http_client import http_client

if TYPE_CHECKING:
    from proxy.core.catalog import Catalog
    from proxy.core.streams import StreamPair
    from proxy.session import UpstreamSpec


@asynccontextmanager
async def open_sse(spec: UpstreamSpec, catalog: Catalog) -> AsyncIterator[StreamPair]:
    assert spec.url is not None
    async with sse_client(spec.url, headers=spec.headers, httpx_client_factory=http_client) as streams:
        yield streams
