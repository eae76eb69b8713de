"""What the policy stage gives: validated rules and the files they came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.models import OnMissing, Severity, SourceLocation, Target


@dataclass(frozen=True)
class Rule:
    """A validated policy rule. `when`/`condition` are compiled by `auditor.policy`."""

    id: str
    title: str
    severity: Severity
    target: Target
    condition: Any  # compiled `assert`
    when: Any = None  # compiled precondition, or None
    on_missing: OnMissing = "unknown"
    description: str = ""
    remediation: str = ""
    controls: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    source: SourceLocation | None = None
    paths: tuple[str, ...] = ()  # every settings path the rule reads (for incremental evaluation)


@dataclass(frozen=True)
class PolicyFile:
    """A loaded policy file and the hash reports cite."""

    path: str
    sha256: str
    rule_ids: tuple[str, ...]
