"""A fixed, realistic ReportData for the report tests, the golden files and the benchmark.

`taint` is appended to every string that comes from data (ids, titles, messages, paths, values,
emails, URLs …) so the escaping tests can put hostile text in every field at once.
"""

from __future__ import annotations

import email.message
import importlib.metadata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from auditor.evaluate.model import RuleResult
from auditor.findings import Finding, compare_runs, findings_from_results
from auditor.models import (
    Attribution,
    Change,
    Evidence,
    FindingRecord,
    Severity,
    SourceLocation,
    Status,
    Subject,
    Target,
    Waiver,
)
from auditor.policy.model import PolicyFile, Rule
from auditor.report import identity
from auditor.report.model import (
    AuditScope,
    InputDigest,
    ReadinessRow,
    ReportData,
    ReviewInfo,
    WaiverSummary,
)

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
POLICY = "policies/baseline.yaml"


def _at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


class _Builder:
    """Builds the fixture with `taint` appended to every data string."""

    def __init__(self, taint: str) -> None:
        self.t = taint

    def s(self, text: str) -> str:
        return text + self.t

    def rule(
        self,
        rid: str,
        title: str,
        sev: Severity,
        target: Target,
        controls: tuple[str, ...],
        line: int,
    ) -> Rule:
        return Rule(
            id=self.s(rid),
            title=self.s(title),
            severity=sev,
            target=target,
            condition=None,
            description=self.s(f"Why {title.lower()} matters for the organization."),
            remediation=self.s(f"Change the enterprise settings so that: {title.lower()}."),
            controls=tuple(self.s(c) for c in controls),
            tags=(self.s("baseline"),),
            source=SourceLocation(self.s(POLICY), line, 3),
        )

    def subject(self, kind: Target, key: str, label: str, **kw: object) -> Subject:
        return Subject(kind, self.s(key), self.s(label), **kw)  # type: ignore[arg-type]

    def who(self, rev: int, day: str, email: str) -> Attribution:
        return Attribution(rev, _at(day), self.s(email), self.s(email.split("@")[0].title()))

    def ev(
        self, path: str, actual: object, expected: object, op: str, present: bool = True
    ) -> Evidence:
        act = self.s(actual) if isinstance(actual, str) else actual
        exp = self.s(expected) if isinstance(expected, str) else expected
        return Evidence(self.s(path), act, exp, op, present, self.s("") if self.t else "")


