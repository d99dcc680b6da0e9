"""The httpx2 client every HTTP upstream session uses: the SDK's, with one TLS context for the process.

`mcp.shared._httpx_utils.create_mcp_http_client` builds a fresh
`httpx2.AsyncClient`, and each new client builds a fresh default TLS
context, which reads the whole CA bundle from disk. The gate opens a client
per client session (and per shared sessionless upstream), so every session
paid for reading the CA bundle even in front of a plain http:// server
(where only a redirect to https could ever use it): most of the CPU of
opening a session. Here the context is built once, on first use, by
httpx2's own `create_ssl_context()` (so `SSL_CERT_FILE` and `SSL_CERT_DIR`
apply as they would, read at that first use), and handed to every client
as `verify=`. An `ssl.SSLContext` is made to be shared; httpcore2 sets its
ALPN list on each connection, the same list for every client here (HTTP/1.1
only, as the SDK's clients), so sharing changes nothing a connection sees.
"""

from __future__ import annotations

import functools
import ssl

import httpx2
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one default TLS context, as httpx2 builds it for a client created without `verify=`."""
    return httpx2.create_ssl_context()


def http_client(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
    """`create_mcp_http_client` (same signature, same timeouts), sharing `tls_context()`.

    An `McpHttpClientFactory`, so it also goes where the SDK takes one
    (`sse_client(httpx_client_factory=...)`).
    """
    if timeout is None:
        timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, verify=tls_context())
