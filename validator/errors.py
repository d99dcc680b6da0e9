"""Errors are values: a kind, two JSON Pointers, the keyword and an actionable message."""

from __future__ import annotations

from typing import Any, Iterable

UNSUPPORTED = "unsupported_capability"
VALIDATION = "validation"
EXECUTION_FAILURE = "execution_failure"

KINDS = (UNSUPPORTED, VALIDATION, EXECUTION_FAILURE)


def escape_token(token: str | int) -> str:
    """One RFC 6901 reference token: '~' becomes '~0' and '/' becomes '~1' (in that order)."""
    if type(token) is not str:
        return str(token)
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def pointer(tokens: Iterable[str | int]) -> str:
    """An RFC 6901 JSON Pointer from tokens, root first ("" is the whole document)."""
    parts = [escape_token(t) for t in tokens]
    return "/" + "/".join(parts) if parts else ""


class InputSchemaError(Exception):
    """Why a schema or an argument value was refused.

    ``kind`` says whose problem it is: ``unsupported_capability`` (the schema
    uses something outside the subset), ``validation`` (a malformed schema, or
    arguments that break a supported constraint) or ``execution_failure`` (the
    validator could not finish, e.g. a pattern exhausted its work limit).
    """

    __slots__ = ("kind", "instance_path", "schema_path", "keyword", "message")

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        instance_path: str = "",
        schema_path: str = "",
        keyword: str = "",
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown InputSchemaError kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.instance_path = instance_path
        self.schema_path = schema_path
        self.keyword = keyword
        self.message = message

    def to_dict(self) -> dict[str, str]:
        """The machine-readable form (MCP-style camelCase keys)."""
        return {
            "kind": self.kind,
            "instancePath": self.instance_path,
            "schemaPath": self.schema_path,
            "keyword": self.keyword,
            "message": self.message,
        }

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return (
            f"InputSchemaError(kind={self.kind!r}, instance_path={self.instance_path!r}, "
            f"schema_path={self.schema_path!r}, keyword={self.keyword!r}, message={self.message!r})"
        )

    def __reduce__(self) -> Any:
        return (_rebuild, (self.kind, self.message, self.instance_path, self.schema_path, self.keyword))


def _rebuild(kind: str, message: str, instance_path: str, schema_path: str, keyword: str) -> InputSchemaError:
    return InputSchemaError(
        kind, message, instance_path=instance_path, schema_path=schema_path, keyword=keyword
    )


# The validator's own way to make a refusal (failures.Failure.to_error): every
# refused call builds one, so it skips ``__init__``'s keyword arguments and kind
# check; the attributes are set by the caller.
new_exception = BaseException.__new__
