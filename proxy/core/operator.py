"""Operator control on the catalog's path: a lock file (pinned definitions) and a policy file.

Each catalog revision passes through `OperatorControl.apply` before it is
swapped in. A tool the lock's refuse policy objects to (widened, added,
description or annotations changed) or the policy denies gets a `denial`:
every call to it is answered like a call to an unsupported tool, with its own
kind (`changed_definition`, `denied_by_policy`) and a message naming the
change or the rule. A tool with policy overlays keeps them on its entry, and
the gate checks every call against them after the server's schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from proxy.core.lock import CHANGED_DEFINITION, Change, RefusePolicy, classify, digest, refusal
from proxy.core.policy import DENIED_BY_POLICY, Policy

LOCK = "lock"
POLICY = "policy"
MAX_REMEMBERED = 4096  # classifications kept by (name, digest): a relisting re-compares only what changed


class OperatorControl:
    def __init__(self, lock: dict | None = None, refuse: RefusePolicy | None = None,
                 policy: Policy | None = None, dialect: str = "contract") -> None:
        self.lock = lock
        self.refuse = refuse or RefusePolicy()
        self.policy = policy
        self.dialect = dialect
        self._pinned = {tool["name"]: tool for tool in lock.get("tools", [])} if lock is not None else {}
        self._known: dict[tuple[str, str], Change] = {}
        self.changes: dict[str, Change] = {}  # the last classification of each tool seen, for the summary

    def hidden(self, name: str) -> bool:
        return self.policy is not None and self.policy.hidden(name)

    def apply(self, entries: Mapping[str, Any], tools: Iterable[Any]) -> dict[str, Any]:
        """The entries with the lock's and the policy's verdicts on them (ToolEntry is frozen: new ones)."""
        listed = {tool["name"]: tool for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)}
        out = {}
        for name, entry in entries.items():
            denial = None
            if self.lock is not None:
                denial = self._lock_denial(name, listed.get(name))
            overlay = None
            if self.policy is not None:
                decision = self.policy.decide(name)
                if denial is None and not decision.allowed:
                    denial = {"kind": DENIED_BY_POLICY, "instancePath": "", "schemaPath": "",
                              "keyword": decision.rule or "", "message": decision.message, "source": POLICY}
                overlay = self.policy.overlay(name)
            out[name] = replace(entry, denial=denial, overlay=overlay) if denial or overlay else entry
        return out

    def _lock_denial(self, name: str, tool: dict | None) -> dict[str, str] | None:
        if tool is None:
            return None
        try:
            key = (name, digest(tool))
        except ValueError:  # a definition that is not JSON: classify it afresh
            key = None
        change = self._known.get(key) if key is not None else None
        if change is None:
            pinned = self._pinned.get(name)
            lock = {"dialect": self.lock.get("dialect", self.dialect), "tools": [pinned] if pinned else []}
            change = classify(lock, [tool], self.dialect)[0]
            if key is not None and len(self._known) < MAX_REMEMBERED:
                self._known[key] = change
        self.changes[name] = change
        denial = refusal(change, self.refuse)
        return {**denial, "source": LOCK} if denial is not None else None

    def summary(self) -> list[str]:
        """One line per tool whose definition differs from its pin (startup summary and relistings)."""
        lines = []
        for name in sorted(self.changes):
            change = self.changes[name]
            if change.kind == "unchanged":
                continue
            verdict = "refused" if refusal(change, self.refuse) is not None else "allowed"
            where = f" at {change.pointer}" if change.pointer else ""
            lines.append(f"mcp-schema-gate:   {name}: {', '.join(sorted(change.classes))} ({verdict}: "
                         f"{change.kind}{where})")
        return lines


__all__ = ["CHANGED_DEFINITION", "DENIED_BY_POLICY", "LOCK", "POLICY", "OperatorControl"]
