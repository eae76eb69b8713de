"""Findings: fingerprints, attribution text, ordering and new/persisting/resolved across runs."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.evaluate.model import RuleResult
from auditor.findings.baseline import compare_runs, records_for_store
from auditor.findings.finding import (
    Finding,
    attribution_text,
    control_key,
    findings_from_results,
    fingerprint,
    natural_key,
    natural_text,
    normalize_path,
    sort_controls,
    sort_findings,
)
from auditor.models import Attribution, Evidence, FindingRecord, Severity, Status, Subject
from auditor.policy.model import Rule

SETTINGS = Subject("settings", "settings", "settings in force")
STEP = Subject("change", "change:412..413", "rev 412 → 413", revision=413)
REPO = Subject("readiness", "https://github.com/acme/web", "acme/web")
WHEN = datetime(2026, 9, 3, 10, 15, tzinfo=UTC)


def _rule(rid: str = "SET-001", severity: Severity = "high") -> Rule:
    return Rule(
        id=rid,
        title=f"Title of {rid}",
        severity=severity,
        target="settings",
        condition=None,
        controls=("SOC2:CC6.1",),
        remediation="fix it",
    )


def _result(
    rid: str = "SET-001",
    status: Status = "fail",
    subject: Subject = SETTINGS,
    paths: tuple[str, ...] = ("$.a.b",),
    severity: Severity = "high",
    **kw: object,
) -> RuleResult:
    evidence = tuple(Evidence(p, 1, 2, "equals") for p in paths)
    return RuleResult(_rule(rid, severity), subject, status, f"{rid} message", evidence, **kw)  # type: ignore[arg-type]


def _one(**kw: object) -> Finding:
    return findings_from_results([_result(**kw)])[0]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "normalized"),
    [
        ("$.hooks.PreToolUse[3].command", "$.hooks.PreToolUse[*].command"),
        ("$.a[0][12]", "$.a[*][*]"),
        ("$.customModels[?id=='custom:x'].baseUrl", "$.customModels[?id=='custom:x'].baseUrl"),
        ("$.plain", "$.plain"),
    ],
    ids=["index", "nested-index", "identity-kept", "plain"],
)
def test_normalize_path_replaces_only_list_indices(path: str, normalized: str) -> None:
    assert normalize_path(path) == normalized


def test_fingerprint_is_32_hex_and_deterministic() -> None:
    fp = fingerprint("SET-001", "settings", "$.a")
    assert fp == fingerprint("SET-001", "settings", "$.a")
    assert len(fp) == 32 and int(fp, 16) >= 0


@pytest.mark.parametrize(
    ("other"),
    [
        ("SET-002", "settings", "$.a"),
        ("SET-001", "settings@412", "$.a"),
        ("SET-001", "settings", "$.b"),
    ],
    ids=["rule", "subject", "path"],
)
def test_fingerprint_changes_with_rule_subject_and_path(other: tuple[str, str, str]) -> None:
    assert fingerprint(*other) != fingerprint("SET-001", "settings", "$.a")


def test_fingerprint_ignores_list_positions() -> None:
    assert fingerprint("R", "s", "$.hooks[0].cmd") == fingerprint("R", "s", "$.hooks[5].cmd")


def test_fingerprint_ignores_evidence_order_message_and_time() -> None:
    a = _one(paths=("$.x", "$.y"))
    b = findings_from_results(
        [
            replace(
                _result(paths=("$.y", "$.x")), message="other", since=Attribution(1, WHEN, "a@b.c")
            )
        ]
    )[0]
    assert a.fingerprint == b.fingerprint


def test_findings_keep_passes_rule_metadata_and_raw_status() -> None:
    results = [_result(status="pass"), _result("SET-002", status="waived", raw_status="fail")]
    found = findings_from_results(results)
    assert [(f.rule_id, f.status, f.raw_status) for f in found] == [
        ("SET-001", "pass", "pass"),
        ("SET-002", "waived", "fail"),
    ]
    assert found[0].controls == ("SOC2:CC6.1",) and found[0].remediation == "fix it"


@pytest.mark.parametrize(
    ("controls", "ordered"),
    [
        (["ISO27001:A.5.15", "ISO27001:A.5.2"], ["ISO27001:A.5.2", "ISO27001:A.5.15"]),
        (["SOC2:CC6.10", "SOC2:CC6.8", "SOC2:CC6.1"], ["SOC2:CC6.1", "SOC2:CC6.8", "SOC2:CC6.10"]),
        (["SOC2:CC7.1", "ISO27001:A.8.9"], ["ISO27001:A.8.9", "SOC2:CC7.1"]),
        (
            ["ISO27001:A.8.10", "ISO27001:A.8.9", "ISO27001:A.10.1"],
            ["ISO27001:A.8.9", "ISO27001:A.8.10", "ISO27001:A.10.1"],
        ),
        (["soc2:CC1.2", "SOC2:CC1.10"], ["soc2:CC1.2", "SOC2:CC1.10"]),
        (["NIST:AC-2", "NIST:AC-2", "NIST:AC-12"], ["NIST:AC-2", "NIST:AC-12"]),
    ],
    ids=["iso-minor", "soc2-minor", "framework-first", "iso-major", "case-blind", "dedup"],
)
def test_controls_sort_naturally(controls: list[str], ordered: list[str]) -> None:
    assert list(sort_controls(controls)) == ordered
    assert list(sort_controls(reversed(controls))) == ordered


def test_control_key_breaks_ties_deterministically() -> None:
    assert control_key("A.01") != control_key("A.1")
    assert sorted(["A.01", "A.1"], key=control_key) == sorted(["A.1", "A.01"], key=control_key)


def test_finding_lists_its_rules_controls_in_natural_order() -> None:
    rule = replace(_rule(), controls=("SOC2:CC6.10", "ISO27001:A.5.15", "ISO27001:A.5.2"))
    (found,) = findings_from_results([replace(_result(), rule=rule)])
    assert found.controls == ("ISO27001:A.5.2", "ISO27001:A.5.15", "SOC2:CC6.10")


def test_sort_order_is_severity_rule_subject_then_independent_of_input_order() -> None:
    results = [
        _result("B-1", severity="low"),
        _result("A-1", severity="critical", subject=REPO),
        _result("A-1", severity="critical"),
        _result("C-1", severity="critical"),
    ]
    shuffled = results[:]
    random.Random(7).shuffle(shuffled)
    expected = [
        ("A-1", "https://github.com/acme/web"),
        ("A-1", "settings"),
        ("C-1", "settings"),
        ("B-1", "settings"),
    ]
    for order in (results, shuffled):
        assert [(f.rule_id, f.subject.key) for f in findings_from_results(order)] == expected
    assert sort_findings(reversed(findings_from_results(results))) == findings_from_results(results)


@pytest.mark.parametrize(
    ("subject", "since", "text"),
    [
        (
            SETTINGS,
            Attribution(412, WHEN, "a@b.c", "Alice"),
            "violating since rev 412 (2026-09-03) by a@b.c",
        ),
        (STEP, Attribution(413, WHEN, "bob@b.c"), "changed in rev 413 (2026-09-03) by bob@b.c"),
        (
            SETTINGS,
            Attribution(7, WHEN, "", "Robot"),
            "violating since rev 7 (2026-09-03) by Robot",
        ),
        (SETTINGS, Attribution(7, WHEN, ""), "violating since rev 7 (2026-09-03)"),
        (SETTINGS, None, ""),
        (  # a 1 MB email was repeated whole in every finding: 68 MB of reports
            SETTINGS,
            Attribution(7, WHEN, "a" * 1_000_000 + "@x.com"),
            f"violating since rev 7 (2026-09-03) by {'a' * 254}… (999752 more characters)",
        ),
        (  # the cut goes before a marker it would split (half a fingerprint was shown)
            SETTINGS,
            Attribution(7, WHEN, "a" * 240 + "[secret fp:0a1b2c3d len:24]" + "@x.com"),
            f"violating since rev 7 (2026-09-03) by {'a' * 240}… (33 more characters)",
        ),
    ],
    ids=["settings", "change-step", "name-only", "no-author", "unknown", "huge-email", "marker"],
)
def test_attribution_text(subject: Subject, since: Attribution | None, text: str) -> None:
    assert attribution_text(_one(subject=subject, since=since)) == text


def _prev(f: Finding, status: str = "fail") -> FindingRecord:
    return FindingRecord(f.fingerprint, f.rule_id, f.subject.key, status, f.severity, "run-1")


def test_no_previous_run_means_no_lifecycle_and_nothing_resolved() -> None:
    current = findings_from_results([_result()])
    marked, resolved = compare_runs(current, None)
    assert [f.lifecycle for f in marked] == [None] and resolved == []


def test_new_persisting_and_resolved_against_previous_run() -> None:
    kept, fresh, gone = _one(rid="K-1"), _one(rid="N-1"), _one(rid="G-1")
    passing = _one(rid="P-1", status="pass")
    previous = [_prev(kept), _prev(gone), _prev(passing, "pass")]
    marked, resolved = compare_runs([kept, fresh, passing], previous)
    assert {f.rule_id: f.lifecycle for f in marked} == {
        "K-1": "persisting",
        "N-1": "new",
        "P-1": None,
    }
    assert [p.rule_id for p in resolved] == ["G-1"]


def test_marking_in_place_gives_the_same_marks_in_the_callers_list() -> None:
    """`run` marks its (possibly 100,000s of) findings in place: same marks, same order, and
    the caller's list now holds the marked findings."""
    kept, fresh, gone = _one(rid="K-1"), _one(rid="N-1"), _one(rid="G-1")
    passing = _one(rid="P-1", status="pass")
    previous = [_prev(kept), _prev(gone), _prev(passing, "pass")]
    copied = compare_runs([kept, fresh, passing], previous)
    mine = [kept, fresh, passing]
    marked, resolved = compare_runs(mine, previous, in_place=True)
    assert marked is mine
    assert (marked, resolved) == copied
    assert [f.lifecycle for f in mine] == ["persisting", "new", None]


