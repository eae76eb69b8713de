"""findings.oscal.json validated as the OSCAL version it declares (1.1.3), for the fixture,
hostile data and a real run of the demo: against compliance-trestle 3.12.4's OSCAL 1.1.3 models
(the `oscal-models` extra; trestle's 4.x and 5.x implement OSCAL 1.2), and also against NIST's
1.2.3 assessment-results JSON Schema (tests/schemas/, see its README), which 1.1.3 documents
meet as 1.2 is a backward-compatible minor version."""

from __future__ import annotations

import importlib.util
import io
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import orjson
import pytest
import regex
from conftest import printed_by_a_fresh_interpreter
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import validators
from report_fixture import build_report_data, declared_urls
from test_report_escaping import HOSTILE

from auditor.cli import Context, main
from auditor.report.html import render_html
from auditor.report.identity import FALLBACK_NS
from auditor.report.model import ReportData, control_rows
from auditor.report.oscal import (
    _ROOT,
    _ascii,
    _dump,
    _namer,
    _uuid,
    control_id,
    oscal_chunks,
    oscal_document,
    render_oscal,
)
from tests.conftest import FIXED_NOW, missing_tool

SCHEMA = json.loads(
    (Path(__file__).parent / "schemas" / "oscal_assessment-results_schema.json").read_text()
)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """JSON Schema's `pattern` with `regex`: NIST's token pattern uses `\\p{L}`, which the
    standard library's `re` rejects."""
    if validator.is_type(instance, "string") and not regex.search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = validators.extend(jsonschema.Draft7Validator, {"pattern": _pattern})
#: The schema's formats (`uri`, `uri-reference`, `date-time`, `email`) checked too: jsonschema
#: checks a format only when its library is installed (`rfc3986-validator`,
#: `rfc3339-validator`, test extras), and skips it silently otherwise.
FORMATS = jsonschema.Draft7Validator.FORMAT_CHECKER


def problems(doc: Any) -> list[str]:
    """What NIST's 1.2.3 JSON Schema rejects (formats too), then what the OSCAL 1.1.3 models
    reject."""
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
        for e in Validator(SCHEMA, format_checker=FORMATS).iter_errors(doc)
    ] + problems_1_1(doc)


def test_every_format_the_schema_uses_is_checked() -> None:
    used = set(regex.findall(r'"format"\s*:\s*"([^"]+)"', json.dumps(SCHEMA)))
    assert used == {"uri", "uri-reference", "date-time", "email"}
    assert used <= set(FORMATS.checkers), "install the test extras: pip install -e '.[test]'"
    assert not FORMATS.conforms("policies/my pack.yaml", "uri-reference")


def test_a_policy_file_named_with_spaces_and_markup_is_a_uri_reference() -> None:
    data = build_report_data()
    odd = replace(data.policy_files[0], path="policies/my pack <b>&</b> #1?.yaml")
    doc = json.loads(render_oscal(replace(data, policy_files=(odd, *data.policy_files[1:]))))
    hrefs = [
        link["href"]
        for r in doc["assessment-results"]["back-matter"]["resources"]
        for link in r.get("rlinks", [])
    ]
    assert "policies/my%20pack%20%3Cb%3E&%3C/b%3E%20%231%3F.yaml" in hrefs
    assert problems(doc) == []


def test_a_shipped_pack_links_to_its_path_not_to_its_display_name() -> None:
    """Reports name a shipped pack `(shipped) policies/baseline.yaml`; its back-matter link is
    the pack's path, `policies/baseline.yaml`, as SARIF's location of it, never the display
    name made into a URI (`%28shipped%29%20policies/…`)."""
    data = build_report_data()
    shipped = replace(data.policy_files[0], path="(shipped) policies/baseline.yaml")
    doc = json.loads(render_oscal(replace(data, policy_files=(shipped, *data.policy_files[1:]))))
    resources = doc["assessment-results"]["back-matter"]["resources"]
    pack = next(r for r in resources if "baseline.yaml" in r["title"])
    assert pack["title"] == "Policy file (shipped) policies/baseline.yaml"
    assert [link["href"] for link in pack["rlinks"]] == ["policies/baseline.yaml"]
    assert problems(doc) == []


def _trestle_model() -> Any:
    """compliance-trestle's OSCAL 1.1.3 assessment-results model (`pip install -e '.[test]'`)."""
    if importlib.util.find_spec("trestle") is None:
        message = "compliance-trestle is not installed (pip install -e '.[oscal-models]')"
        missing_tool(message, "OSCAL 1.1 MODELS", "OSCAL 1.1 VALIDATION")
    import trestle.oscal
    from trestle.oscal.assessment_results import Model

    assert trestle.oscal.OSCAL_VERSION == "1.1.3"  # the version the document declares
    return Model


