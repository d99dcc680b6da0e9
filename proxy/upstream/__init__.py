"""Upstream sides (a stdio child, HTTP+SSE, Streamable HTTP); `proxy.session.UPSTREAMS` picks one per session."""
