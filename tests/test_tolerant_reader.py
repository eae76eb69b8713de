"""The tolerant reader: odd values in fields the audit can do without keep the item, with a warning.

The decision per field (README "Limits and bad input") is the table below: a field the audit
cannot do without fails the sync; any other odd value is a `DataWarning` naming the JSON path,
the item and the page, and the value is read as absent. Property tests feed the decoder arbitrary
JSON items: it raises nothing but our own errors.
"""

from __future__ import annotations

import contextlib
import copy
import io
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.cli import Context, main
from auditor.errors import AuditorError, DataError
from auditor.fetch import DataQuality, encode_report, encode_revision
from auditor.fetch.schema import validate
from auditor.fetch.shape import deeper_than, duplicates, inexact_integers
from auditor.models import DataWarning
from auditor.redact import Redactor
from tests.conftest import FIXED_NOW
from tests.test_hostile_api import TOKEN, Hostile, respond, running

WHERE = "$.changes[0]"
REDACTOR = Redactor(b"tolerant-reader-test")


def change(**fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "revision": 7,
        "settings": {"maxAutonomyLevel": "low"},
        "user": {"id": "u1", "email": "a@example.com", "name": "A"},
        "updatedAt": "2026-10-01T10:00:00Z",
    }
    for key, value in fields.items():
        if value is DROP:
            item.pop(key)
        else:
            item[key] = value
    return item


def report(**fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "reportId": "r1",
        "createdAt": 1_790_000_000_000,
        "repoUrl": "https://git.example.com/a",
        "report": {"lint": {"numerator": 1, "denominator": 1, "rationale": "ok"}},
        "branch": "main",
        "hasLocalChanges": False,
        "modelUsed": {"id": "m", "reasoningEffort": "low"},
    }
    for key, value in fields.items():
        if value is DROP:
            item.pop(key)
        else:
            item[key] = value
    return item


DROP = object()


def decode_change(raw: dict[str, Any]) -> tuple[Any, list[DataWarning]]:
    found: list[DataWarning] = []
    validate({"changes": [raw], "pagination": {"hasMore": False}}, "api-history.schema.json", "p")
    rev, _ = encode_revision(raw, REDACTOR, "default", WHERE, found.append)
    return rev, found


def decode_report(raw: dict[str, Any]) -> tuple[Any, list[DataWarning]]:
    found: list[DataWarning] = []
    validate({"reports": [raw]}, "api-readiness.schema.json", "p")
    rep, _ = encode_report(raw, REDACTOR, "$.reports[0]", found.append)
    return rep, found


# fmt: off
TOLERATED_CHANGES = [
    # id, field edits, the warning's path, its problem
    ("user-null", {"user": None}, "$.changes[0].user", "expected object, got null; read as absent"),
    ("user-missing", {"user": DROP}, "$.changes[0]", "missing required key 'user'; read as absent"),
    ("user-id-number", {"user": {"id": 5, "email": "a@example.com"}},
     "$.changes[0].user.id", "expected string, got integer; read as absent"),
    ("email-number", {"user": {"id": "u1", "email": 5}},
     "$.changes[0].user.email", "expected string or null, got integer; read as absent"),
    ("user-extra", {"user": {"id": "u1", "role": "admin"}},
     "$.changes[0].user.role", "unknown field, kept as data"),
    ("extra-field", {"source": "api"}, "$.changes[0].source", "unknown field, kept as data"),
    ("unix-ms", {"updatedAt": 1_790_000_000_000}, "$.changes[0].updatedAt",
     "a Unix time in milliseconds, not ISO 8601; read as 2026-09-21T14:13:20+00:00"),
    ("rfc-2822", {"updatedAt": "Thu, 01 Oct 2026 10:00:00 GMT"}, "$.changes[0].updatedAt",
     "an RFC 2822 date, not ISO 8601; read as 2026-10-01T10:00:00+00:00"),
]
FATAL_CHANGES = [
    ("revision-missing", {"revision": DROP}, "missing required key 'revision'"),
    ("revision-string", {"revision": "7"}, "$.changes[0].revision: expected integer"),
    ("settings-null", {"settings": None}, "$.changes[0].settings: expected object, got null"),
    ("updated-missing", {"updatedAt": DROP}, "missing required key 'updatedAt'"),
    ("updated-garbage", {"updatedAt": "yesterday"}, "updatedAt: not an ISO-8601 date-time"),
]
TOLERATED_REPORTS = [
    ("apps-list", {"apps": []}, "$.reports[0].apps", "expected object, got array; read as absent"),
    ("branch-number", {"branch": 3}, "$.reports[0].branch",
     "expected string or null, got integer; read as absent"),
    ("local-changes-int", {"hasLocalChanges": 0}, "$.reports[0].hasLocalChanges",
     "expected boolean or null, got integer; read as absent"),
    ("model-string", {"modelUsed": "gpt"}, "$.reports[0].modelUsed",
     "expected object or null, got string; read as absent"),
    ("rationale-object", {"report": {"lint": {"numerator": 1, "denominator": 1, "rationale": {}}}},
     "$.reports[0].report.lint.rationale", "expected string or null, got object; read as absent"),
    ("extra-field", {"score": 9}, "$.reports[0].score", "unknown field, kept as data"),
    ("iso-time", {"createdAt": "2026-09-21T14:13:20Z"}, "$.reports[0].createdAt",
     "an ISO 8601 date-time, not Unix milliseconds; read as 2026-09-21T14:13:20+00:00"),
]
FATAL_REPORTS = [
    ("id-missing", {"reportId": DROP}, "missing required key 'reportId'"),
    ("repo-missing", {"repoUrl": DROP}, "missing required key 'repoUrl'"),
    ("scores-missing", {"report": DROP}, "missing required key 'report'"),
    ("denominator-null", {"report": {"lint": {"numerator": 1, "denominator": None}}},
     "$.reports[0].report.lint.denominator: expected number, got null"),
    ("created-garbage", {"createdAt": "yesterday"}, "createdAt: not a Unix time in milliseconds"),
]
# fmt: on