def problems_1_1(doc: Any) -> list[str]:
    """What compliance-trestle's OSCAL 1.1.3 models reject (extra keys, types, patterns), and
    an `oscal-version` the models do not implement (trestle leaves that check off)."""
    from pydantic.v1 import ValidationError
    from trestle.oscal import OSCAL_VERSION_REGEX

    model = _trestle_model()
    version = doc.get("assessment-results", {}).get("metadata", {}).get("oscal-version", "")
    found = [] if regex.match(OSCAL_VERSION_REGEX, version) else [f"oscal-version: {version!r}"]
    try:
        model.parse_obj(doc)
    except ValidationError as e:
        found += [f"{'/'.join(map(str, err['loc']))}: {err['msg'][:200]}" for err in e.errors()]
    return found


@pytest.mark.parametrize("review", [False, True], ids=["run", "review"])
@pytest.mark.parametrize("taint", ["", HOSTILE[:300]], ids=["plain", "hostile"])
def test_fixture_validates(review: bool, taint: str) -> None:
    doc = json.loads(render_oscal(build_report_data(taint, review=review)))
    assert problems(doc) == []


def test_the_validator_catches_what_the_schema_forbids() -> None:
    doc = json.loads(render_oscal(build_report_data()))
    result = doc["assessment-results"]["results"][0]
    del result["reviewed-controls"]
    result["observations"][0]["collected"] = "yesterday"
    result["findings"][0]["target"]["target-id"] = "SOC2:CC6.1"  # a colon is not a token
    found = problems(doc)
    assert any("reviewed-controls" in p for p in found)
    assert any("'yesterday' does not match" in p for p in found)
    assert any("SOC2:CC6.1" in p for p in found)


def test_the_document_is_read_as_the_oscal_version_it_declares() -> None:
    doc = json.loads(render_oscal(build_report_data()))
    assert doc["assessment-results"]["metadata"]["oscal-version"] == "1.1.3"
    assert problems_1_1(doc) == []
    doc["assessment-results"]["metadata"]["oscal-version"] = "1.2.3"
    assert any("oscal-version" in p for p in problems_1_1(doc))
    doc["assessment-results"]["metadata"]["oscal-version"] = "1.1.3"
    doc["assessment-results"]["results"][0]["observations"][0]["props"][0]["ns"] = "not a uri"
    doc["assessment-results"]["results"][0]["observations"][0]["colour"] = "blue"
    found = problems_1_1(doc)
    assert any(p.endswith("ns: invalid or missing URL scheme") for p in found)
    assert any("colour" in p for p in found)


def test_document_maps_results_controls_and_evidence() -> None:
    data = build_report_data()
    ar = json.loads(render_oscal(data))["assessment-results"]
    (result,) = ar["results"]
    assert ar["metadata"]["oscal-version"].startswith("1.1.")
    assert len(result["observations"]) == len(data.findings)  # every result, passes included
    observed = {o["uuid"]: o for o in result["observations"]}
    statuses = {p["value"] for o in observed.values() for p in o["props"] if p["name"] == "status"}
    assert {"pass", "fail"} <= statuses
    assert all(o["subjects"][0]["type"] == "resource" for o in observed.values())
    with_evidence = [o for o in observed.values() if o.get("relevant-evidence")]
    assert with_evidence and "$." in with_evidence[0]["relevant-evidence"][0]["description"]
    states = {f["target"]["target-id"]: f["target"]["status"]["state"] for f in result["findings"]}
    assert states["cc6.1"] == "not-satisfied" and states["cc7.1"] == "satisfied"
    for f in result["findings"]:
        assert all(r["observation-uuid"] in observed for r in f["related-observations"])
    hashes = [
        h["value"]
        for r in ar["back-matter"]["resources"]
        for link in r.get("rlinks", [])
        for h in link["hashes"]
    ]
    assert hashes == [p.sha256 for p in data.policy_files]
    assert ar["import-ap"]["href"].lstrip("#") in {
        r["uuid"] for r in ar["back-matter"]["resources"]
    }


