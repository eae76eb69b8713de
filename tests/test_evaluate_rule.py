"""One rule on one document: results on realistic data equal a reviewed reference, and
`on_missing` / preconditions decide the verdict."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import generate_dataset
from auditor.evaluate.conditions import Env, evaluate_condition
from auditor.evaluate.engine import Steps, change_document, evaluate
from auditor.evaluate.model import EvaluationInputs, RuleResult
from auditor.fetch.decode import to_revision
from auditor.models import Evidence, Revision
from auditor.policy import SHIPPED_POLICY_DIR, PolicySet, load_policies
from auditor.redact import Redactor

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
LONG_VALUE = 300
Row = tuple[str, str, str]  # rule, subject, verdict as JSON
GOLDEN = Path(__file__).parent / "golden" / "evaluation-reference.json"


@pytest.fixture(scope="module")
def shipped() -> PolicySet:
    return load_policies([SHIPPED_POLICY_DIR])


@pytest.fixture(scope="module")
def inputs() -> EvaluationInputs:
    data = generate_dataset()  # the history only: readiness data is the emulator's to change
    redactor = Redactor(b"test-key")
    history = tuple(
        to_revision(item, redactor, "default", f"$.changes[{i}]")
        for i, item in enumerate(data.history)
    )
    return EvaluationInputs(
        NOW,
        history[-1],
        history,
        all_revisions=True,
        steps=Steps(history),
        memoise=False,
    )


def evidence_json(evidence: tuple[Evidence, ...]) -> list[list[Any]]:
    """Evidence as JSON; a long actual value by its hash (still compared exactly)."""
    return [
        [
            e.path,
            _fingerprint(e.actual),
            e.expected,
            e.operator,
            e.present,
            e.note,
            e.shows_expected,
        ]
        for e in evidence
    ]


def _fingerprint(value: Any) -> Any:
    text = json.dumps(value, sort_keys=True, default=repr)
    if len(text) <= LONG_VALUE:
        return value
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()[:16]} ({len(text)} chars)"


def row(rule: str, subject: str, status: str, message: str, evidence: Any) -> Row:
    return rule, subject, json.dumps([status, message, evidence], default=repr)


def result_row(result: RuleResult) -> Row:
    return row(
        result.rule.id,
        result.subject.key,
        result.status,
        result.message,
        evidence_json(result.evidence),
    )


def negations(policy: PolicySet, inputs: EvaluationInputs) -> Iterator[Row]:
    """Every settings and change rule's assertion under `not`, on every revision and step."""
    env = Env(NOW)
    assert inputs.history is not None
    docs: list[tuple[str, str, Any, Env]] = [
        ("settings", f"settings@{rev.revision}", rev.settings, env) for rev in inputs.history
    ]
    docs += [
        (
            "change",
            f"change:{a.revision}..{b.revision}",
            change_document(a, b, with_changes=True),
            _change_env(a, b),
        )
        for a, b in inputs.steps
    ]
    for rule in policy.rules:
        for target, key, doc, rule_env in docs:
            if rule.target != target:
                continue
            out = evaluate_condition(rule.condition, doc, "$", _rooted(rule_env, doc)).negated()
            yield row(rule.id, key, out.status, out.message, evidence_json(out.evidence))


def _change_env(before: Revision, after: Revision) -> Env:
    return Env(NOW, (before.settings, after.settings))


def _rooted(env: Env, doc: Any) -> Env:
    return Env(env.now, env.change, doc)


class Reference:
    """Distinct verdicts, and runs of consecutive subjects of one rule sharing a verdict."""

    def __init__(self) -> None:
        self.verdicts: dict[str, int] = {}
        self.parts: dict[str, list[list[Any]]] = {}

    def add(self, part: str, rows: Iterable[Row]) -> None:
        runs = self.parts.setdefault(part, [])
        for rule, subject, verdict in rows:
            index = self.verdicts.setdefault(verdict, len(self.verdicts))
            last = runs[-1] if runs else None
            if last and last[0] == rule and last[3] == index:
                last[2] += 1
            else:
                runs.append([rule, subject, 1, index])

    def text(self) -> str:
        """One verdict or run per line, so a review (and a diff) reads line by line."""
        out = '{"verdicts": [\n' + ",\n".join(self.verdicts) + "\n]"
        for part, runs in self.parts.items():
            out += f',\n"{part}": [\n' + ",\n".join(json.dumps(r) for r in runs) + "\n]"
        return out + "}\n"

    def expanded(self, part: str) -> list[tuple[str, int, str]]:
        """(rule, position, verdict) of every subject of a part."""
        verdicts = list(self.verdicts)
        return [
            (rule, i, verdicts[index])
            for rule, _, count, index in self.parts[part]
            for i in range(count)
        ]


def reference(policy: PolicySet, inputs: EvaluationInputs) -> Reference:
    ref = Reference()
    ref.add("results", (result_row(r) for r in evaluate(policy, inputs).results))
    ref.add("negated", negations(policy, inputs))
    return ref


def load_reference() -> Reference:
    raw = json.loads(GOLDEN.read_text())
    ref = Reference()
    ref.verdicts = {json.dumps(v): i for i, v in enumerate(raw.pop("verdicts"))}
    ref.parts = raw
    return ref


def test_results_equal_the_reviewed_reference(
    shipped: PolicySet, inputs: EvaluationInputs, update_golden: bool
) -> None:
    got = reference(shipped, inputs)
    if update_golden:
        GOLDEN.write_text(got.text())
    want = load_reference()
    for part in ("results", "negated"):
        mine, theirs = got.expanded(part), want.expanded(part)
        assert len(mine) == len(theirs) > 1000
        for a, b in zip(mine, theirs, strict=True):
            assert a == b
        assert got.parts[part] == want.parts[part]  # the same subjects