@pytest.mark.parametrize(
    ("edits", "path", "problem"), [pytest.param(*c[1:], id=c[0]) for c in TOLERATED_CHANGES]
)
def test_odd_optional_change_field_keeps_the_revision_with_a_warning(
    edits: dict[str, Any], path: str, problem: str
) -> None:
    raw = change(**edits)
    kept = copy.deepcopy(raw)
    rev, found = decode_change(raw)
    assert rev.revision == 7 and rev.settings == {"maxAutonomyLevel": "low"}
    assert [(w.path, w.problem, w.item) for w in found] == [(path, problem, "revision 7")]
    assert raw == kept  # the page's own item is never changed


def test_an_odd_author_is_read_as_absent() -> None:
    rev, _ = decode_change(change(user={"id": 5, "email": "a@example.com", "name": None}))
    assert (rev.user.id, rev.user.email, rev.user.name) == ("", "a@example.com", "")


@pytest.mark.parametrize(
    ("edits", "message"), [pytest.param(*c[1:], id=c[0]) for c in FATAL_CHANGES]
)
def test_fields_the_audit_needs_still_fail_the_sync(edits: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message.replace("[", r"\[").replace("$", r"\$")):
        decode_change(change(**edits))


@pytest.mark.parametrize(
    ("edits", "path", "problem"), [pytest.param(*c[1:], id=c[0]) for c in TOLERATED_REPORTS]
)
def test_odd_optional_report_field_keeps_the_report_and_rules_see_it_absent(
    edits: dict[str, Any], path: str, problem: str
) -> None:
    rep, found = decode_report(report(**edits))
    assert rep.report_id == "r1"
    assert [(w.path, w.problem, w.item) for w in found] == [(path, problem, "report r1")]
    field = path.removeprefix("$.reports[0].").split(".")
    holder: Any = rep.data
    for part in field[:-1]:
        holder = holder[part]
    if "read as absent" in problem:
        assert field[-1] not in holder
    else:
        assert field[-1] in holder


@pytest.mark.parametrize(
    ("edits", "message"), [pytest.param(*c[1:], id=c[0]) for c in FATAL_REPORTS]
)
def test_report_fields_the_audit_needs_still_fail(edits: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message.replace("[", r"\[").replace("$", r"\$")):
        decode_report(report(**edits))


