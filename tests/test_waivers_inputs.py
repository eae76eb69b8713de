"""What a waivers file may hold, as `auditor review --waivers` reads it: every field that is
empty or null is an error at its `file:line:col` (an empty `expires:` once dropped its waiver
without a word), and a secret written in a waiver never reaches an output."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FIELDS = {
    "rule": "BASE-NET-001",
    "subject": "settings",
    "reason": "r",
    "owner": "o",
    "expires": "2026-12-31",
    "ticket": "T-1",
}


def review(tmp_path: Path, waivers: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    argv = ["review", str(EXAMPLES / "proposed-settings.yaml"), "--against"]
    argv += [str(EXAMPLES / "live-settings.yaml"), "--author", "a@b.c", "--waivers", str(waivers)]
    argv += ["--out", str(tmp_path / "out"), *extra]
    stdout, stderr = io.StringIO(), io.StringIO()
    ctx = Context(env=env or {}, stdout=stdout, stderr=stderr, clock=lambda: FIXED_NOW)
    return main(argv, ctx), stdout.getvalue(), stderr.getvalue()


def waiver_file(tmp_path: Path, **fields: str) -> Path:
    entry = {**FIELDS, **fields}
    path = tmp_path / "waivers.yaml"
    lines = [f"    {key}:{' ' if value else ''}{value}\n" for key, value in entry.items()]
    path.write_text("waivers:\n  - " + "".join(lines)[4:], encoding="utf-8")
    return path


@pytest.mark.parametrize("field", list(FIELDS))
@pytest.mark.parametrize("empty", ["", "null", "~"])
def test_an_empty_or_null_field_is_an_error_at_its_place(
    tmp_path: Path, field: str, empty: str
) -> None:
    path = waiver_file(tmp_path, **{field: empty})
    code, _, stderr = review(tmp_path, path)
    line = list(FIELDS).index(field) + 2
    col = len(f"    {field}:") + (2 if empty else 1)
    assert code == 2, stderr
    assert f"{path}:{line}:{col}: error: $.waivers[0].{field}: `{field}` must be" in stderr
    assert not (tmp_path / "out").exists()