@pytest.mark.parametrize(
    ("before", "now", "lifecycle", "resolved"),
    [
        ("fail", "waived", "persisting", 0),
        ("fail", "pass", None, 1),
        ("fail", "not_applicable", None, 1),
        ("pass", "fail", "new", 0),
        ("error", "unknown", "persisting", 0),
    ],
    ids=["fail-then-waived", "fixed", "became-not-applicable", "regressed", "still-unverified"],
)
def test_status_transitions(before: str, now: Status, lifecycle: str | None, resolved: int) -> None:
    f = _one(status=now)
    marked, gone = compare_runs([f], [_prev(f, before)])
    assert (marked[0].lifecycle, len(gone)) == (lifecycle, resolved)


def _models(*ids: str, rid: str = "BASE-MOD-003", status: Status = "fail") -> Finding:
    """One rule's finding on the settings naming these custom models (smallest path first)."""
    paths = tuple(f"$.customModels[?id=='{i}'].apiKey" for i in ids)
    return _one(rid=rid, status=status, paths=paths)


def test_a_rule_failing_in_both_runs_persists_whichever_entry_its_fingerprint_names() -> None:
    """The first failing entry removed, another still failing: the fingerprint names the next
    entry, but the rule failed in both runs: persisting, first seen when it first was, and
    nothing resolved. The fingerprint itself is this run's (what SARIF carries)."""
    first = _models("custom:a", "custom:b")
    later = _models("custom:b")
    assert first.fingerprint != later.fingerprint
    previous = [replace(_prev(first), first_seen_run="run-0")]
    marked, resolved = compare_runs([later], previous)
    assert [(f.fingerprint, f.lifecycle) for f in marked] == [(later.fingerprint, "persisting")]
    assert resolved == []
    (record,) = records_for_store(marked, previous, "run-2")
    assert (record.fingerprint, record.first_seen_run) == (later.fingerprint, "run-0")


