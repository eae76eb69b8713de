"""The same data served again in another legal JSON form is not an audit trail rewritten.

A re-read revision or readiness report whose content hash differs from the stored one is
compared as a value first (`auditor.store.rewrites`): numbers equal as numbers (`30` and
`30.0`, exactly), a report's optional field `null` the same as absent, and fields only added a
data-quality note, the stored copy kept. A value changed or a field removed stays a critical
`AUDITOR-INTEGRITY-001` finding, whose message names the paths, never a value. End to end: a
sync from the emulator, the same emulator serving its data in another form, a second sync and
an offline run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.common.jsonsame import compare
from auditor.emulator import start_emulator
from auditor.store import Store
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

pytestmark = pytest.mark.e2e

RULE = "AUDITOR-INTEGRITY-001"
POLICY = """\
rules:
  - id: T-F-001
    title: Session retention is set
    severity: low
    target: settings
    assert: {path: sessionRetentionDays, exists: true}
"""
OPTIONAL = ("branch", "agentVersion", "modelUsed")  # left out at first, later sent as null


@pytest.fixture
def emu() -> Iterator[Any]:
    """A small emulator of its own (the tests change what it serves); its reports at first
    without some optional fields."""
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=30, repos=3) as e:
        for report in e.dataset.reports:
            for name in OPTIONAL:
                report.pop(name, None)
        yield e


def _floats(value: Any) -> Any:
    """Every whole number in `value` written as a float (`30` → `30.0`), in place."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in list(items):
        if isinstance(item, dict | list):
            _floats(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            value[key] = float(item)
    return value


def _expo(emu: Any) -> None:  # createdAt 1792776563641 sent as 1792776563641.0
    for report in emu.dataset.reports:
        report["createdAt"] = float(report["createdAt"])


def _nulls(emu: Any) -> None:  # optional report fields absent -> null
    for report in emu.dataset.reports:
        report.update(dict.fromkeys(OPTIONAL))


def _settings_floats(emu: Any) -> None:  # whole numbers inside settings as 30.0
    for change in emu.dataset.history:
        _floats(change["settings"])


def _extra(emu: Any) -> None:  # one new, undocumented field on each report
    for report in emu.dataset.reports:
        report["reviewedBy"] = "someone"


FORMS: dict[str, Callable[[Any], None]] = {
    "createdAt-as-float": _expo,
    "optional-fields-null": _nulls,
    "settings-numbers-as-floats": _settings_floats,
    "a-field-added-to-each-report": _extra,
}


def _sync(env: dict[str, str], tmp_path: Path) -> str:
    code, out, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 0, err
    return out


def _integrity_findings(env: dict[str, str], tmp_path: Path) -> list[dict[str, Any]]:
    (tmp_path / "p.yaml").write_text(POLICY)
    argv = ["run", "--offline", "--no-usage", "--policy", "p.yaml", "--out", "out", "-o", "json"]
    code, _out, err = run_cli(argv, env, tmp_path)
    assert code in (0, 1), err
    data = json.loads((tmp_path / "out" / "findings.json").read_text())
    return [f for f in data["findings"] if f["rule_id"] == RULE]


@pytest.mark.parametrize("form", FORMS)
def test_the_same_data_in_another_json_form_is_no_integrity_issue(
    emu: Any, tmp_path: Path, form: str
) -> None:
    env = emulator_env(emu, tmp_path / "state.db")
    _sync(env, tmp_path)
    with Store.open(tmp_path / "state.db") as store:
        before = (list(store.iter_revisions()), list(store.iter_reports()))
    FORMS[form](emu)
    out = _sync(env, tmp_path)
    assert "; 0 integrity issues." in out, out
    out = _sync(env, tmp_path)  # again (a report now recognised without redacting it)
    assert "; 0 integrity issues." in out, out
    assert _integrity_findings(env, tmp_path) == []
    with Store.open(tmp_path / "state.db") as store:  # the stored copy is the first one
        assert (list(store.iter_revisions()), list(store.iter_reports())) == before
        assert store.integrity_issues() == []


def test_a_field_added_to_stored_reports_is_a_data_quality_note(emu: Any, tmp_path: Path) -> None:
    env = emulator_env(emu, tmp_path / "state.db")
    _sync(env, tmp_path)
    _extra(emu)
    out = _sync(env, tmp_path)
    assert "$.reviewedBy: now carried by an item already stored" in out, out
    assert "kept as first stored" in out and "someone" not in out


def test_fields_added_to_a_stored_item_are_noted_by_the_store(tmp_path: Path, emu: Any) -> None:
    """(What the sync reports: `Ingested.note`, the path and the item, never the value.)"""
    env = emulator_env(emu, tmp_path / "state.db")
    _sync(env, tmp_path)
    with Store.open(tmp_path / "state.db") as store:
        report = next(iter(store.iter_reports()))
        data = {**report.data, "reviewedBy": "someone", "apps": {**report.data["apps"], "x": {}}}
        other = type(report)(report.report_id, report.repo_url, report.created_at, data, "f" * 64)
        with store.transaction():
            outcome = store.ingest_report(other, 99, FIXED_NOW)
        assert (outcome.status, outcome.known_before, outcome.issue) == ("same", True, None)
        assert outcome.note is not None
        assert outcome.note.path == "$.apps.x, $.reviewedBy"
        assert outcome.note.item == f"report {report.report_id}"
        assert "kept as first stored" in outcome.note.problem
        assert "someone" not in outcome.note.describe()
        assert next(iter(store.iter_reports())) == report  # the stored copy is kept


def test_a_changed_value_or_a_removed_field_is_still_critical_and_named(
    emu: Any, tmp_path: Path
) -> None:
    env = emulator_env(emu, tmp_path / "state.db")
    _sync(env, tmp_path)
    change = emu.dataset.history[-3]
    number = change["revision"]
    change["settings"]["sessionRetentionDays"] = 4242  # a real change to a stored value
    report = emu.dataset.reports[0]
    del report["commitHash"]  # a field removed
    _settings_floats(emu)  # and the rest only written another way: not named
    out = _sync(env, tmp_path)
    assert "; 2 integrity issues." in out, out
    named = f"revision {number} changed after it was stored: $.settings.sessionRetentionDays "
    assert named + "changed (stored sha256" in out
    rid = report["reportId"]
    assert f"readiness report {rid} changed after it was stored: $.commitHash removed (" in out
    found = _integrity_findings(env, tmp_path)
    assert sorted(f["subject"]["key"] for f in found) == sorted(
        [f"settings@{number}", report["repoUrl"]]
    )
    assert all(f["severity"] == "critical" and f["status"] == "fail" for f in found)
    messages = " ".join(f["message"] for f in found)
    assert "$.settings.sessionRetentionDays changed" in messages
    assert "$.commitHash removed" in messages
    assert "4242" not in json.dumps(found)  # paths, never a value
    with Store.open(tmp_path / "state.db") as store:
        kept = store.get_revision(number)
        assert kept is not None and kept.settings["sessionRetentionDays"] != 4242
    # an evidence bundle carries the paths too: its reports, and verify's re-run, say the same
    argv = ["export", "--no-usage", "--policy", "p.yaml", "--out", "ev"]
    code, _out, err = run_cli(argv, env, tmp_path)
    assert code == 0, err
    bundled = json.loads((tmp_path / "ev" / "reports" / "findings.json").read_text())
    in_bundle = " ".join(f["message"] for f in bundled["findings"] if f["rule_id"] == RULE)
    assert "$.settings.sessionRetentionDays changed" in in_bundle
    assert "$.commitHash removed" in in_bundle
    code, out, err = run_cli(["verify", "ev"], env, tmp_path)
    assert code == 0, out + err


def test_a_stored_null_filled_in_later_is_a_rewrite(emu: Any, tmp_path: Path) -> None:
    """A report's `null` is the same as absent, but a criterion's `numerator: null` (skipped)
    that later has a value is a changed report, not a field added (reviewer R8: it was a
    data-quality note and 0 integrity issues)."""
    report = emu.dataset.reports[0]
    criterion = sorted(report["report"])[0]
    report["report"][criterion]["numerator"] = None
    env = emulator_env(emu, tmp_path / "state.db")
    _sync(env, tmp_path)
    report["report"][criterion]["numerator"] = 1
    out = _sync(env, tmp_path)
    assert "; 1 integrity issue." in out, out
    rid = report["reportId"]
    assert f"{rid} changed after it was stored: $.report.{criterion}.numerator changed (" in out
    found = _integrity_findings(env, tmp_path)
    assert [f["subject"]["key"] for f in found] == [report["repoUrl"]]


def test_a_changed_secret_under_a_secret_key_names_the_path_as_stored(
    emu: Any, tmp_path: Path
) -> None:
    """A settings key that is itself a secret is named by its marker, as the store keeps it;
    neither the key nor either value is shown."""
    key, old, new = "ghp_" + "K" * 36, "ghp_" + "a1B2" * 9, "ghp_" + "z9Y8" * 9
    emu.dataset.history[-1]["settings"]["env"][key] = old
    env = emulator_env(emu, tmp_path / "state.db")
    _sync(env, tmp_path)
    emu.dataset.history[-1]["settings"]["env"][key] = new
    out = _sync(env, tmp_path)
    found = _integrity_findings(env, tmp_path)  # (revisions that share the `env` object too)
    assert found and "integrity issue" in out, out
    text = out + json.dumps(found)
    for secret in (key, old, new):
        assert secret not in text
    for finding in found:
        assert "$.settings.env['[secret fp:" in finding["message"], finding["message"]


@pytest.mark.parametrize(
    ("stored", "seen", "nulls", "expected"),
    [
        pytest.param({"a": 30}, {"a": 30.0}, False, ([], [], []), id="int-as-float"),
        pytest.param(
            {"a": 1792776563641}, {"a": 1792776563641.0}, False, ([], [], []), id="ms-float"
        ),
        pytest.param(
            {"a": 2**63 + 1}, {"a": float(2**63 + 1)}, False, (["$.a"], [], []), id="big-int"
        ),
        pytest.param({"a": 1}, {"a": True}, False, (["$.a"], [], []), id="bool-not-number"),
        pytest.param({"a": 0}, {"a": False}, False, (["$.a"], [], []), id="false-not-0"),
        pytest.param({"a": "1"}, {"a": 1}, False, (["$.a"], [], []), id="string-not-number"),
        pytest.param({"a": None}, {}, True, ([], [], []), id="null-is-absent"),
        pytest.param({}, {"a": None}, True, ([], [], []), id="absent-is-null"),
        pytest.param({"a": None}, {}, False, ([], ["$.a"], []), id="settings-null-removed"),
        pytest.param({}, {"a": None}, False, ([], [], ["$.a"]), id="settings-null-added"),
        pytest.param({"a": None}, {"a": 1}, True, (["$.a"], [], []), id="null-then-value"),
        pytest.param({}, {"a": 1}, True, ([], [], ["$.a"]), id="absent-then-value"),
        pytest.param({"a": 1}, {"a": None}, True, ([], ["$.a"], []), id="value-then-null"),
        pytest.param({"a": [1, 2]}, {"a": [1, 2, 3]}, False, (["$.a"], [], []), id="list-grew"),
        pytest.param(
            {"a": [{"x": 1}]}, {"a": [{"x": 1.0, "y": 2}]}, False, ([], [], ["$.a[0].y"]), id="nest"
        ),
        pytest.param({"a": {}}, {"a": []}, False, (["$.a"], [], []), id="object-not-list"),
        pytest.param({"odd key": 1}, {}, False, ([], ["$['odd key']"], []), id="quoted-key"),
    ],
)
def test_compare_table(stored: Any, seen: Any, nulls: bool, expected: Any) -> None:
    diff = compare(stored, seen, null_is_absent=nulls)
    assert (diff.changed, diff.removed, diff.added) == tuple(expected)
    assert diff.same == (expected == ([], [], []))


def test_compare_names_five_paths_of_a_kind_and_counts_the_rest() -> None:
    diff = compare({f"k{i}": i for i in range(8)}, {f"k{i}": -i - 1 for i in range(8)})
    assert diff.counts["changed"] == 8 and len(diff.changed) == 5
    assert diff.describe().endswith(" and 3 more changed")


@pytest.fixture(params=["sqlite", "postgresql"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A state file, or a PostgreSQL store (the changed paths are kept by the shared SQL)."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return tmp_path / "state.db"


def test_the_changed_paths_are_kept_with_the_issue_in_either_store(state: Path | str) -> None:
    from tests.test_sync import TOKEN, FakeService, run_sync

    service = FakeService(4, reports=2)

    def sync_once() -> Any:
        with Store.open(state) as store:
            store.register_secret(TOKEN)
            return run_sync(store, service)

    sync_once()
    for change in service.revisions.values():
        change["settings"]["n"] = float(change["settings"]["n"])  # the same: no issue
    service.revisions[3]["settings"]["n"] = "rewritten"
    del service.revisions[3]["settings"]["customModels"]
    service.reports[1]["report"]["lint"]["numerator"] = 0
    [first, second] = sync_once().integrity_issues
    sync_once()  # the same other content again: nothing new
    with Store.open(state) as store:
        issues = store.integrity_issues()
    assert [i.describe() for i in issues] == [first.describe(), second.describe()]
    assert [i.describe().split(" (stored sha256")[0] for i in issues] == [
        "revision 3 changed after it was stored: $.settings.n changed; "
        "$.settings.customModels removed",
        "readiness report r0001 changed after it was stored: $.report.lint.numerator changed",
    ]


def test_a_key_learned_as_a_secret_later_leaves_the_issue_s_paths_too(state: Path | str) -> None:
    """A path names a key the stored row has: when that key turns out to be a secret (a later
    revision has it as an `apiKey`), the row is redacted again, and so are the paths."""
    from tests.test_sync import TOKEN, FakeService, run_sync

    wordy = "orange-keyname-battery-314159-staple"  # no detector sees it: only the memory
    service = FakeService(2)

    def sync_once() -> Any:
        with Store.open(state) as store:
            store.register_secret(TOKEN)
            return run_sync(store, service)

    service.revisions[1]["settings"]["env"] = {wordy: "one"}
    sync_once()
    service.revisions[1]["settings"]["env"] = {wordy: "two"}
    [issue] = sync_once().integrity_issues
    assert "$.settings.env" in issue.describe()
    service.add_revisions(1)
    service.revisions[3]["settings"]["customModels"][0]["apiKey"] = wordy  # learned here
    sync_once()
    with Store.open(state) as store:
        described = " ".join(i.describe() for i in store.integrity_issues())
        kept = [str(c) for (c,) in store._db.execute("SELECT changes FROM integrity_changes")]
    assert "$.settings.env['[secret fp:" in described, described
    assert wordy not in described and not any(wordy in c for c in kept), kept
    if isinstance(state, Path):
        assert wordy.encode() not in state.read_bytes()
