"""The transport-free core: JSON-RPC framing, the relay, the MCP-aware hooks, the catalog and the gate.

Nothing under core/ imports a listening or an upstream transport; transports
hand the relay a pair of streams that satisfy `streams.ReadStream` and
`streams.WriteStream`.
"""