def test_a_rule_that_stops_failing_is_resolved_and_a_new_rule_failing_is_new() -> None:
    first = _models("custom:a", "custom:b")
    fixed = _models(status="pass")
    other = _models("custom:b", rid="BASE-MOD-009")
    marked, resolved = compare_runs([fixed, other], [_prev(first)])
    assert {f.rule_id: f.lifecycle for f in marked} == {"BASE-MOD-003": None, "BASE-MOD-009": "new"}
    assert [p.fingerprint for p in resolved] == [first.fingerprint]
    (record,) = records_for_store(marked, [_prev(first)], "run-2")
    assert (record.rule_id, record.first_seen_run) == ("BASE-MOD-009", "run-2")


def test_a_rule_with_several_findings_on_one_subject_is_compared_by_fingerprint() -> None:
    """Two findings of one rule and subject in a run: which continues which is unknown, so a
    fingerprint gone is resolved and one that appears is new, as before."""
    a, b, c = _models("custom:a"), _models("custom:b"), _models("custom:c")
    marked, resolved = compare_runs([b, c], [_prev(a), _prev(b)])
    assert {f.fingerprint: f.lifecycle for f in marked} == {
        b.fingerprint: "persisting",
        c.fingerprint: "new",
    }
    assert [p.fingerprint for p in resolved] == [a.fingerprint]
    marked, resolved = compare_runs([c], [_prev(a), _prev(b)])
    assert [f.lifecycle for f in marked] == ["new"]
    assert {p.fingerprint for p in resolved} == {a.fingerprint, b.fingerprint}


