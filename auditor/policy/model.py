"""What the policy stage gives: validated rules and the files they came from."""

from __future__ import annotations

from dataclasses import dataclass

from auditor.models import OnMissing, Severity, SourceLocation, Target
from auditor.policy.conditions import Condition


@dataclass(frozen=True)
class Rule:
    """A validated policy rule; `when`/`condition` are compiled condition trees."""

    id: str
    title: str
    severity: Severity
    target: Target
    condition: Condition  # compiled `assert`
    when: Condition | None = None  # compiled precondition
    on_missing: OnMissing = "unknown"
    description: str = ""
    remediation: str = ""
    controls: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    source: SourceLocation | None = None


@dataclass(frozen=True)
class PolicyFile:
    """A loaded policy file and the hash reports cite."""

    path: str
    sha256: str
    rule_ids: tuple[str, ...]
