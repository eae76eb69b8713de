"""What a waivers file may hold, as `auditor review --waivers` reads it: every field that is
empty or null is an error at its `file:line:col` (an empty `expires:` once dropped its waiver
without a word), and a secret written in a waiver never reaches an output."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor.cli import Context, main
from auditor.evaluate.model import RuleResult
from auditor.evaluate.readiness import load_readiness_model
from auditor.findings.waivers import apply_waivers
from auditor.models import Subject, Waiver
from auditor.policy.loader import PolicySet
from auditor.policy.model import Rule
from auditor.redact import Redactor
from auditor.workflows.run import LoadedPolicy, redacted_inputs
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


def review(
    tmp_path: Path, waivers: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
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


TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
PASSWORD = "hunter2hunter2"


def test_a_secret_in_a_waivers_subject_reaches_no_output(tmp_path: Path) -> None:
    """A repository glob with a password in it was shown as written in report.md, the step
    summary, report.html and findings.json."""
    path = tmp_path / "waivers.yaml"
    why = "reason: r, owner: o, expires: 2026-12-31"
    path.write_text(
        "waivers:\n"
        f'  - {{rule: BASE-NET-001, subject: "https://bob:{PASSWORD}@github.com/acme/*", {why}}}\n',
        encoding="utf-8",
    )
    summary = tmp_path / "summary.md"
    code, stdout, stderr = review(tmp_path, path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert code == 1, stderr
    outputs = [summary, *sorted((tmp_path / "out").iterdir())]
    assert len(outputs) > 4
    for output in outputs:
        text = output.read_text(encoding="utf-8", errors="replace")
        assert PASSWORD not in text, output.name
    assert PASSWORD not in stdout + stderr
    data = json.loads((tmp_path / "out" / "findings.json").read_text(encoding="utf-8"))
    subjects = [w["subject"] for w in data["waivers"]["stale"]]
    assert any(re.fullmatch(r"https://bob:\[secret .*\]@github\.com/acme/\*", s) for s in subjects)


@pytest.mark.parametrize(
    "pasted", [TOKEN, "Xk9pQ2vR7mT4wZ1bN8cL", "P@ssw0rd!2026", "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"]
)
def test_a_token_pasted_as_a_waivers_rule_is_an_unknown_rule_not_quoted(
    tmp_path: Path, pasted: str
) -> None:
    """No policy has a rule named like a token: the waiver is refused at its place (it was
    once accepted, reported stale, and shown in every report as a marker), and the error
    does not quote it, whether or not a detector takes it for a secret (only an id near a
    known one, or shaped like one, `NOPE-001`, is quoted)."""
    path = waiver_file(tmp_path, rule=pasted)
    code, stdout, stderr = review(tmp_path, path)
    assert code == 2, stderr
    assert f"{path}:2:11: error: $.waivers[0].rule: unknown rule" in stderr
    assert pasted not in stdout + stderr
    assert not (tmp_path / "out").exists()


def test_a_waiver_shown_redacted_still_matches_by_what_it_wrote() -> None:
    """The reports show the marker; matching goes by the subject as written."""
    url = f"https://github.com/acme/{TOKEN}"
    subject = Subject("readiness", url, "repo", repo_url=url)
    rule = Rule("R-1", "title", "high", "readiness", condition=None)
    day = datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
    loaded = LoadedPolicy(
        PolicySet(rules=(), files=()), (Waiver("R-1", url, "r", "o", day),), load_readiness_model()
    )
    (shown,) = redacted_inputs(loaded, Redactor(b"key")).waivers
    assert TOKEN not in shown.subject
    results, report = apply_waivers([RuleResult(rule, subject, "fail", "m")], [shown], FIXED_NOW)
    assert results[0].status == "waived" and results[0].waiver is shown
    assert report.stale == ()


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("usage@2026-13-01", "subject `usage@2026-13-01` names no calendar day"),
        ("usage@2026-02-30", "subject `usage@2026-02-30` names no calendar day"),
        ("settings@01", "subject `settings@01` is not `settings`, `settings@N`"),
        ("change:01..02", "subject `change:01..02` is not"),
    ],
)
def test_a_subject_no_result_can_have_is_refused(
    tmp_path: Path, subject: str, expected: str
) -> None:
    path = waiver_file(tmp_path, subject=subject)
    code, _, stderr = review(tmp_path, path)
    assert code == 2, stderr
    assert f"{path}:3:14: error: $.waivers[0].subject: {expected}" in stderr