def _results(b: _Builder) -> list[RuleResult]:
    settings = b.subject("settings", "settings", "settings in force (rev 413)", revision=413)
    r = b.rule
    https = r(
        "SET-001",
        "Custom models use HTTPS endpoints",
        "critical",
        "settings",
        ("SOC2:CC6.7", "ISO27001:A.8.24"),
        4,
    )
    secret = r(
        "SET-006",
        "Model API keys are environment references",
        "high",
        "settings",
        ("SOC2:CC6.1", "ISO27001:A.5.17"),
        40,
    )
    autonomy = r(
        "SET-002",
        "Autonomy level at most medium",
        "high",
        "settings",
        ("SOC2:CC6.1", "ISO27001:A.8.2"),
        12,
    )
    shield = r("SET-003", "Agent shield enabled", "high", "settings", ("SOC2:CC7.1",), 20)
    mcp = r(
        "SET-004",
        "MCP servers limited to an allowlist",
        "medium",
        "settings",
        ("SOC2:CC6.6", "ISO27001:A.8.22"),
        28,
    )
    egress = r(
        "SET-005",
        "Sandbox network egress restricted",
        "medium",
        "settings",
        ("ISO27001:A.8.22",),
        34,
    )
    sandbox = r("CHG-001", "Sandbox is never disabled", "high", "change", ("SOC2:CC8.1",), 48)
    level = r(
        "RDY-001",
        "Repository readiness at least level 3",
        "medium",
        "readiness",
        ("ISO27001:A.8.25",),
        56,
    )
    fresh = r(
        "RDY-002",
        "Readiness report younger than 30 days",
        "low",
        "readiness",
        ("SOC2:CC6.10", "ISO27001:A.5.15", "SOC2:CC6.8", "ISO27001:A.5.2"),
        63,
    )
    org = r("ORG-001", "Organization readiness level at least 2", "info", "org", (), 70)
    pay = b.subject(
        "readiness",
        "https://github.com/acme/payments",
        "acme/payments",
        repo_url=b.s("https://github.com/acme/payments"),
    )
    web = b.subject(
        "readiness",
        "https://github.com/acme/web",
        "acme/web",
        repo_url=b.s("https://github.com/acme/web"),
    )
    step = b.subject("change", "change:412..413", "rev 412 → 413", revision=413)
    org_subject = b.subject("org", "org", "organization")
    waiver = Waiver(
        mcp.id,
        b.s("settings"),
        b.s("Vendor MCP rollout, tracked in SEC-88"),
        b.s("security-team@example.com"),
        _at("2026-11-20T23:59:59"),
        b.s("SEC-88"),
    )

    def res(
        rule: Rule, subj: Subject, status: Status, msg: str, *ev: Evidence, **kw: object
    ) -> RuleResult:
        return RuleResult(rule, subj, status, b.s(msg), tuple(ev), **kw)  # type: ignore[arg-type]

    return [
        res(
            https,
            settings,
            "fail",
            "customModels baseUrl is not https",
            b.ev(
                "$.customModels[?id=='custom:internal'].baseUrl",
                "http://llm.internal:8080/v1",
                "https://",
                "starts_with",
            ),
            since=b.who(412, "2026-09-03T10:15:00", "alice@example.com"),
        ),
        res(
            secret,
            settings,
            "fail",
            "apiKey is a literal secret, not an environment reference",
            b.ev(
                "$.customModels[?id=='custom:internal'].apiKey",
                "[secret fp:1a2b3c4d len:40]",
                "${VAR}",
                "matches",
            ),
            since=b.who(412, "2026-09-03T10:15:00", "alice@example.com"),
        ),
        res(
            autonomy,
            settings,
            "fail",
            "maxAutonomyLevel is high",
            b.ev("$.maxAutonomyLevel", "high", "medium", "at_most"),
            since=b.who(409, "2026-08-21T16:40:00", "bob@example.com"),
        ),
        res(
            shield,
            settings,
            "pass",
            "enableAgentShield is true",
            b.ev("$.enableAgentShield", True, True, "equals"),
        ),
        res(
            mcp,
            settings,
            "waived",
            "mcpPolicy.enabled is false",
            b.ev("$.mcpPolicy.enabled", False, True, "equals"),
            raw_status="fail",
            waiver=waiver,
            since=b.who(401, "2026-07-30T08:00:00", "carol@example.com"),
        ),
        res(
            egress,
            settings,
            "unknown",
            "sandbox.network.allowedDomains is absent",
            b.ev("$.sandbox.network.allowedDomains", None, "non-empty list", "exists", False),
        ),
        res(
            sandbox,
            step,
            "fail",
            "sandbox.enabled changed from true to false",
            b.ev("$.sandbox.enabled", False, True, "to"),
            since=b.who(413, "2026-09-04T09:30:00", "bob@example.com"),
        ),
        res(level, pay, "fail", "readiness level 2 is below 3", b.ev("$level", 2, 3, "gte")),
        res(level, web, "pass", "readiness level 4", b.ev("$level", 4, 3, "gte")),
        res(
            fresh,
            pay,
            "error",
            "createdAt has the wrong type: expected a number, got a string",
            b.ev("$.createdAt", "yesterday", "number", "type"),
        ),
        res(fresh, web, "not_applicable", "no report for this repository yet"),
        res(org, org_subject, "pass", "org readiness level 3", b.ev("$level", 3, 2, "gte")),
    ]


