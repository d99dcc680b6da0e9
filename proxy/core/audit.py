"""The audit log: one JSON line per refused call, argument values only when asked for."""

from __future__ import annotations

import datetime
import json
from typing import Any

from proxy.core.gate import Rejection

# Kinds whose messages never quote an argument value.
VALUE_FREE = frozenset({"unsupported_capability", "unknown_tool", "invalid_params", "changed_definition",
                        "denied_by_policy", "notification_request"})


class AuditLog:
    """One JSON line per rejection; argument values only when asked for."""

    def __init__(self, path: str, include_arguments: bool = False) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the proxy
        self._include_arguments = include_arguments

    def record(self, rejection: Rejection, request_id: Any) -> None:
        entry: dict[str, Any] = {
            "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
            "requestId": request_id,
            "tool": rejection.tool,
            "kind": rejection.kind,
        }
        if rejection.data is not None:
            entry.update(
                instancePath=rejection.data["instancePath"],
                schemaPath=rejection.data["schemaPath"],
                keyword=rejection.data["keyword"],
                source=rejection.data.get("source"),
            )
            if rejection.error is None:  # the lock's change class or the policy's rule that refused
                entry["rule"] = rejection.data["keyword"]
        # Validation messages quote the offending values, so they are argument
        # data too; without --audit-arguments only value-free messages are kept.
        if self._include_arguments or rejection.kind in VALUE_FREE:
            entry["message"] = rejection.message
        if self._include_arguments:
            entry["arguments"] = rejection.arguments
        self._file.write(json.dumps(entry, default=repr) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
