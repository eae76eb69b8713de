"""What the policy stage gives: validated rules and the files they came from."""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor.models import OnMissing, Severity, SourceLocation, Target
from auditor.policy.conditions import Condition

#: Rule ids beginning so are auditor's own (the built-in `AUDITOR-INTEGRITY-001`, and any added
#: later): a policy's rule may not use one, or its findings and waivers would be mixed up with
#: the built-in rule's.
RESERVED_ID_PREFIX = "AUDITOR-"


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
    """A loaded policy file and the hash reports cite: the sha256 of its bytes, or, once a run
    knows its state's key, of its copy with its secrets as markers
    (`auditor.policy.redacted.with_copy_digests`)."""

    path: str
    sha256: str
    rule_ids: tuple[str, ...]
    #: The file's text as read (for the digest of its copy); not shown, not compared.
    text: str = field(default="", repr=False, compare=False)
