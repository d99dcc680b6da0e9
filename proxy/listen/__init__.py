"""Listening sides by kind, imported only when used (as uvicorn's HTTP_PROTOCOLS).

Each is `async serve(listen, spec, settings, stop) -> exit status`: it serves
clients until they leave or `stop` is set, handing each client session to
`proxy.session.run_session`.
"""

LISTENERS: dict[str, str] = {
    "stdio": "proxy.listen.stdio:serve_stdio",
    "sse": "proxy.listen.http:serve_http",
    "http": "proxy.listen.http:serve_http",
}