def test_a_waived_observation_says_who_accepted_what_and_why() -> None:
    """A waived result's observation said only `waived-until`: not what the waiver covers (a
    failure, or an evaluation error), who owns it, why or under which ticket, which report.html,
    report.md, junit.xml and SARIF's suppression all say. An auditor reading OSCAL alone could
    not tell an accepted exception from an unexplained one."""
    data = build_report_data()
    (waived,) = [f for f in data.findings if f.status == "waived"]
    assert waived.waiver is not None
    (result,) = json.loads(render_oscal(data))["assessment-results"]["results"]
    (obs,) = [
        o
        for o in result["observations"]
        if any(p["name"] == "fingerprint" and p["value"] == waived.fingerprint for p in o["props"])
    ]
    props = {p["name"]: p["value"] for p in obs["props"]}
    assert props["status"] == "waived"
    assert props["raw-status"] == waived.raw_status == "fail"
    assert props["waiver-owner"] == waived.waiver.owner
    assert props["waiver-reason"] == waived.waiver.reason
    assert props["waiver-ticket"] == waived.waiver.ticket
    assert props["waived-until"] == waived.waiver.expires.isoformat()
    others = [o for o in result["observations"] if o is not obs]
    assert not any(p["name"].startswith("waive") for o in others for p in o["props"])
    no_ticket = replace(waived, waiver=replace(waived.waiver, ticket=""))
    data = replace(data, findings=tuple(no_ticket if f is waived else f for f in data.findings))
    text = render_oscal(data)
    assert '"waiver-owner"' in text and '"waiver-ticket"' not in text


def test_a_control_met_only_through_a_waiver_is_not_reported_satisfied() -> None:
    """SOC 2 CC6.6's one result is a failure a waiver accepts: report.html called the control
    `met` and OSCAL `satisfied` (reason `pass`), so an auditor reading either took an accepted
    exception for a passing control. It is `waived`: `not-satisfied`, reason `other`, and the
    finding says it is met only through waivers; report.html's state says `waived`."""
    data = build_report_data()
    rows = {r.control: r for r in control_rows(data.findings)}
    assert (rows["SOC2:CC6.6"].waived, rows["SOC2:CC6.6"].passing) == (1, 0)
    assert rows["SOC2:CC6.6"].state == "waived"
    (result,) = json.loads(render_oscal(data))["assessment-results"]["results"]
    found = {f["target"]["target-id"]: f for f in result["findings"]}
    waived = found[control_id("SOC2:CC6.6")]
    assert waived["target"]["status"] == {"state": "not-satisfied", "reason": "other"}
    assert waived["title"].endswith(": waived")
    assert "Met only through waivers" in waived["description"]
    assert found["cc7.1"]["target"]["status"] == {"state": "satisfied", "reason": "pass"}
    assert "Met only through waivers" not in found["cc7.1"]["description"]
    html = render_html(data)
    assert '<span class="st waived">waived</span>' in html
    # a waived error (or unknown) was not evaluated: the control is unverified, not waived
    (waived_fail,) = [f for f in data.findings if f.status == "waived"]
    for raw in ("error", "unknown"):
        changed = replace(waived_fail, raw_status=raw)
        findings = tuple(changed if f is waived_fail else f for f in data.findings)
        row = {r.control: r for r in control_rows(findings)}["SOC2:CC6.6"]
        assert (row.unverified, row.waived, row.state) == (1, 0, "unverified")
        (result,) = json.loads(render_oscal(replace(data, findings=findings)))[
            "assessment-results"
        ]["results"]
        (cc66,) = [f for f in result["findings"] if f["target"]["target-id"] == "cc6.6"]
        assert cc66["target"]["status"] == {"state": "not-satisfied", "reason": "other"}
        assert "Met only through waivers" not in cc66["description"]


def test_every_uuid_is_unique_and_every_subject_reference_resolves() -> None:
    """An observation's subject names a resource of the document (OSCAL: a `subject-uuid`
    references a component, inventory item, party, user or resource by its uuid)."""
    data = build_report_data()
    ar = json.loads(render_oscal(data))["assessment-results"]
    uuids: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            uuids.extend(v for k, v in node.items() if k == "uuid")
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(ar)
    assert len(uuids) == len(set(uuids))
    resources = {r["uuid"]: r for r in ar["back-matter"]["resources"]}
    (result,) = ar["results"]
    for o in result["observations"]:
        (subject,) = o["subjects"]
        resource = resources[subject["subject-uuid"]]
        assert resource["title"] == subject["title"]
    keys = {f.subject.key for f in data.findings}
    assert len({o["subjects"][0]["subject-uuid"] for o in result["observations"]}) == len(keys)


def test_same_data_gives_the_same_bytes() -> None:
    assert render_oscal(build_report_data()) == render_oscal(build_report_data())