def _previous(findings: list[Finding], b: _Builder) -> list[FindingRecord]:
    keep = [
        f for f in findings if f.rule_id.startswith("SET-002") or f.rule_id.startswith("SET-004")
    ]
    prev = [
        FindingRecord(f.fingerprint, f.rule_id, f.subject.key, "fail", f.severity, "run-41")
        for f in keep
    ]
    prev.append(FindingRecord("0" * 32, b.s("SET-007"), b.s("settings"), "fail", "high", "run-40"))
    return prev


def _waivers(b: _Builder) -> WaiverSummary:
    def w(rule: str, subject: str, reason: str, owner: str, day: str, ticket: str = "") -> Waiver:
        return Waiver(
            b.s(rule),
            b.s(subject),
            b.s(reason),
            b.s(owner),
            _at(day),
            b.s(ticket),
            SourceLocation(b.s("waivers.yaml"), 3, 3),
        )

    return WaiverSummary(
        in_force=(
            w(
                "SET-004",
                "settings",
                "Vendor MCP rollout",
                "security-team@example.com",
                "2026-11-20T23:59:59",
                "SEC-88",
            ),
        ),
        expiring_soon=(
            w(
                "SET-004",
                "settings",
                "Vendor MCP rollout",
                "security-team@example.com",
                "2026-11-20T23:59:59",
                "SEC-88",
            ),
        ),
        expired=(
            w(
                "RDY-001",
                "https://github.com/acme/legacy-*",
                "Legacy repos frozen",
                "platform@example.com",
                "2026-10-01T23:59:59",
            ),
        ),
        stale=(
            w(
                "SET-099",
                "settings",
                "Rule was removed",
                "dave@example.com",
                "2027-01-31T23:59:59",
                "SEC-12",
            ),
        ),
        warnings=(b.s("waiver for SET-099 matches no rule"),),
    )


def build_report_data(taint: str = "", *, review: bool = False) -> ReportData:
    """The fixed report input (run mode, or review mode with a proposed settings file)."""
    b = _Builder(taint)
    findings = findings_from_results(_results(b))
    findings, resolved = compare_runs(findings, _previous(findings, b))
    if review:
        findings = [
            replace(f, location=SourceLocation(b.s("settings/proposed.json"), 7, 5))
            if f.subject.kind == "settings"
            else f
            for f in findings
        ]
    rules = sorted({f.rule_id for f in findings})
    return ReportData(
        tool_version=b.s("0.1.0"),
        run_id=b.s("run-42"),
        generated_at=NOW,
        mode="review" if review else "run",
        api_address=b.s("https://api.example.com"),
        complete=False,
        not_evaluated=(b.s("readiness report for https://github.com/acme/mobile: HTTP 503"),),
        policy_files=(PolicyFile(b.s(POLICY), "9f" * 32, tuple(rules)),),
        findings=tuple(findings),
        resolved=tuple(resolved),
        failing_by_revision=tuple(
            (400 + i, c) for i, c in enumerate((0, 1, 1, 2, 2, 2, 1, 1, 2, 3, 3, 3, 4, 5))
        ),
        readiness_rows=(
            ReadinessRow(
                b.s("https://github.com/acme/payments"), 2, 0.62, 41.5, False, b.s("rpt-9")
            ),
            ReadinessRow(b.s("https://github.com/acme/web"), 4, 0.91, 3.0, True, b.s("rpt-12")),
            ReadinessRow(b.s("javascript:alert(1)"), 1, 0.1, 400.0, True, b.s("rpt-13")),
            ReadinessRow(
                b.s("https://github.com/acme/empty"), None, None, 1.5, None, b.s("rpt-14")
            ),
        ),
        org_level=3,
        waivers=_waivers(b),
        inputs=InputDigest(
            revisions_evaluated=((412, "ab" * 32), (413, "cd" * 32)),
            reports_evaluated=((b.s("rpt-12"), "ef" * 32), (b.s("rpt-9"), "01" * 32)),
            settings_revision=413,
        ),
        review=_review(b, findings) if review else None,
        fail_on="high",
        scope=AuditScope(
            period_start=_at("2026-03-02T09:15:00"),
            period_end=_at("2026-10-30T16:40:00"),
            rules_by_target=_targets(findings),
            rules_left_out=(("usage", 3, b.s("`--no-usage` was given: usage not read")),),
            rule_ids_left_out=(("usage", "USE-001"), ("usage", "USE-002"), ("usage", "USE-003")),
            revisions=2,
            change_steps=1,
            repositories=4,
            reports=5,
            reports_evaluated=2,
        ),
    )


