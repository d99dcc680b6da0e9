"""mcp-schema-gate: an MCP proxy that gates tools/call on each tool's inputSchema."""