@pytest.mark.e2e
def test_demo_run_oscal_validates(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(tmp_path))
    code = main(
        ["demo", "--out", "r", "--revisions", "40", "--repos", "5", "-o", "json,oscal"], ctx
    )
    assert code in (0, 1), err.getvalue()
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "findings.json",
        "findings.oscal.json",
    ]
    doc = json.loads((tmp_path / "r" / "findings.oscal.json").read_text())
    assert problems(doc) == []
    findings = json.loads((tmp_path / "r" / "findings.json").read_text())["findings"]
    assert len(doc["assessment-results"]["results"][0]["observations"]) == len(findings)


def _namespaces(doc: Any) -> set[str]:
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "ns" in value:
                found.add(value["ns"])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(doc)
    return found


def test_properties_name_no_made_up_organisation() -> None:
    """Without a home page in the package metadata, auditor's properties use a namespace on a
    reserved `.invalid` host (it can never name someone's organisation) that still validates
    (whatever pyproject.toml declares today: here only an issue tracker, which is no home)."""
    with declared_urls("Issues, https://tracker.example.net/auditor"):
        text = render_oscal(build_report_data())
    assert "your-org" not in text
    doc = json.loads(text)
    assert _namespaces(doc) == {FALLBACK_NS} and FALLBACK_NS.startswith("https://auditor.invalid/")
    assert problems(doc) == []


def test_properties_namespace_follows_the_declared_home_page() -> None:
    with declared_urls("Repository, https://example.org/auditor.git/"):
        doc = json.loads(render_oscal(build_report_data()))
    assert _namespaces(doc) == {"https://example.org/auditor.git/ns/oscal"}
    assert problems(doc) == []


def test_an_observation_names_its_subject_once_in_the_back_matter() -> None:
    """The subject's key and kind are its resource's props, not repeated in each observation
    (at --all-revisions, 100,000s of observations of a few thousand subjects)."""
    data = build_report_data()
    ar = json.loads(render_oscal(data))["assessment-results"]
    resources = {r["uuid"]: r for r in ar["back-matter"]["resources"]}
    for f, o in zip(data.findings, ar["results"][0]["observations"], strict=True):
        (subject,) = o["subjects"]
        assert set(subject) == {"subject-uuid", "type", "title"}
        props = {p["name"]: p["value"] for p in resources[subject["subject-uuid"]]["props"]}
        assert props == {"subject-key": f.subject.key, "kind": f.subject.kind}
        assert subject["title"] == resources[subject["subject-uuid"]]["title"]


def test_a_lone_surrogate_and_its_escape_written_as_text_are_different_subjects() -> None:
    """Two subjects whose keys differ only in a lone surrogate (data that was not valid text)
    against the same key with that surrogate's escape spelled out get two resources with two
    uuids: one uuid for both would leave observations of one subject naming the other."""
    data = build_report_data()
    first, second, *rest = data.findings
    keys = ["repo-\ud800", "repo-\\ud800"]
    data = replace(
        data,
        findings=(
            replace(first, subject=replace(first.subject, key=keys[0])),
            replace(second, subject=replace(second.subject, key=keys[1])),
            *rest,
        ),
    )
    doc = json.loads(render_oscal(data))
    ar = doc["assessment-results"]
    resources = [r["uuid"] for r in ar["back-matter"]["resources"]]
    assert len(resources) == len(set(resources))
    first_obs, second_obs = ar["results"][0]["observations"][:2]
    named = [o["subjects"][0]["subject-uuid"] for o in (first_obs, second_obs)]
    assert named[0] != named[1] and set(named) <= set(resources)
    assert problems(doc) == []


def test_uuids_of_text_are_name_based_uuid5() -> None:
    """Text that is valid UTF-8, ASCII or not, keeps the version-5 UUID it always had."""
    data = build_report_data()
    for key in ("settings", "https://git.example/é/ü"):
        expected = uuid.uuid5(_ROOT, f"{data.run_id}\x1fsubject\x1f{key}")
        assert _uuid(data, "subject", key) == str(expected)


@settings(max_examples=300, deadline=None)
@given(
    run_id=st.text(max_size=20),
    kind=st.sampled_from(["subject", "observation", "x\x1fy"]),
    part=st.text(
        alphabet=st.one_of(st.characters(), st.sampled_from("\ud800\udfff\x1f")), max_size=40
    ),
)
def test_the_streamed_writer_s_uuids_are_those_of_uuid5(run_id: str, kind: str, part: str) -> None:
    """The writer makes each subject's and observation's UUID again where it is written
    (`_namer`: the hash of the run id and kind taken once, the text formatted by hand), instead
    of holding a map of them all: the UUIDs `_uuid` (`uuid.UUID`) gives, lone surrogates too."""
    data = replace(build_report_data(), run_id=run_id)
    assert _namer(data, kind)(part) == _uuid(data, kind, part)