def _targets(findings: list[Finding]) -> tuple[tuple[str, int], ...]:
    kinds = {f.rule_id: f.subject.kind for f in findings}
    counts: dict[str, int] = {}
    for kind in kinds.values():
        counts[kind] = counts.get(kind, 0) + 1
    return tuple(sorted(counts.items()))


def _review(b: _Builder, findings: list[Finding]) -> ReviewInfo:
    changes = (
        Change(b.s("$.maxAutonomyLevel"), "changed", b.s("medium"), b.s("high")),
        Change(b.s("$.sandbox.network.allowedDomains"), "item_added", None, b.s("*.example.com")),
        Change(
            b.s("$.customModels[?id=='custom:internal'].apiKey"),
            "changed",
            "[secret fp:1a2b3c4d len:40]",
            "[secret fp:9e8d7c6b len:40]",
        ),
        Change(b.s("$.sandbox.network.allowedDomains"), "item_removed", b.s("github.com"), None),
        Change(b.s("$.hooks"), "added", None, {"PreToolUse": []}),
        Change(b.s("$.cleanupPeriodDays"), "removed", 30, None),
        Change(b.s("$.mcpPolicy.allowlist"), "type_changed", b.s("github"), [b.s("github")]),
        Change(
            b.s("$.modelPolicy.allowedBaseUrls"),
            "renamed",
            [b.s("https://llm.example.com/")],
            [b.s("https://llm.example.com/")],
            old_path=b.s("$.modelPolicy.allowedUrls"),
        ),
        Change(b.s("$.defaultModel"), "changed", None, b.s("gpt-x")),
    )
    introduced = tuple(f.fingerprint for f in findings if f.rule_id.startswith("SET-002"))
    fixed = tuple(replace(f, status="pass") for f in findings if f.rule_id.startswith("SET-005"))
    return ReviewInfo(
        b.s("settings/proposed.json"),
        b.s("rev 413 (live)"),
        changes,
        introduced,
        fixed,
        unchanged=3,
    )


def build_large(count: int) -> ReportData:
    """The fixture scaled to `count` failing findings over 50 rules and many repositories."""
    base = build_report_data()
    template = next(
        f for f in base.findings if f.subject.kind == "readiness" and f.status == "fail"
    )
    rows = []
    for i in range(count):
        rule = f"RDY-{i % 50:03d}"
        url = f"https://github.com/acme/repo-{i:06d}"
        subject = Subject("readiness", url, f"acme/repo-{i:06d}", repo_url=url)
        rows.append(
            replace(
                template,
                rule_id=rule,
                subject=subject,
                fingerprint=f"{i:032x}",
                lifecycle="new" if i % 7 == 0 else "persisting",
                since=Attribution(400 + i % 13, NOW - timedelta(days=i % 90), "a@b.c"),
            )
        )
    return replace(
        base,
        findings=tuple(rows),
        failing_by_revision=tuple((r, (r * 7919) % 50) for r in range(1, 20001)),
    )


@contextmanager
def declared_urls(*entries: str) -> Iterator[None]:
    """The installed package's metadata as if pyproject.toml declared these `[project.urls]`
    entries (`"Homepage, https://…"`), for the reports' tool address and OSCAL namespace."""
    real = importlib.metadata.metadata

    def metadata(name: str) -> Any:
        found = real(name)
        if name != "auditor":
            return found
        fake = email.message.Message()
        for entry in entries:
            fake["Project-URL"] = entry
        return fake

    identity.project_home.cache_clear()
    importlib.metadata.metadata = metadata  # type: ignore[assignment]
    try:
        yield
    finally:
        importlib.metadata.metadata = real
        identity.project_home.cache_clear()
