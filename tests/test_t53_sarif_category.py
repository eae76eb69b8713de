"""T53 #3 (and #7): a SARIF upload never replaces the alerts of another configuration: a run
that leaves rules out (`--no-usage`, `--no-readiness`) has a category of its own by default, as
`--at` and `--all-revisions` runs do (code scanning closes, as fixed, every open alert of a
category that a new upload leaves out)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from conftest import run_cli

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())

pytestmark = pytest.mark.e2e


def _sarif(out: Path) -> dict[str, Any]:
    log: dict[str, Any] = json.loads((out / "findings.sarif").read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log


def _category(log: dict[str, Any]) -> str:
    return str(log["runs"][0]["automationDetails"]["id"]).rpartition("/")[0]


def _rules(log: dict[str, Any]) -> set[str]:
    return {r["ruleId"] for r in log["runs"][0]["results"]}


def test_a_run_that_leaves_rules_out_uploads_under_its_own_category(
    env: dict[str, str], tmp_path: Path
) -> None:
    code, _, err = run_cli(
        ["run", "--out", str(tmp_path / "n"), "-q", "-o", "sarif"], env, tmp_path
    )
    assert code in (0, 1), err
    nightly = _sarif(tmp_path / "n")
    host = _category(nightly).split("/")[1]
    assert _category(nightly) == f"auditor/{host}/run"
    assert any(r.startswith(("RDY-", "ORG-")) for r in _rules(nightly))
    assert any(r.startswith("USE-") for r in _rules(nightly))
    expected = {
        "no-readiness": (["--no-readiness"], f"auditor/{host}/run-no-readiness"),
        "no-usage": (["--no-usage"], f"auditor/{host}/run-no-usage"),
        "both": (["--no-usage", "--no-readiness"], f"auditor/{host}/run-no-usage-no-readiness"),
        "as-of": (["--no-usage", "--at", "2026-10-20"], f"auditor/{host}/run-as-of-no-usage"),
        "named": (["--no-usage", "--sarif-category", "my/cat"], "my/cat"),
    }
    for name, (flags, category) in expected.items():
        out = tmp_path / name
        code, _, err = run_cli(
            ["run", "--offline", "--out", str(out), "-q", "-o", "sarif", *flags], env, tmp_path
        )
        assert code in (0, 1), (name, err)
        log = _sarif(out)
        assert _category(log) == category, name
        assert log["runs"][0]["properties"]["rulesLeftOut"]
    # the flag with nothing of its kind to leave out keeps the nightly's category
    only = tmp_path / "only.yaml"
    only.write_text(
        "rules:\n  - id: ONLY-001\n    title: Sandbox on\n    severity: low\n    target: settings\n"
        "    assert: {path: sandbox.enabled, equals: true}\n"
    )
    code, _, err = run_cli(
        ["run", "--offline", "--policy", str(only), "--no-usage", "--out", str(tmp_path / "o"),
         "-q", "-o", "sarif"],
        env,
        tmp_path,
    )  # fmt: skip
    assert code in (0, 1), err
    assert _category(_sarif(tmp_path / "o")) == f"auditor/{host}/run"


def test_reviews_of_two_files_have_a_category_each(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T53 #7: a review's default category names the reviewed file, so two reviews on one
    commit (prod and staging) never replace each other's alerts."""
    import shutil

    ws = tmp_path / "ws"
    (ws / "settings").mkdir(parents=True)
    example = Path(__file__).resolve().parents[1] / "examples" / "proposed-settings.yaml"
    for name in ("prod.yaml", "staging.yaml"):
        shutil.copy(example, ws / "settings" / name)
    monkeypatch.chdir(ws)
    categories = []
    for name in ("prod.yaml", "staging.yaml"):
        out = tmp_path / name
        code, _, err = run_cli(
            ["review", f"settings/{name}", "--out", str(out), "-q", "-o", "sarif"],
            {**env, "GITHUB_WORKSPACE": str(ws)},
            ws,
        )
        assert code in (0, 1), err
        categories.append(_category(_sarif(out)))
    host = categories[0].split("/")[1]
    assert categories == [
        f"auditor/{host}/review/settings/prod.yaml",
        f"auditor/{host}/review/settings/staging.yaml",
    ]
