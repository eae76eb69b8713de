"""The operator registry: every comparison a policy leaf can make, as a pure function.

Takes an actual value (already resolved from the data) and a prepared expected value, gives a
bool. Operators know nothing of paths: a value of the wrong type raises `OperandTypeError`,
and the evaluator turns it into an `error` result naming the JSON path. `@operator("name")`
above a function is the whole registration; the policy schema is built from `REGISTRY`.

The concept modules are imported here, explicitly, so `from auditor.operators import REGISTRY`
always sees every operator.
"""

from __future__ import annotations

from auditor.operators import change, compare, shape, text, timing
from auditor.operators.compare import LiteralMismatch
from auditor.operators.core import (
    BUILTIN_ENUMS,
    MISSING,
    REGISTRY,
    OperandTypeError,
    Operator,
    Ordered,
    json_type,
    operator,
    same,
)
from auditor.operators.hidden import (
    HiddenValueError,
    current_marker_of,
    fingerprinting,
    holds_marker,
)
from auditor.operators.timing import parse_version, to_datetime

MODULES = (compare, text, shape, timing, change)

__all__ = [
    "BUILTIN_ENUMS",
    "MISSING",
    "MODULES",
    "REGISTRY",
    "HiddenValueError",
    "LiteralMismatch",
    "OperandTypeError",
    "Operator",
    "Ordered",
    "current_marker_of",
    "fingerprinting",
    "holds_marker",
    "json_type",
    "operator",
    "parse_version",
    "same",
    "to_datetime",
]
