"""`auditor policy test`: test cases kept beside the rules, like `conftest verify`.

Takes policy paths (files or folders) and finds `<name>.tests.yaml` beside `<name>.yaml`; gives
one `CaseResult` per case (expected vs actual status per rule id). Invalid test files (unknown
keys, unknown rule ids, malformed `now`) raise PolicyError with `file:line:col`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from auditor.common.jsonutil import content_hash
from auditor.common.paths import render
from auditor.errors import PolicyError
from auditor.evaluate.engine import evaluate
from auditor.evaluate.model import EvaluationInputs, UsageInputs
from auditor.evaluate.projection import NON_FINITE_POSSIBLE
from auditor.models import STATUSES, ReadinessReport, Revision, User
from auditor.operators import OperandTypeError, to_datetime
from auditor.policy.loader import (
    TEST_SUFFIXES,
    PolicySet,
    files_under,
    load_policies,
    plain,
    sort_problems,
)
from auditor.policy.yamlsafe import YamlDocument, load_yaml, problem, suggest
from auditor.redact import Redactor

NO_CASES = "no test cases found (<name>.tests.yaml beside <name>.yaml)"
CASE_KEYS = (
    "name",
    "settings",
    "before",
    "after",
    "author",
    "author_name",
    "now",
    "reports",
    "usage",
    "expect",
)


@dataclass(frozen=True)
class CaseResult:
    """One test case: its file, name, and the mismatches (empty when it passed)."""

    file: str
    name: str
    mismatches: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when every expected status matched."""
        return not self.mismatches