def test_a_finding_on_another_subject_does_not_continue_the_old_one() -> None:
    first = _models("custom:a")
    elsewhere = _one(rid="BASE-MOD-003", subject=REPO)
    marked, resolved = compare_runs([elsewhere], [_prev(first)])
    assert [f.lifecycle for f in marked] == ["new"]
    assert [p.fingerprint for p in resolved] == [first.fingerprint]


def test_resolved_is_sorted_and_deduplicated() -> None:
    a, b = _one(rid="A-1", severity="low"), _one(rid="B-1", severity="critical")
    _, resolved = compare_runs([], [_prev(a), _prev(b), _prev(a)])
    assert [p.rule_id for p in resolved] == ["B-1", "A-1"]


@pytest.mark.parametrize(
    "given",
    [
        "0" * 32,
        "00ff" * 8,
        "f" * 32,
        "0123456789abcdef0123456789abcdef",
        "ABCDEF0123456789ABCDEF0123456789",  # upper case: not the form a fingerprint has
        "not-a-fingerprint",
        "0" * 31,
    ],
)
def test_a_findings_fingerprint_reads_back_exactly_as_given(given: str) -> None:
    """A finding holds its fingerprint compactly, but always gives back the very text."""
    finding = replace(_one(), fingerprint=given)
    assert finding.fingerprint == given
    assert finding == replace(_one(), fingerprint=given)


def test_a_fingerprint_given_as_text_in_either_field_is_the_same_finding() -> None:
    """`digest` is a field too (`dataclasses.replace` can set it): 32 lowercase hex digits
    given there are the same finding as through `fingerprint`, so they compare equal and
    the report sort (numbers when every fingerprint is one) is not thrown onto text order."""
    text = "00ff" * 8
    by_digest, by_fingerprint = replace(_one(), digest=text), replace(_one(), fingerprint=text)
    assert by_digest == by_fingerprint and by_digest.fingerprint == text
    assert isinstance(by_digest.digest, int)
    assert replace(_one(), digest="not-hex").fingerprint == "not-hex"


def test_sort_by_fingerprint_is_text_order_whatever_their_form() -> None:
    """Findings equal but for their fingerprints sort by the fingerprint text, also when some
    are not 32 lowercase hex digits."""
    rng = random.Random(7)
    texts = [f"{rng.getrandbits(128):032x}" for _ in range(30)]
    texts[:4] = ["0" * 32, "f" * 32, "0" * 31 + "1", "00" + "f" * 30]
    base = _one()
    computed = [replace(base, fingerprint=t) for t in texts]
    assert [f.fingerprint for f in sort_findings(computed)] == sorted(texts)
    mixed = [*computed, replace(base, fingerprint="Zz-odd"), replace(base, fingerprint="1")]
    rng.shuffle(mixed)
    assert [f.fingerprint for f in sort_findings(mixed)] == sorted([*texts, "Zz-odd", "1"])


def test_a_finding_keeps_lifecycle_location_and_waiver_apart_from_other_findings() -> None:
    """Findings share what is the same among them; marking one never changes another."""
    first, second = _one(), _one(rid="SET-002")
    marked = first.with_marks(lifecycle="new")
    assert (marked.lifecycle, first.lifecycle, second.lifecycle) == ("new", None, None)
    assert marked.status == first.status and marked.raw_status == first.raw_status
    assert marked.rule_id == "SET-001" and second.rule_id == "SET-002"
    unmarked = marked.with_marks(lifecycle=None)
    assert unmarked == first


_KEY_TEXT = st.lists(
    st.sampled_from(
        ["0", "1", "9", "00", "a", "A", "ß", "İ", ":", ".", "-", "@", "٣", "\x01", "\x03", "\uffff"]
    ),
    max_size=10,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(_KEY_TEXT, min_size=2, max_size=8))
