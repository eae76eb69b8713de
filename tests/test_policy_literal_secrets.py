"""A literal a rule compares with, in a policy's text: hidden before anything is shown."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli


def test_a_redacted_literal_under_changes_keeps_comparing_loosely(tmp_path: Path) -> None:
    """A change's `after` holds values of every type (`loose`): a leaf whose literal the
    redactor hid (a `ghp_…` key) compares an object `after` as unequal, as before it was
    hidden, not as an `error` (the redacted leaf lost `loose`: the rule was never judged)."""
    key = "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78"
    (tmp_path / "p.yaml").write_text(
        "rules:\n  - id: C-1\n    title: t\n    severity: high\n    target: change\n"
        "    assert:\n      none: changes\n      assert:\n        all:\n"
        "          - {path: path, equals: '$.env.TOKEN'}\n"
        f"          - {{path: after, equals: '{key}'}}\n"
    )
    (tmp_path / "live.json").write_text("{}")
    (tmp_path / "proposed.json").write_text(json.dumps({"env": {"TOKEN": "Nm5Bv8Cx2Zl4Kj7Hg"}}))
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--author", "a@b.example"]
    argv += ["--out", str(tmp_path / "out"), "-o", "json"]
    code, _out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 0, err
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())["findings"]
    assert [f["status"] for f in findings] == ["pass"]
    assert key not in json.dumps(findings)
