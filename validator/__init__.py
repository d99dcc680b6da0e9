"""The InputSchema subset: a pure, synchronous validator for MCP tool arguments.

    import validator
    validator.validate_schema(schema)          # preflight; raises InputSchemaError
    compiled = validator.compile(schema)       # preflight once ...
    compiled.validate(arguments)               # ... validate many; raises InputSchemaError
    validator.validate(schema, arguments)      # both at once

The subset is specified by the input-schema contract; see README.md.
"""

from __future__ import annotations

from typing import Any

from .compiler import DIALECTS, CompiledSchema
from .compiler import compile as _compile
from .errors import EXECUTION_FAILURE, UNSUPPORTED, VALIDATION, InputSchemaError
from .keywords import CONTRACT, EXTENDED
from .table import KEYWORDS

__all__ = [
    "CONTRACT",
    "DIALECTS",
    "EXECUTION_FAILURE",
    "EXTENDED",
    "KEYWORDS",
    "UNSUPPORTED",
    "VALIDATION",
    "CompiledSchema",
    "InputSchemaError",
    "compile",
    "validate",
    "validate_schema",
]


def compile(schema: Any, dialect: str = CONTRACT) -> CompiledSchema:
    """Preflight the complete schema and return a CompiledSchema; raises InputSchemaError."""
    return _compile(schema, dialect)


def validate_schema(schema: Any, dialect: str = CONTRACT) -> None:
    """Preflight the complete schema without arguments; raises InputSchemaError."""
    _compile(schema, dialect)


def validate(schema: Any, arguments: Any, dialect: str = CONTRACT) -> None:
    """validate_schema, then validate ``arguments``; raises InputSchemaError."""
    _compile(schema, dialect).validate(arguments)
