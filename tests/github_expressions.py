"""GitHub Actions' `${{ }}` expressions (an `if:`), evaluated by GitHub's documented rules, so
the tests can ask what a condition does with a given set of step outputs.

"Evaluate expressions in workflows and actions" (docs.github.com), Operators: `==` is a loose
equality. When the types differ, both sides become numbers: null → 0, true → 1, false → 0, a
string → parsed as a number ('' → 0, not a number → NaN); NaN equals nothing. Strings compare
ignoring case. `&&` and `||` give one of their operands (the first falsy, the first truthy);
false, 0, -0, NaN, '' and null are falsy. Precedence, tightest first: `!`, `< <= > >=`,
`== !=`, `&&`, `||`. A missing property (`steps.x.outputs.y` that was never written) is null.
This follows `@actions/expressions` (actions/languageservices, `result.ts`: `coerceTypes`,
`equals`), the library GitHub's runner uses; the functions are the ones the shipped workflows
call, given by the caller."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["evaluate", "truthy"]

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>(?:0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?))"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\].,*])|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class _Null:
    """The expression's null (Python's None is taken by "no value given")."""


NULL = _Null()


def _to_number(value: Any) -> float:
    if value is NULL:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):  # JavaScript's Number(): '' and blanks are 0
        text = value.strip()
        if not text:
            return 0.0
        if _NUMBER.fullmatch(text):
            return float(text)
        for prefix, base in (("0x", 16), ("0o", 8), ("0b", 2)):
            if text.lower().startswith(prefix):
                try:
                    return float(int(text[2:], base))
                except ValueError:
                    return math.nan
        if text in ("Infinity", "+Infinity", "-Infinity"):
            return -math.inf if text.startswith("-") else math.inf
        return math.nan
    return math.nan


def _kind(value: Any) -> str:
    if value is NULL:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"


def _coerce(left: Any, right: Any) -> tuple[Any, Any]:
    lk, rk = _kind(left), _kind(right)
    if lk == rk:
        return left, right
    if (lk, rk) == ("number", "string"):
        return left, _to_number(right)
    if (lk, rk) == ("string", "number"):
        return _to_number(left), right
    if lk in ("null", "bool"):
        return _coerce(_to_number(left), right)
    if rk in ("null", "bool"):
        return _coerce(left, _to_number(right))
    return left, right  # an object is never coerced: unequal to any primitive


def equals(left: Any, right: Any) -> bool:
    left, right = _coerce(left, right)
    kind = _kind(left)
    if kind != _kind(right):
        return False
    if kind == "null":
        return True
    if kind == "number":
        return not (math.isnan(left) or math.isnan(right)) and left == right
    if kind == "string":
        return bool(left.upper() == right.upper())
    if kind == "bool":
        return bool(left == right)
    return left is right


def _less(left: Any, right: Any) -> bool:
    left, right = _coerce(left, right)
    kind = _kind(left)
    if kind != _kind(right):
        return False
    if kind == "number":
        return not (math.isnan(left) or math.isnan(right)) and left < right
    if kind == "string":
        return bool(left.upper() < right.upper())
    if kind == "bool":
        return not left and right
    return False


def truthy(value: Any) -> bool:
    if value is NULL or value is False or value == "":
        return False
    if _kind(value) == "number":
        return not (value == 0 or math.isnan(value))
    return True


def _from_json(value: Any) -> Any:
    def convert(item: Any) -> Any:
        if item is None:
            return NULL
        if isinstance(item, list):
            return [convert(i) for i in item]
        if isinstance(item, dict):
            return {k: convert(v) for k, v in item.items()}
        return float(item) if isinstance(item, int) and not isinstance(item, bool) else item

    return convert(json.loads(value))


def _contains(search: Any, item: Any) -> bool:
    if isinstance(search, list):
        return any(equals(item, v) for v in search)
    if _kind(search) != "object" and _kind(item) != "object":
        return _text(item).lower() in _text(search).lower()
    return False


def _text(value: Any) -> str:
    if value is NULL:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


_BUILTINS: dict[str, Callable[..., Any]] = {
    "fromjson": _from_json,
    "contains": _contains,
    "startswith": lambda a, b: _text(a).lower().startswith(_text(b).lower()),
    "endswith": lambda a, b: _text(a).lower().endswith(_text(b).lower()),
}


class _Parser:
    def __init__(self, text: str, context: Mapping[str, Any], functions: Mapping[str, Any]):
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise ValueError(f"cannot read the expression at {text[pos:]!r}")
            kind = match.lastgroup
            assert kind is not None
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.pos = 0
        self.context = {k.lower(): v for k, v in context.items()}
        self.functions = {**_BUILTINS, **{k.lower(): v for k, v in functions.items()}}

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ValueError("unexpected end of the expression")
        token = self.tokens[self.pos]
        if expected is not None and token[1] != expected:
            raise ValueError(f"expected {expected!r}, got {token[1]!r}")
        self.pos += 1
        return token

    def parse(self) -> Any:
        value = self.logical_or()
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected {self.peek()!r}")
        return value

    # Every operand is evaluated: the workflows' operands have no side effects.
    def logical_or(self) -> Any:
        values = [self.logical_and()]
        while self.peek() == "||":
            self.take()
            values.append(self.logical_and())
        return next((v for v in values if truthy(v)), values[-1])

    def logical_and(self) -> Any:
        values = [self.equality()]
        while self.peek() == "&&":
            self.take()
            values.append(self.equality())
        return next((v for v in values if not truthy(v)), values[-1])

    def equality(self) -> Any:
        value = self.comparison()
        while self.peek() in ("==", "!="):
            op = self.take()[1]
            right = self.comparison()
            value = equals(value, right) == (op == "==")
        return value

    def comparison(self) -> Any:
        value = self.unary()
        while self.peek() in ("<", "<=", ">", ">="):
            op = self.take()[1]
            right = self.unary()
            if op == "<":
                value = _less(value, right)
            elif op == ">":
                value = _less(right, value)
            elif op == "<=":
                value = equals(value, right) or _less(value, right)
            else:
                value = equals(value, right) or _less(right, value)
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.postfix()

    def postfix(self) -> Any:
        value = self.primary()
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = _text(self.logical_or())
                self.take("]")
            value = value.get(key.lower(), NULL) if isinstance(value, dict) else NULL
        return value

    def primary(self) -> Any:
        kind, text = self.take()
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return _to_number(text)
        if text == "(":
            value = self.logical_or()
            self.take(")")
            return value
        if kind != "name":
            raise ValueError(f"unexpected {text!r}")
        if self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.logical_or())
                if self.peek() == ",":
                    self.take()
            self.take(")")
            if text.lower() not in self.functions:
                raise ValueError(f"no function {text}() given")
            return self.functions[text.lower()](*args)
        literal = {"true": True, "false": False, "null": NULL}
        if text in literal:
            return literal[text]
        if text.lower() not in self.context:
            raise ValueError(f"no context {text} given")
        return self.context[text.lower()]


def _lower_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).lower(): _lower_keys(v) for k, v in value.items()}
    return value


def evaluate(
    expression: str,
    context: Mapping[str, Any],
    functions: Mapping[str, Callable[..., Any]] | None = None,
) -> Any:
    """The value of `expression` (an `if:` without `${{ }}`, or with it around the whole),
    contexts given as nested dicts of strings (a key left out is null)."""
    text = expression.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    lowered = {k: _lower_keys(v) for k, v in context.items()}
    return _Parser(text, lowered, functions or {}).parse()