@pytest.mark.parametrize(
    ("score", "warned"),
    [
        pytest.param({"numerator": 7, "denominator": 2}, True, id="above"),
        pytest.param({"numerator": 0, "denominator": 0}, True, id="zero-denominator"),
        pytest.param({"numerator": -5, "denominator": -1}, True, id="negative"),
        pytest.param({"numerator": 1e308, "denominator": 1e-308}, True, id="float-above"),
        pytest.param({"numerator": 2, "denominator": 2}, False, id="full"),
        pytest.param({"numerator": 0, "denominator": 3}, False, id="none"),
        pytest.param({"numerator": None, "denominator": 1}, False, id="not-evaluated"),
    ],
)
def test_a_score_that_cannot_be_one_is_a_warning_and_the_report_is_kept(
    score: dict[str, Any], warned: bool
) -> None:
    """7 of 2 or 0 of 0 synced silently; the rules then said 'passed is null'."""
    rep, found = decode_report(report(report={"lint": score}))
    assert rep.data["report"]["lint"] == score
    expected = [
        (
            "$.reports[0].report.lint",
            f"numerator {score['numerator']} and denominator {score['denominator']} are not a "
            "score (0 <= numerator <= denominator, denominator > 0); the criterion is not "
            "evaluable",
        )
    ]
    assert [(w.path, w.problem) for w in found] == (expected if warned else [])


def test_a_score_warning_names_an_odd_criterion_id_as_a_json_path() -> None:
    """'$.reports[0].report.no such.id' was not a path a rule or a reader could follow."""
    _, found = decode_report(report(report={"no such.id": {"numerator": 7, "denominator": 2}}))
    assert [w.path for w in found] == ["$.reports[0].report['no such.id']"]


def test_an_iso_report_time_is_stored_as_unix_milliseconds() -> None:
    rep, _ = decode_report(report(createdAt="2026-09-21T14:13:20Z"))
    assert rep.data["createdAt"] == 1_790_000_000_000
    assert rep.created_at == datetime(2026, 9, 21, 14, 13, 20, tzinfo=UTC)


def test_the_same_problem_in_many_items_is_one_line_with_a_count() -> None:
    quality = DataQuality()
    for n in range(3):
        quality.add(DataWarning(f"$.changes[{n}].user", "odd", f"revision {n}", "GET x page 1"))
    (warning,) = quality.warnings(REDACTOR)
    assert warning.count == 3
    assert (
        warning.describe()
        == "$.changes[0].user: odd (revision 0, GET x page 1; 2 more items like it)"
    )
    # a warning from no request (the kept pages dropped) names no empty place (T101 #4)
    dropped = DataWarning("$.changes", "kept pages dropped", "the kept history pages")
    assert dropped.describe() == "$.changes: kept pages dropped (the kept history pages)"


def test_duplicate_keys_are_found_and_named() -> None:
    body = b'{"changes":[{"revision":1,"settings":{"a":1,"b":2,"a":3}}],"x":{"k":1,"k":2}}'
    found = duplicates(body, orjson.loads(body))
    assert [(d.path, d.key) for d in found] == [(("changes", 0, "settings"), "a"), (("x",), "k")]
    assert (
        duplicates(b'{"a":"x:y","b":"\\u003a"}', orjson.loads(b'{"a":"x:y","b":"\\u003a"}')) == ()
    )


@pytest.mark.parametrize(
    ("body", "deep"),
    [
        (b'{"a":' * 64 + b"1" + b"}" * 64, False),
        (b'{"a":' * 65 + b"1" + b"}" * 65, True),
        (b'{"a":"' + b"[" * 100 + b'"}', False),  # brackets in a string are text
        (b'["\\\\", "\\"[[[", ' + b"[" * 63 + b"]" * 63 + b"]", False),
        (b'["\\\\", "\\"[[[", ' + b"[" * 64 + b"]" * 64 + b"]", True),
    ],
)
def test_depth_is_counted_outside_strings(body: bytes, deep: bool) -> None:
    orjson.loads(body)
    assert deeper_than(body) is deep


