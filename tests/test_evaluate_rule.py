"""One rule on one document: results on realistic data equal a reviewed reference, and
`on_missing` / preconditions decide the verdict."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.common.dates import usage_window
from auditor.emulator import generate_dataset
from auditor.emulator.data_analytics import tokens_row, tools_row, user_row
from auditor.evaluate.conditions import Env, evaluate_condition
from auditor.evaluate.engine import Steps, change_document, evaluate
from auditor.evaluate.model import EvaluationInputs, RuleResult, UsageInputs
from auditor.fetch.decode import to_revision
from auditor.models import Evidence, Revision
from auditor.operators.hidden import fingerprinting
from auditor.policy import SHIPPED_POLICY_DIR, PolicySet, load_policies
from auditor.redact import Redactor

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
LONG_VALUE = 300
Row = tuple[str, str, str]  # rule, subject, verdict as JSON
GOLDEN = Path(__file__).parent / "golden" / "verdicts"  # <pack>.json per shipped pack
KEY = b"test-key"  # the redactor's key, which a run (and so the reference) compares markers by


@pytest.fixture(scope="module")
def shipped() -> PolicySet:
    return load_policies([SHIPPED_POLICY_DIR])


@pytest.fixture(scope="module")
def inputs() -> EvaluationInputs:
    data = generate_dataset()  # the history only: readiness data is the emulator's to change
    redactor = Redactor(KEY)
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
        usage=_usage(data, redactor),
    )


def _usage(data: Any, redactor: Redactor) -> UsageInputs:
    """The emulator's analytics of the 30 days before NOW, as a sync stores them."""
    first, last = usage_window(NOW.date())
    days = []
    for n in range((last - first).days + 1):
        facts = data.day_facts(first + timedelta(days=n))
        series = {
            "tokens": tokens_row(facts),
            "tools": tools_row(facts),
            "users": [user_row(facts, u) for u in data.analytics_users],
        }
        days.append((facts.day.isoformat(), redactor.redact_json(series)))
    return UsageInputs(days=tuple(days), first_judged=first.isoformat())


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
        """One run, verdict wording or evidence item per line, so a diff reads line by line."""
        out = '{"verdicts": ' + _lines(_verdict_text(v) for v in self.verdicts)
        for part, runs in self.parts.items():
            out += f',\n"{part}": ' + _lines(json.dumps(r) for r in runs)
        return out + "}\n"

    def expanded(self, part: str) -> list[tuple[str, int, str]]:
        """(rule, position, verdict) of every subject of a part."""
        verdicts = list(self.verdicts)
        return [
            (rule, i, verdicts[index])
            for rule, _, count, index in self.parts[part]
            for i in range(count)
        ]


def _lines(items: Iterable[str]) -> str:
    body = ",\n".join(items)
    return f"[\n{body}\n]" if body else "[]"


def _verdict_text(verdict: str) -> str:
    """Status and message on one line, then each evidence item on its own line."""
    status, message, evidence = json.loads(verdict)
    head = json.dumps([status, message])[:-1]
    return f"{head}, " + _lines("  " + json.dumps(e) for e in evidence) + "]"


def pack_references(policy: PolicySet, inputs: EvaluationInputs) -> dict[str, Reference]:
    """The reference of each pack (by file name), from one evaluation of every shipped rule."""
    pack = {rule_id: Path(f.path).stem for f in policy.files for rule_id in f.rule_ids}
    refs = {name: Reference() for name in pack.values()}
    parts = {
        "results": (result_row(r) for r in evaluate(policy, inputs).results),
        "negated": negations(policy, inputs),
    }
    for part, rows in parts.items():
        for ref in refs.values():
            ref.add(part, ())  # every file has both parts, empty or not
        for one in rows:
            refs[pack[one[0]]].add(part, (one,))
    return refs


def write_references(refs: dict[str, Reference]) -> None:
    GOLDEN.mkdir(exist_ok=True)
    for stale in GOLDEN.glob("*.json"):
        if stale.stem not in refs:
            stale.unlink()
    for name, ref in refs.items():
        (GOLDEN / f"{name}.json").write_text(ref.text(), encoding="utf-8", newline="\n")


def load_reference(path: Path) -> Reference:
    raw = json.loads(path.read_text(encoding="utf-8"))
    ref = Reference()
    ref.verdicts = {json.dumps(v): i for i, v in enumerate(raw.pop("verdicts"))}
    ref.parts = raw
    return ref


def test_results_equal_the_reviewed_reference(
    shipped: PolicySet, inputs: EvaluationInputs, update_golden: bool
) -> None:
    # as `auditor run` evaluates: a literal compared with a marker (`{path: after, equals: 0}`
    # on a step that rotates a key) is decided by the state's key, not an `error`
    with fingerprinting(Redactor(KEY).marker):
        got = pack_references(shipped, inputs)
    if update_golden:
        write_references(got)
    want = {path.stem: load_reference(path) for path in sorted(GOLDEN.glob("*.json"))}
    assert sorted(want) == sorted(got), "one reference per shipped pack (--update-golden)"
    for part in ("results", "negated"):
        mine = [(pack, *row) for pack, ref in got.items() for row in ref.expanded(part)]
        theirs = [(pack, *row) for pack in got for row in want[pack].expanded(part)]
        assert len(mine) == len(theirs) > 1000
        for a, b in zip(mine, theirs, strict=True):
            assert a == b
        for pack in got:
            assert got[pack].parts[part] == want[pack].parts[part]  # the same subjects
