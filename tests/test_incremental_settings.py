"""A settings rule's worded verdict on the revision under test, carried between runs (issue 13).

A nightly whose new revisions left what a settings rule reads as it was reads that rule's
result (message and evidence: for a long allow list, the most costly verdict of a nightly)
back by its projection, instead of wording it again; a revision that changed what the rule
reads is judged afresh. Either way the results are those of an evaluation from scratch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import auditor.evaluate.rule as evaluate_rule
from auditor.evaluate import incremental
from auditor.evaluate.engine import evaluate
from auditor.evaluate.model import EvaluationInputs
from auditor.models import Revision, User
from auditor.policy import PolicySet, load_policies

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

POLICY = """\
defaults:
  target: settings
rules:
  - id: S-ALLOW
    title: No shells in the allow list
    severity: high
    assert:
      none: commandAllowlist
      assert: {path: "@", in: [sudo, bash]}
  - id: S-SBX
    title: Sandbox on
    severity: medium
    assert: {path: sandbox.enabled, equals: true}
"""


@pytest.fixture
def policy(tmp_path: Path) -> PolicySet:
    path = tmp_path / "settings.yaml"
    path.write_text(POLICY)
    return load_policies([path])


def revision(number: int, allow: Sequence[str], *, sandbox: bool = False) -> Revision:
    settings = {
        "commandAllowlist": list(allow),
        "sandbox": {"enabled": sandbox},
        "note": f"edit {number}",  # read by no rule
    }
    return Revision(
        number,
        NOW - timedelta(days=30 - number),
        User(f"u{number}", f"u{number}@example.com", f"User {number}"),
        settings,
        f"{number:064x}",
    )


HISTORY = (
    revision(1, ["ls"]),
    revision(2, ["ls", "sudo"]),
    revision(3, ["ls", "sudo", "bash"]),
    revision(4, ["ls", "sudo", "bash"]),
)


def run(
    policy: PolicySet, history: Sequence[Revision], prior: Mapping[str, bytes]
) -> tuple[list[tuple[Any, ...]], dict[str, bytes]]:
    """The results of one run over `history` (its last revision under test) and its state."""
    numbers = [r.revision for r in history]
    evaluation = evaluate(
        policy,
        EvaluationInputs(
            now=NOW,
            settings=history[-1],
            history=tuple(history),
            prior=prior,
            tail=lambda start: [r for r in history if r.revision >= start],
            revision_numbers=numbers,
            remember=True,
        ),
    )
    results = [
        (r.rule.id, r.subject.key, r.status, r.message, r.evidence, r.since)
        for r in evaluation.results
    ]
    return results, dict(evaluation.state.items())


@pytest.fixture
def worded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rules whose verdict was worked out (with its words), one entry each time."""
    calls: list[str] = []
    real: Callable[..., Any] = evaluate_rule.run_rule

    def counting(rule: Any, *args: Any) -> Any:
        calls.append(rule.id)
        return real(rule, *args)

    monkeypatch.setattr(evaluate_rule, "run_rule", counting)
    return calls


def test_a_verdict_on_unchanged_inputs_is_read_back(policy: PolicySet, worded: list[str]) -> None:
    _, state = run(policy, HISTORY, {})
    assert sorted(worded) == ["S-ALLOW", "S-SBX"]
    later = (*HISTORY, revision(5, ["ls", "sudo", "bash"]))  # only `note` changed
    worded.clear()
    again, _ = run(policy, later, state)
    assert worded == []  # both results read back
    scratch, _ = run(policy, later, {})
    assert again == scratch
    allow = next(r for r in again if r[0] == "S-ALLOW")
    assert allow[2] == "fail" and allow[5].revision == 2  # failing since rev 2, as from scratch


def test_a_revision_that_changes_what_a_rule_reads_is_judged_afresh(
    policy: PolicySet, worded: list[str]
) -> None:
    _, state = run(policy, HISTORY, {})
    later = (*HISTORY, revision(5, ["ls", "sudo"], sandbox=False))  # bash gone
    worded.clear()
    again, state = run(policy, later, state)
    assert worded == ["S-ALLOW"]
    assert again == run(policy, later, {})[0]
    # the next night only the sandbox changes: the allow list's verdict of the night before
    # is read back
    latest = (*later, revision(6, ["ls", "sudo"], sandbox=True))
    worded.clear()
    final, _ = run(policy, latest, state)
    assert worded == ["S-SBX"]
    assert final == run(policy, latest, {})[0]
    assert [r[2] for r in final] == ["fail", "pass"]


def test_a_damaged_kept_verdict_is_worked_out_again(policy: PolicySet, worded: list[str]) -> None:
    first, state = run(policy, HISTORY, {})
    key = next(incremental.verdicts_key(r, policy.enums) for r in policy.rules)
    assert key is not None and key in state
    worded.clear()
    again, _ = run(policy, HISTORY, {**state, key: b'{"verdicts": [["00", "fail"]]}'})
    assert worded == ["S-ALLOW"]
    assert again == first
