"""The InputSchema subset: a pure, synchronous validator for MCP tool arguments."""