def test_subjects_sort_in_natural_order_by_their_short_sort_text(keys: list[str]) -> None:
    """Findings are sorted by subject with one short text per subject (the tuples it replaces
    held ~700 bytes each for 10,000s of change steps): the order is `natural_key`'s, exactly."""
    for a in keys:
        for b in keys:
            by_key = (natural_key(a) > natural_key(b)) - (natural_key(a) < natural_key(b))
            by_text = (natural_text(a) > natural_text(b)) - (natural_text(a) < natural_text(b))
            assert by_text == by_key, (a, b)


_STEP_KEY = st.one_of(
    st.builds(
        "change:{}..{}".format,
        st.from_regex(r"[0-9]{1,22}", fullmatch=True),
        st.from_regex(r"[0-9]{1,22}", fullmatch=True),
    ),
    st.sampled_from(["change:", "change:1..", "change:1..2x", "Change:1..2", "change:٣..4"]),
    _KEY_TEXT,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEP_KEY, min_size=2, max_size=8))
def test_change_steps_sort_in_natural_order_among_other_subjects(keys: list[str]) -> None:
    """A change step's subject (`change:411..412`, 1,000s a run) has its sort text made
    without splitting it: the same text, so the same order as `natural_key`'s."""
    for a in keys:
        for b in keys:
            by_key = (natural_key(a) > natural_key(b)) - (natural_key(a) < natural_key(b))
            by_text = (natural_text(a) > natural_text(b)) - (natural_text(a) < natural_text(b))
            assert by_text == by_key, (a, b)
    assert natural_text("change:8..10") < natural_text("change:77..78")
    assert natural_text("change:9..10") == (
        "\x02change:\x00\x02" + "9".zfill(20) + "\x00\x02..\x00\x02" + "10".zfill(20)
        + "\x00\x02\x00\x03change:9..10"
    )  # fmt: skip


def test_findings_sort_the_same_with_a_nul_in_a_subject_key() -> None:
    # "x\x00\x01" is where the short sort text would go wrong (its NUL reads as the end of a
    # part, so it would come before "x"): a key with a NUL falls back to `natural_key`.
    keys = ["change:10..11", "change:9..10", "x\x00b", "x\x00a", "x", "x1", "x\x00\x01"]
    keys += ["change:9..10"]
    assert sorted(keys, key=natural_text) != sorted(keys, key=natural_key)
    results = [_result(subject=Subject("change", k, k)) for k in keys]
    shown = [f.subject.key for f in findings_from_results(results)]
    assert shown == sorted(keys, key=natural_key)


_SHAPES = [
    "0" * 32,  # leading zeros: held as the number 0, given back as 32 digits
    "00ff" * 8,
    "0123456789abcdef0123456789abcdef",
    "0123456789ABCDEF0123456789ABCDEF",  # the same digits in upper case: another fingerprint
    "0123456789abcdef0123456789abcdeF",
    "0123456789abcdef0123456789abcde",  # 31 digits (a legacy record)
    "0123456789abcdef0123456789abcdef0",  # 33 digits
    "legacy-fingerprint",
    "",
]


@pytest.mark.parametrize("now", _SHAPES)
@pytest.mark.parametrize("before", _SHAPES)
def test_lifecycle_marks_match_the_fingerprint_text_for_every_shape(before: str, now: str) -> None:
    """This run's findings are compared by the number they hold, the previous run's records by
    their text: a finding persists exactly when the texts are equal (upper-case hex, legacy and
    other text included), and a record is resolved exactly when no finding has its text."""
    f = replace(_one(), digest=now)
    assert f.fingerprint == now
    assert isinstance(f.digest, int) == bool(re.fullmatch("[0-9a-f]{32}", now))  # held packed
    # Another rule's record: a rule failing in both runs is one finding whatever its fingerprint
    # (test_a_rule_failing_in_both_runs_persists_whichever_entry_its_fingerprint_names).
    record = FindingRecord(before, "OTHER-1", f.subject.key, "fail", f.severity, "run-1")
    marked, resolved = compare_runs([f], [record])
    assert marked[0].lifecycle == ("persisting" if before == now else "new")
    assert [p.fingerprint for p in resolved] == ([] if before == now else [before])
