"""An https upstream: verified against the CA bundle the environment names, through one shared TLS context.

The gate builds its TLS context once per process (proxy/upstream/http_client.py);
these check that it is still the context httpx2 would build, so that
`SSL_CERT_FILE` decides which upstream certificates are trusted, for both HTTP
upstream transports, and that an untrusted certificate is refused.
"""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
import trustme
from mcp.shared.exceptions import MCPError

from tests.proxy.conftest import calls
from tests.proxy_http.conftest import client_for, http_gate, http_upstream, upstream_url


@pytest.fixture
def tls(tmp_path: Path) -> dict[str, Path]:
    """A CA of the test's own, and a certificate it issued for 127.0.0.1."""
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1")
    paths = {"ca": tmp_path / "ca.pem", "cert": tmp_path / "server.pem", "key": tmp_path / "server.key"}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    server.private_key_pem.write_to_path(str(paths["key"]))
    server.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    return paths


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_an_https_upstream_is_reached_when_ssl_cert_file_names_its_ca(
        record: Path, tls: dict[str, Path], kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls["ca"]))  # the gate's environment (client_for copies ours)
    async with AsyncExitStack() as stack:
        base = await stack.enter_async_context(
            http_upstream(record, UPSTREAM_TLS_CERT=str(tls["cert"]), UPSTREAM_TLS_KEY=str(tls["key"])))
        assert base.startswith("https://")
        command = [sys.executable, "-m", "proxy", "--upstream", upstream_url(base, kind)]
        client = await stack.enter_async_context(client_for("stdio", command, record))
        result = await client.call_tool("echo", {"text": "over tls"})
        assert result.content[0].text == "over tls"
        refused = await client.call_tool("echo", {"text": 5})  # still gated
        assert refused.is_error
    assert [c["arguments"] for c in calls(record)] == [{"text": "over tls"}]


async def test_an_https_upstream_with_a_certificate_nobody_trusts_is_refused(
        record: Path, tls: dict[str, Path], tmp_path: Path) -> None:
    """Over Streamable HTTP listening: each session's own upstream client, all of them on the shared context."""
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))  # a CA that did not issue the upstream's certificate
    async with AsyncExitStack() as stack:
        base = await stack.enter_async_context(
            http_upstream(record, UPSTREAM_TLS_CERT=str(tls["cert"]), UPSTREAM_TLS_KEY=str(tls["key"])))
        url, _ = await stack.enter_async_context(
            http_gate(record, "http", f"{base}/mcp", SSL_CERT_FILE=str(other)))
        for _ in range(2):  # two sessions: the second uses the context the first built
            with pytest.raises(BaseException) as raised:
                async with client_for("http", url) as client:
                    await client.call_tool("echo", {"text": "never"})
            errors = leaves(raised.value)
            assert any(isinstance(e, MCPError) and "CERTIFICATE_VERIFY_FAILED" in str(e) for e in errors), errors
    assert calls(record) == []


def leaves(error: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups: the client's task group wraps what initialize raised."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]