def find_test_files(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """The test files and the policy files they test, for the given files or folders."""
    tests: list[Path] = []
    policies: list[Path] = []
    for path in paths:
        if path.is_dir():
            tests += sorted(files_under(path, TEST_SUFFIXES))
            policies.append(path)
        elif path.name.endswith(TEST_SUFFIXES):
            tests.append(path)
            policies += [p for p in _siblings(path, ".yaml", ".yml") if p.exists()][:1]
        else:
            policies.append(path)
            tests += [p for p in _siblings(path, *TEST_SUFFIXES) if p.exists()][:1]
    return list(dict.fromkeys(tests)), list(dict.fromkeys(policies))


def _siblings(path: Path, *suffixes: str) -> list[Path]:
    """`base.v2.yaml` <-> `base.v2.tests.yaml`: the name without its policy or test suffix."""
    name = path.name
    ending = next((e for e in (*TEST_SUFFIXES, ".yaml", ".yml") if name.endswith(e)), "")
    stem = name[: len(name) - len(ending)]
    return [path.with_name(stem + s) for s in suffixes]


@dataclass
class _Case:
    """A validated case ready to evaluate."""

    name: str
    inputs: EvaluationInputs
    expect: dict[str, str] = field(default_factory=dict)
    documents: tuple[Any, ...] = ()  # the case's data as written (settings, reports, usage …)


def run_policy_tests(paths: Sequence[Path], *, now: datetime) -> list[CaseResult]:
    """Load the policies and their test files, run every case; PolicyError if any is invalid."""
    test_paths, policy_paths = find_test_files(paths)
    problems: list[str] = []
    try:
        policy: PolicySet | None = load_policies(policy_paths)
    except PolicyError as exc:
        problems += exc.problems
        policy = None
    cases: list[tuple[str, _Case]] = []
    for path in test_paths:
        try:
            doc = load_yaml(path)
        except PolicyError as exc:
            problems += exc.problems
            continue
        cases += [(doc.path, c) for c in _read_cases(doc, policy, now, problems)]
    if problems or policy is None:
        raise PolicyError(sort_problems(problems))
    if not cases:
        shown = ", ".join(map(str, paths)) or "."
        raise PolicyError([f"{shown}: error: {NO_CASES}"])
    may_hold = NON_FINITE_POSSIBLE.set(True)  # YAML reads `.nan` and `.inf`
    try:
        return [_run(policy, file, case) for file, case in cases]
    finally:
        NON_FINITE_POSSIBLE.reset(may_hold)


def _run(policy: PolicySet, file: str, case: _Case) -> CaseResult:
    wanted = tuple(r for r in policy.rules if r.id in case.expect)
    result = evaluate(replace(policy, rules=wanted), case.inputs)
    mismatches = []
    for rule_id, expected in case.expect.items():
        got = [r for r in result.results if r.rule.id == rule_id]
        statuses: list[str] = sorted({r.status for r in got}) or ["not evaluated"]
        if statuses != [expected]:
            why = "; ".join(dict.fromkeys(r.message for r in got))
            why = why if len(why) <= 200 else why[:199] + "…"  # a cut is marked (`_cut_ones`)
            shown = ", ".join(statuses)
            mismatches.append(
                f"{rule_id}: expected {expected}, got {shown}" + (f" ({why})" if why else "")
            )
    return CaseResult(file, case.name, _unshown(mismatches, case.documents))


def _unshown(mismatches: list[str], documents: tuple[Any, ...]) -> tuple[str, ...]:
    """The mismatches with every secret of the case's data replaced by its marker: a rule's
    message quotes the value it judged (`apiKey is "…"`), and the case's data is redacted as a
    run redacts what it stores (where secrets live, by key name, by value), so a value a run
    would never show is not printed here either. The key is made for this case alone: its
    markers are compared with nothing."""
    if not mismatches:
        return ()
    redactor = Redactor(secrets.token_bytes(32))
    for document in documents:
        redactor.redact_json(document)
    found = redactor.memory.values
    # the cut starts first: a shorter secret inside one, made a marker, would hide the start
    return tuple(redactor.redact_text(_cut_ones(line, found, redactor)) for line in mismatches)


_SHORTEST_CUT = 6  # the shortest start of a secret still taken for it (the memory's minimum)


def _cut_ones(line: str, found: Iterable[str], redactor: Redactor) -> str:
    """`line` without the starts of secrets a message cut short (`short` ends a long value
    with `…`, and so does the cut of a mismatch at 200 characters): the memory knows only
    whole values. Each `…` is looked back from for the longest start of a secret (raw or
    JSON-escaped, from 6 characters on) that ends there."""
    if "…" not in line:
        return line
    forms = [
        (form, secret)
        for secret in found
        for form in dict.fromkeys((secret, orjson.dumps(secret).decode()[1:-1]))
        if len(form) > _SHORTEST_CUT
    ]
    cuts: list[tuple[int, int, str]] = []  # (start, end at the `…`, secret)
    at = line.find("…")
    while at >= 0:
        best: tuple[int, int, str] | None = None
        for form, secret in forms:
            # the longest stretch ending at the `…` that starts the form: the first start
            # from the left (a line is a few hundred characters; each test is one C compare)
            for start in range(max(0, at - len(form) + 1), at - _SHORTEST_CUT + 1):
                if best is not None and start >= best[0]:
                    break
                if form.startswith(line[start:at]):
                    best = (start, at, secret)
                    break
        if best is not None:
            if cuts and best[0] < cuts[-1][1]:  # a `…` of the secret itself, cut again after
                cuts[-1] = (min(cuts[-1][0], best[0]), best[1], best[2])
            else:
                cuts.append(best)
        at = line.find("…", at + 1)
    for start, end, secret in reversed(cuts):
        line = line[:start] + redactor.marker(secret) + line[end:]
    return line


class _CaseReader:
    """Validates the cases of one test file, reporting problems with positions."""

    def __init__(self, doc: YamlDocument, policy: PolicySet | None, problems: list[str]) -> None:
        self.doc = doc
        self.policy = policy
        self.problems = problems

    def fail(self, where: tuple[str | int, ...], message: str, *, key: bool = False) -> None:
        loc = self.doc.locate(where, key=key)
        self.problems.append(problem(loc, render(where), message))

    def case(self, index: int, raw: Any, now: datetime) -> _Case | None:
        where: tuple[str | int, ...] = ("tests", index)
        if not isinstance(raw, dict) or not isinstance(raw.get("expect"), dict):
            self.fail(where, "a test case must be a mapping with an `expect:` mapping")
            return None
        if not raw["expect"]:
            self.fail((*where, "expect"), "`expect:` must name at least one rule id and status")
            return None
        count = len(self.problems)
        for key in raw:
            if key not in CASE_KEYS:
                self.fail(
                    (*where, key), f"unknown key `{key}`{suggest(str(key), CASE_KEYS)}", key=True
                )
        expect = self._expect(raw["expect"], (*where, "expect"))
        moment = self._now(raw.get("now"), (*where, "now"), now)
        inputs = self._inputs(raw, where, moment)
        if len(self.problems) > count or inputs is None:
            return None
        documents = tuple(plain(raw[k]) for k in _DATA_KEYS if k in raw)
        return _Case(str(raw.get("name", f"case {index + 1}")), inputs, expect, documents)

    def _expect(self, raw: Mapping[str, Any], where: tuple[str | int, ...]) -> dict[str, str]:
        known = [r.id for r in self.policy.rules] if self.policy else []
        for rule_id, status in raw.items():
            if self.policy is not None and str(rule_id) not in known:
                self.fail(
                    (*where, rule_id),
                    f"unknown rule id `{rule_id}`{suggest(str(rule_id), known)}",
                    key=True,
                )
            if status not in STATUSES:
                self.fail((*where, rule_id), f"{status!r} is not a status ({', '.join(STATUSES)})")
        return {str(k): str(v) for k, v in raw.items()}

    def _now(self, raw: Any, where: tuple[str | int, ...], default: datetime) -> datetime:
        if raw is None:
            return default
        try:
            return to_datetime(raw)
        except OperandTypeError:
            self.fail(where, f"malformed date {raw!r}; use ISO-8601 such as 2026-11-01T00:00:00Z")
            return default

    def _inputs(
        self, raw: Mapping[str, Any], where: tuple[str | int, ...], now: datetime
    ) -> EvaluationInputs | None:
        data = {k: self._json(raw[k], (*where, k)) for k in _DATA_KEYS if k in raw}
        if any(v is _BAD for v in data.values()):
            return None
        settings = _revision(1, data["settings"], raw, now) if "settings" in data else None
        steps: tuple[tuple[Revision, Revision], ...] = ()
        if "before" in data or "after" in data:
            before = _revision(1, data.get("before", {}), {}, now)
            steps = ((before, _revision(2, data.get("after", {}), raw, now)),)
        reports = self._reports(data.get("reports") or [], (*where, "reports"))
        if reports is None:
            return None
        if "usage" in data:
            return self._usage(data, (*where, "usage"), now)
        return EvaluationInputs(now=now, settings=settings, steps=steps, reports=reports)

    def _usage(
        self, data: Mapping[str, Any], where: tuple[str | int, ...], now: datetime
    ) -> EvaluationInputs | None:
        """`usage:` one day (or a list of days, oldest first: the earlier ones only feed the
        trailing median, the last is judged) under `settings:`, in force before the first."""
        raw = data["usage"]
        days = raw if isinstance(raw, list) else [raw]
        if not days:
            self.fail(where, _USAGE_SHAPE)
            return None
        parsed: list[tuple[str, dict[str, Any]]] = []
        for i, day in enumerate(days):
            text = day.get("date") if isinstance(day, dict) else None
            try:
                when = to_datetime(f"{text}T00:00:00Z") if isinstance(text, str) else None
            except OperandTypeError:
                when = None
            if when is None or not isinstance(day, dict):
                self.fail((*where, i) if isinstance(raw, list) else where, _USAGE_SHAPE)
                return None
            parsed.append((when.date().isoformat(), {k: v for k, v in day.items() if k != "date"}))
        settings = data.get("settings")
        history: tuple[Revision, ...] = ()
        if settings is not None:
            rev = _revision(1, settings, {}, to_datetime("2000-01-01T00:00:00Z"))
            history = (rev,)
        usage = UsageInputs(days=tuple(parsed), first_judged=parsed[-1][0])
        return EvaluationInputs(
            now=now, settings=history[0] if history else None, history=history, usage=usage
        )

    def _json(self, value: Any, where: tuple[str | int, ...]) -> Any:
        """The YAML value as JSON data, or `_BAD` after reporting why it is not."""
        data = plain(value)
        try:
            content_hash(data)
        except TypeError as exc:  # orjson: a non-string key, an integer beyond 64 bits
            self.fail(where, f"not JSON data: {_reason(exc)}")
            return _BAD
        return data

    def _reports(
        self, raw: Any, where: tuple[str | int, ...]
    ) -> tuple[ReadinessReport, ...] | None:
        if not isinstance(raw, list):
            self.fail(where, "`reports:` must be a list of readiness reports")
            return None
        reports = []
        for i, item in enumerate(raw):
            report = _report(item)
            if report is None:
                self.fail((*where, i), _REPORT_SHAPE)
                return None
            reports.append(report)
        return tuple(reports)


_DATA_KEYS = ("settings", "before", "after", "reports", "usage")
_BAD = object()
_USAGE_SHAPE = "a usage day needs `date: YYYY-MM-DD` and the day's rows (tokens, tools, users, …)"
_REPORT_SHAPE = "a report needs reportId, repoUrl and createdAt (Unix ms, a real date)"


def _reason(exc: TypeError) -> str:
    text = str(exc)
    if "Integer exceeds 64-bit range" in text:
        return "an integer beyond 64 bits"
    if "Dict key must be str" in text:
        return "a mapping key that is not a string"
    return text


def _revision(number: int, settings: Any, raw: Mapping[str, Any], now: datetime) -> Revision:
    email = str(raw.get("author", "test@example.com"))
    user = User("test", email, str(raw.get("author_name", "")))
    return Revision(number, now, user, settings, content_hash(settings))


def _report(item: Any) -> ReadinessReport | None:
    if not isinstance(item, dict) or not isinstance(item.get("createdAt"), int | float):
        return None
    if not isinstance(item.get("repoUrl"), str) or "reportId" not in item:
        return None
    try:
        created = to_datetime(item["createdAt"])
    except OperandTypeError:
        return None
    return ReadinessReport(
        str(item["reportId"]), item["repoUrl"], created, item, content_hash(item)
    )


def _read_cases(
    doc: YamlDocument, policy: PolicySet | None, now: datetime, problems: list[str]
) -> list[_Case]:
    reader = _CaseReader(doc, policy, problems)
    raw = doc.data.get("tests") if isinstance(doc.data, dict) else None
    if not isinstance(raw, list):
        reader.fail((), "a policy test file must be a mapping with a `tests:` list")
        return []
    cases = [reader.case(i, item, now) for i, item in enumerate(raw)]
    first: dict[str, int] = {}
    for index, case in enumerate(cases):
        if case is None:
            continue
        if case.name in first:  # a result named twice cannot be told from the other one
            reader.fail(
                ("tests", index, "name"),
                f"test case name {case.name!r} is used by case {first[case.name] + 1} already",
            )
        first.setdefault(case.name, index)
    return [c for c in cases if c is not None]
