"""The build's record of the shipped YAML files (`yamlsafe.SHIPPED_YAML`): each file parsed,
its data, the positions of its values two levels deep and whether it passes the policy schema,
by the sha256 of its bytes. Written by `python -m auditor.policy.shipped` after a shipped file
changes (tests/test_yamlsafe.py fails until then); read by `yamlsafe.load_yaml`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from auditor.policy import SHIPPED_POLICY_DIR
from auditor.policy.loader import _Loader, policy_files
from auditor.policy.schema import schema_digest
from auditor.policy.yamlsafe import ITEMS, SHIPPED_YAML, load_text, position_key, untagged

_FORMAT = 1


def shipped_files() -> list[Path]:
    """The YAML read on every run: the shipped policy packs and the package's data files (the
    readiness model)."""
    return [*policy_files([SHIPPED_POLICY_DIR]), *sorted(SHIPPED_YAML.parent.glob("*.yaml"))]


def _paths(
    data: Any, depth: int, at: tuple[str | int, ...] = ()
) -> Iterator[tuple[str | int, ...]]:
    """Every path into `data` at most `depth` levels deep (the root excluded)."""
    if depth == 0:
        return
    items: Iterator[tuple[str | int, Any]]
    if isinstance(data, dict):
        items = iter(data.items())
    elif isinstance(data, list):
        items = enumerate(data)
    else:
        return
    for part, value in items:
        yield (*at, part)
        yield from _paths(value, depth - 1, (*at, part))


def _tagged(value: Any) -> Any:
    """Data as `SHIPPED_YAML` holds it: a mapping with a key that is not text (or with the one
    key `ITEMS`) as `{ITEMS: [[key, value], …]}`."""
    if isinstance(value, dict):
        items = {k: _tagged(v) for k, v in value.items()}
        if all(isinstance(k, str) for k in items) and items.keys() != {ITEMS}:
            return items
        return {ITEMS: [[k, v] for k, v in items.items()]}
    if isinstance(value, list):
        return [_tagged(v) for v in value]
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal, of the same types and with keys in the same order all the way down (`1 == True
    == 1.0` is not enough; the order of a condition's operators is the order of its keys)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def record(paths: Sequence[Path]) -> bytes:
    """The record of these files, each parsed now (never taken from a record), as JSON. A
    file whose data JSON cannot carry exactly (a date, a non-text key) is left out: it is
    parsed at each load."""
    files: dict[str, Any] = {}
    for path in paths:
        raw = path.read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        doc = load_text(raw.decode("utf-8"), str(path), sha256=digest)
        tagged = _tagged(doc.data)
        try:
            carried = orjson.loads(orjson.dumps(tagged))
        except TypeError:  # a date, say
            continue
        if not _same(untagged(carried), doc.data):
            continue
        loader = _Loader()
        got = loader.checked(doc)
        checked = got is not None and got.ok and not got.bad_rules and not loader.problems
        positions = {}
        for parts in _paths(doc.data, 2):
            for key in (False, True):
                loc = doc.locate(parts, key=key)
                positions[position_key(parts, key=key)] = [loc.line, loc.col]
        files[digest] = {
            "file": path.name,
            "data": tagged,
            "positions": positions,
            "schema_checked": checked,
        }
    record = {"format": _FORMAT, "schema": schema_digest(), "files": files}
    return orjson.dumps(record, option=orjson.OPT_INDENT_2) + b"\n"  # diffs a reviewer can read


def main() -> int:
    """Write the record of the shipped files."""
    SHIPPED_YAML.write_bytes(record(shipped_files()))
    print(f"wrote {SHIPPED_YAML}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