def cli(argv: list[str], cwd: Path, base_url: str, **env: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env |= {"AUDITOR_TOKEN": TOKEN, "AUDITOR_BASE_URL": base_url}
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    with running() as server:
        yield server


def test_sync_keeps_odd_items_and_names_every_warning(tmp_path: Path, hostile: Hostile) -> None:
    changes = [
        change(revision=3, user=None),
        change(revision=2, updatedAt=1_790_000_000_000, extra=1),
        b'{"revision":1,"settings":{"a":1,"a":2},"user":{"id":"u"},"updatedAt":"2026-10-01"}',
    ]
    items = b",".join(c if isinstance(c, bytes) else orjson.dumps(c) for c in changes)
    body = b'{"changes":[' + items + b'],"pagination":{"hasMore":false}}'
    hostile.behaviour = lambda sock, _server: sock.sendall(respond(body))
    code, out, err = cli(["sync", "--no-usage", "--state", "s.db"], tmp_path, hostile.url)
    assert (code, err) == (0, "")
    assert "3 revisions (3 new)" in out and "4 data-quality warnings" in out
    page = f"GET {hostile.url}/api/v0/organization/enterprise-controls/history page 1"
    for line in [
        f"$.changes[0].user: expected object, got null; read as absent (revision 3, {page})",
        f"$.changes[1].extra: unknown field, kept as data (revision 2, {page})",
        "$.changes[1].updatedAt: a Unix time in milliseconds, not ISO 8601; read as",
        f"$.changes[2].settings: key 'a' sent twice; the last value is used (revision 1, {page})",
    ]:
        assert line in out


def test_integers_beyond_64_bits_are_found_with_their_path() -> None:
    body = (
        b'{"a":18446744073709551615,"b":[1,18446744073709551616],"c":{"d":-18446744073709551617},'
        b'"e":"123456789012345678901234567890","f":1e30}'
    )
    found = inexact_integers(body, orjson.loads(body))
    assert [(d.path, d.problem) for d in found] == [
        (("b", 1), "an integer of 20 digits does not fit in 64 bits; read as the nearest "
         "number, 1.8446744073709552e+19 (not exact)"),
        (("c", "d"), "an integer of 20 digits does not fit in 64 bits; read as the nearest "
         "number, -1.8446744073709552e+19 (not exact)"),
    ]  # fmt: skip
    assert inexact_integers(b'{"a":"' + b"9" * 40 + b'"}', {"a": "9" * 40}) == ()


def test_a_19_digit_integer_below_the_64_bit_minimum_is_found() -> None:
    """-2^63 - 1 (19 digits) was read as -9.223372036854776e+18 without a warning."""
    body = b'{"a":-9223372036854775808,"b":-9223372036854775809,"c":"x-9999999999999999999"}'
    found = inexact_integers(body, orjson.loads(body))
    assert [(d.path, d.problem) for d in found] == [
        (("b",), "an integer of 19 digits does not fit in 64 bits; read as the nearest "
         "number, -9.223372036854776e+18 (not exact)"),
    ]  # fmt: skip


def test_sync_warns_about_an_integer_it_cannot_keep_exactly(
    tmp_path: Path, hostile: Hostile
) -> None:
    """A 30-digit settings value was stored as 1.2345678901234568e+29 without a word."""
    big = b"123456789012345678901234567890"
    body = (
        b'{"changes":[{"revision":1,"settings":{"quota":' + big + b'},"user":{"id":"u"},'
        b'"updatedAt":"2026-10-01T00:00:00Z"}],"pagination":{"hasMore":false}}'
    )
    hostile.behaviour = lambda sock, _server: sock.sendall(respond(body))
    code, out, err = cli(["sync", "--no-usage", "--state", "s.db"], tmp_path, hostile.url)
    assert (code, err) == (0, "")
    page = f"GET {hostile.url}/api/v0/organization/enterprise-controls/history page 1"
    assert (
        "$.changes[0].settings.quota: an integer of 30 digits does not fit in 64 bits; read as "
        f"the nearest number, 1.2345678901234568e+29 (not exact) (revision 1, {page})"
    ) in out


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
CHANGE_KEYS = st.sampled_from(["revision", "settings", "user", "updatedAt", "other"])
REPORT_KEYS = st.sampled_from(
    ["reportId", "createdAt", "repoUrl", "report", "apps", "branch", "modelUsed", "x"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.dictionaries(CHANGE_KEYS, JSON_VALUES, max_size=4), drop=st.sets(CHANGE_KEYS))
def test_the_change_decoder_raises_only_our_errors(edits: dict[str, Any], drop: set[str]) -> None:
    raw = {k: v for k, v in change(**edits).items() if k not in drop}
    with contextlib.suppress(AuditorError):  # anything else fails the test
        decode_change(raw)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.dictionaries(REPORT_KEYS, JSON_VALUES, max_size=4), drop=st.sets(REPORT_KEYS))
def test_the_report_decoder_raises_only_our_errors(edits: dict[str, Any], drop: set[str]) -> None:
    raw = {k: v for k, v in report(**edits).items() if k not in drop}
    with contextlib.suppress(AuditorError):  # anything else fails the test
        decode_report(raw)


@settings(max_examples=150, deadline=None)
@given(value=JSON_VALUES)
def test_shape_checks_agree_with_the_parsed_value(value: Any) -> None:
    body = orjson.dumps(value)
    assert duplicates(body, orjson.loads(body)) == ()
    assert deeper_than(body, 3) is (_depth(value) > 3)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def test_run_shows_the_warnings_in_every_report_and_the_summary(
    tmp_path: Path, hostile: Hostile
) -> None:
    body = page_with(change(revision=2, user=None), change(revision=1, source="api"))
    reports = orjson.dumps({"reports": [report()]})
    after = orjson.dumps({"reports": []})  # the page after the last (`startAfter`): empty

    def serve(sock: Any, server: Hostile) -> None:
        path = server.last_path
        readiness = after if "startAfter=" in path else reports
        sock.sendall(respond(readiness if "readiness" in path else body))

    hostile.behaviour = serve
    policy = str(Path(__file__).parent / "policies" / "valid" / "sample.yaml")
    argv = [
        "run",
        "--no-usage",
        "--state",
        "s.db",
        "--out",
        "out",
        "--soft-fail",
        "--policy",
        policy,
    ]
    code, out, err = cli(argv, tmp_path, hostile.url, AUDITOR_APP_URL=hostile.url)
    assert code == 0, err
    # the third: none of the shipped model's criteria is in the report (it holds `lint` only)
    assert "DATA QUALITY: 3 warning(s) in the API data" in out
    null_user = "$.changes[0].user: expected object, got null; read as absent (revision 2"
    folder = tmp_path / "out"
    escaped = null_user.replace("[", "\\[").replace("]", "\\]").replace("(", "\\(")
    assert escaped in (folder / "report.md").read_text()
    assert null_user in (folder / "report.html").read_text()
    document = orjson.loads((folder / "findings.json").read_bytes())
    schema = Path(__file__).parents[1] / "auditor" / "schemas" / "findings.schema.json"
    jsonschema.validate(document, orjson.loads(schema.read_bytes()))
    assert [(w["path"], w["item"], w["count"]) for w in document["data_quality"]] == [
        ("$.changes[0].user", "revision 2", 1),
        ("$.changes[1].source", "revision 1", 1),
        ("$.criteria", "the readiness model", 1),
    ]


def page_with(*changes: dict[str, Any]) -> bytes:
    return orjson.dumps({"changes": list(changes), "pagination": {"hasMore": False}})


def test_a_readiness_service_that_ignores_start_after_is_warned_of(
    tmp_path: Path, hostile: Hostile
) -> None:
    """It sends its one page again for the request after it: the listing ends there (its
    report once), with a data-quality warning that a service also capping its pages would
    have more that cannot be read (reviewer R8: it was silent)."""
    body = page_with(change(revision=1))
    reports = orjson.dumps({"reports": [report()]})

    def serve(sock: Any, server: Hostile) -> None:
        sock.sendall(respond(reports if "readiness" in server.last_path else body))

    hostile.behaviour = serve
    argv = ["sync", "--no-usage", "--state", "s.db"]
    for new in (1, 0):  # and again on the next sync (reviewer R10: it was said once only)
        code, out, err = cli(argv, tmp_path, hostile.url, AUDITOR_APP_URL=hostile.url)
        assert code == 0, err
        assert f"1 readiness reports ({new} new" in out, out
        assert (
            "$.reports: the service sent its last page again for `startAfter` (it ignores it): "
            "the listing ends there; if it serves fewer reports a page than asked "
            "(`page_size`), the rest cannot be read (the listing, GET "
        ) in out + err, out + err


def test_a_review_says_what_its_own_sync_found_odd(tmp_path: Path, hostile: Hostile) -> None:
    """`auditor review` (online) syncs first; the warnings of that sync were shown nowhere,
    and once the odd revision is stored no later sync meets it again to say so (tester T33
    F1). They are in the review's summary and its reports, as a run's are."""
    body = page_with(change(revision=2, user=None), change(revision=1, source="api"))

    def serve(sock: Any, server: Hostile) -> None:
        sock.sendall(respond(body))

    hostile.behaviour = serve
    proposed = tmp_path / "proposed.json"
    proposed.write_text('{"maxAutonomyLevel": "high"}\n')
    argv = [
        "review",
        str(proposed),
        "--state",
        "s.db",
        "--out",
        "out",
        "-o",
        "md,json",
        "--soft-fail",
    ]
    code, out, err = cli(argv, tmp_path, hostile.url)
    assert code == 0, err
    assert "DATA QUALITY: 2 warning(s) in the API data" in out, out
    document = orjson.loads((tmp_path / "out" / "findings.json").read_bytes())
    assert [(w["path"], w["item"]) for w in document["data_quality"]] == [
        ("$.changes[0].user", "revision 2"),
        ("$.changes[1].source", "revision 1"),
    ]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "> - $.changes\\[0\\].user: expected object, got null; read as absent" in report
