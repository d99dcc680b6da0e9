"""`python -m proxy` is the same as `mcp-schema-gate`."""

from proxy.cli import main

raise SystemExit(main())