def _mixed(seed: int, count: int) -> ReportData:
    """The fixture's results copied `count` times over, in a shuffled order, over fewer
    subjects (some with a lone surrogate in their label) and rules than results: subjects and
    rules met again and again, each control linking results from all over the report."""
    data = build_report_data()
    rnd = random.Random(seed)
    rules = sorted({f.rule_id for f in data.findings})
    findings = []
    for i in range(count):
        f = rnd.choice(data.findings)
        n = rnd.randrange(count // 4 + 1)
        label = f"repo {n}" + ("\ud800" if seed % 2 and n % 5 == 0 else "")
        subject = replace(f.subject, key=f"https://git.example/acme/r{n}", label=label)
        findings.append(
            replace(f, subject=subject, rule_id=rnd.choice(rules), fingerprint=f"{seed}-{i}")
        )
    return replace(data, findings=tuple(findings))


@pytest.mark.parametrize("seed", range(6))
def test_the_streamed_document_is_the_one_held_whole_and_names_what_it_links(seed: int) -> None:
    """findings.oscal.json is written a batch at a time, observations, each control's links to
    them and the back matter's subjects (their UUIDs made where written, nothing held for the
    whole report): the same bytes as one dump of the document held whole, with subjects and
    rules met many times over in any order, and every UUID names what it did."""
    data = _mixed(seed, 700 + 300 * seed)
    text = b"".join(oscal_chunks(data))
    try:
        whole = _dump(oscal_document(data)) + b"\n"
    except orjson.JSONEncodeError:
        whole = _ascii(oscal_document(data)) + b"\n"
        text = b"".join(oscal_chunks(data, ascii_only=True))
    assert text == whole
    assert render_oscal(data).encode("utf-8") == text
    ar = json.loads(text)["assessment-results"]
    (result,) = ar["results"]
    firsts = list(dict.fromkeys(f.subject.key for f in data.findings))
    subjects = ar["back-matter"]["resources"][1 + len(data.policy_files) :]
    assert [r["uuid"] for r in subjects] == [_uuid(data, "subject", k) for k in firsts]
    assert [p["value"] for r in subjects for p in r["props"] if p["name"] == "subject-key"] == [
        k for k in firsts
    ]
    for f, o in zip(data.findings, result["observations"], strict=True):
        assert o["uuid"] == _uuid(data, "observation", f.fingerprint)
        assert o["subjects"][0]["subject-uuid"] == _uuid(data, "subject", f.subject.key)
    for row, finding in zip(control_rows(data.findings), result["findings"], strict=True):
        linked = [
            _uuid(data, "observation", f.fingerprint)
            for rule in row.rules
            for f in data.findings
            if f.rule_id == rule
        ]
        assert [o["observation-uuid"] for o in finding["related-observations"]] == linked


def test_writing_oscal_holds_no_more_as_the_subjects_grow() -> None:
    """The back matter (a resource per subject: 34,000 at 100,000 revisions) was one piece,
    and each subject's and observation's UUID was held for the whole report: writing the
    OSCAL took `export` at 100,000 revisions from 131 to 208 MB. Now the memory the writer
    holds beyond the report's data hardly grows with its results and subjects.

    Measured in a fresh interpreter: tracemalloc counts every thread of the process, and in
    a test worker a server thread another test left behind, or the bounded caches of
    fingerprints and attribution texts filled by earlier tests, moved the figure by more
    than the margin (CI saw 4.1 MB once)."""
    code = (
        "import json, sys, tracemalloc\n"
        "from report_fixture import build_large\n"
        "from auditor.report.oscal import oscal_chunks\n"
        "def peak(count):\n"
        "    data = build_large(count)  # a subject per result\n"
        "    tracemalloc.start()\n"
        "    try:\n"
        "        largest = max(len(chunk) for chunk in oscal_chunks(data))\n"
        "        return tracemalloc.get_traced_memory()[1], largest\n"
        "    finally:\n"
        "        tracemalloc.stop()\n"
        "print(json.dumps([peak(1000), peak(6000)]))\n"
    )
    (small, _), (large, largest) = json.loads(printed_by_a_fresh_interpreter(code))
    assert largest < 600_000  # the back matter was one 2.9 MB piece
    assert large - small < 4_000_000, (small, large)  # 12 MB more before
