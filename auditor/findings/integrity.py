"""The built-in integrity rule: stored history the service later served with other content.

Takes the store's integrity issues (`Store.integrity_issues`: a revision or readiness report
stored with one content hash and later served with another, design §4), gives one failing
`RuleResult` per issue of the built-in rule `AUDITOR-INTEGRITY-001`, so that `auditor run`
reports them as it reports any finding: in every output, waivable, counted by the exit-code
gate at its severity and tracked new / persisting across runs. The evidence is the two content
hashes and when the other content was seen; never any settings content.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from auditor.evaluate.model import RuleResult
from auditor.findings.finding import Finding, fingerprint_digest, sort_findings
from auditor.models import Evidence, Subject
from auditor.policy.conditions import Logic
from auditor.policy.model import Rule
from auditor.store.schema import IntegrityIssue

RULE_ID = "AUDITOR-INTEGRITY-001"

#: The built-in rule: no policy file holds it, and every `auditor run` applies it.
INTEGRITY_RULE = Rule(
    id=RULE_ID,
    title="Stored history changed at the source",
    severity="critical",
    target="settings",
    condition=Logic("all", ()),  # never evaluated: the results come from the store's issues
    description=(
        "A settings revision or readiness report the state file holds was later served by the "
        "service with other content under the same revision number or report id. An audit "
        "trail must not change after the fact: the stored copy was kept, it is what the audit "
        "judges, and the rewrite is reported here. A rule built into auditor."
    ),
    remediation=(
        "Find out why the service now serves other content for this item (a restored backup, "
        "an edited record, another organization's data behind the same address). Compare the "
        "stored copy (`auditor history`, `auditor export`) with what the service sends. Once "
        "explained, record the acknowledgement as a waiver for AUDITOR-INTEGRITY-001 on the "
        "revision (`settings@N`) or the report's repository URL."
    ),
    tags=("integrity", "built-in"),
)


def integrity_results(issues: Iterable[IntegrityIssue]) -> list[RuleResult]:
    """One failing result of the built-in rule per integrity issue, oldest first."""
    return [_result(issue) for issue in issues]


def _result(issue: IntegrityIssue) -> RuleResult:
    when = issue.seen_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    evidence = Evidence(
        path="content_hash",
        actual=issue.seen_hash,
        expected=issue.stored_hash,
        operator="equals",
        note=f"the other content first served {when}",
    )
    return RuleResult(INTEGRITY_RULE, _subject(issue), "fail", issue.describe(), (evidence,))


def _subject(issue: IntegrityIssue) -> Subject:
    if issue.report_id is None:
        number = issue.revision
        return Subject("settings", f"settings@{number}", f"revision {number}", revision=number)
    label = f"readiness report {issue.report_id}"
    if issue.repo_url is None:  # not stored (cannot happen but for a store edited by hand)
        return Subject("readiness", f"report:{issue.report_id}", label)
    # keyed by the repository, as every readiness finding is: a waiver names its URL (or a glob)
    return Subject("readiness", issue.repo_url, f"{label} ({issue.repo_url})", None, issue.repo_url)


def with_issue_fingerprints(findings: list[Finding]) -> list[Finding]:
    """`findings` with each of the built-in rule's fingerprinted per issue (rule, subject and
    the content seen), so that one revision served with two other contents gives two findings
    of their own, each tracked across runs; re-sorted when it changed any."""
    if not any(f.rule_id == RULE_ID for f in findings):
        return findings
    return sort_findings(_fingerprinted(f) if f.rule_id == RULE_ID else f for f in findings)


def _fingerprinted(f: Finding) -> Finding:
    seen = _seen_hash(f.evidence)
    return replace(f, digest=fingerprint_digest(RULE_ID, f.subject.key, f"content_hash={seen}"))


def _seen_hash(evidence: Sequence[Evidence]) -> str:
    return str(evidence[0].actual) if evidence else ""
