"""Policy test cases (`<name>.tests.yaml`) read and checked, none run.

Takes the test files beside (or under) policy paths and the loaded `PolicySet`; gives each
case's validated data (`Case`: the revisions, the change step, readiness reports or usage days
it gives, and the status expected of each rule), or the problems at `file:line:col`. Running
the cases is `auditor.evaluate.testing`; `auditor policy lint` checks them without loading the
rule engine (`test_file_problems`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from auditor.common.jsonutil import content_hash
from auditor.common.paths import render
from auditor.errors import PolicyError
from auditor.models import STATUSES, ReadinessReport, Revision, User
from auditor.operators import OperandTypeError, to_datetime
from auditor.policy.loader import TEST_SUFFIXES, PolicySet, files_under, plain
from auditor.policy.yamlsafe import YamlDocument, load_yaml, problem, suggest

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
class CaseInputs:
    """What a case gives the rules to judge (`auditor.evaluate.testing` makes its
    `EvaluationInputs`): a settings revision, a change step, readiness reports, or usage days
    (oldest first, the last judged) under the settings in force before them (`history`)."""

    now: datetime
    settings: Revision | None = None
    steps: tuple[tuple[Revision, Revision], ...] = ()
    reports: tuple[ReadinessReport, ...] = ()
    history: tuple[Revision, ...] = ()
    usage_days: tuple[tuple[str, dict[str, Any]], ...] | None = None


def find_test_files(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """The test files and the policy files they test, for the given files or folders."""
    tests: list[Path] = []
    policies: list[Path] = []
    for path in paths:
        if path.is_dir():
            tests += sorted(files_under(path, TEST_SUFFIXES))
            policies.append(path)
        elif path.name.lower().endswith(TEST_SUFFIXES):  # (as a folder reads it: `files_under`)
            tests.append(path)
            policies += [p for p in _siblings(path, ".yaml", ".yml") if p.exists()][:1]
        else:
            policies.append(path)
            tests += [p for p in _siblings(path, *TEST_SUFFIXES) if p.exists()][:1]
    # one real test file read once, whatever names reach it (a folder and a link to it)
    once = list({os.path.realpath(p): p for p in reversed(tests)}.values())[::-1]
    return once, list(dict.fromkeys(policies))


def _siblings(path: Path, *suffixes: str) -> list[Path]:
    """`base.v2.yaml` <-> `base.v2.tests.yaml`: the name without its policy or test suffix,
    each in any case (`c.Tests.YAML` <-> `c.YAML`, as a folder reads them: review R42 #3),
    the one in the folder when it is there."""
    name = path.name
    ending = next((e for e in (*TEST_SUFFIXES, ".yaml", ".yml") if name.lower().endswith(e)), "")
    stem = name[: len(name) - len(ending)]
    exact = [path.with_name(stem + s) for s in suffixes]
    if all(p.exists() for p in exact):
        return exact
    try:
        there = {p.name.lower(): p for p in sorted(path.parent.iterdir(), reverse=True)}
    except OSError:  # (not a folder that can be listed: the names as written, none there)
        there = {}
    # the name as written first (`c.yaml` beside `c.YAML` too: review R45 #4)
    return [p if p.exists() else there.get(p.name.lower(), p) for p in exact]


@dataclass
class Case:
    """A validated case ready to evaluate."""

    name: str
    inputs: CaseInputs
    expect: dict[str, str] = field(default_factory=dict)
    documents: tuple[Any, ...] = ()  # the case's data as written (settings, reports, usage …)


def read_test_files(
    paths: Sequence[Path], policy: PolicySet | None, now: datetime, problems: list[str]
) -> tuple[list[tuple[str, Case]], list[str]]:
    """The cases of the test files `paths` (each with its file's name), their problems added
    to `problems` (rule ids checked against `policy` when given), and a problem for each file
    whose `tests:` list is empty (`policy test` raises them only when no file has a case)."""
    cases: list[tuple[str, Case]] = []
    empty: list[str] = []
    for path in paths:
        try:
            doc = load_yaml(path, unread=True)  # a `2026-02-30` beside the other problems
        except PolicyError as exc:
            problems += exc.problems
            continue
        # a key that is not text (`null:`, `true:`, `0x10:`, a date), in a case or in the data
        # it gives, at its own place and as written, as in a policy: no case reads it as Python's
        # `None`, `True` or `16` (review R57 #1)
        typed_key = doc.typed_key_problem()
        if typed_key is not None:
            problems += doc.beside_unread([typed_key])
            continue
        if isinstance(doc.data, dict) and doc.data.get("tests") == []:
            empty.append(problem(doc.locate(("tests",)), "$.tests", "this file has no test cases"))
        own: list[str] = []
        cases += [(doc.path, c) for c in read_cases(doc, policy, now, own)]
        problems += doc.beside_unread(own)
    return cases, empty


def test_file_problems(paths: Sequence[Path], policy: PolicySet | None, now: datetime) -> list[str]:
    """The problems of the test files `paths`, each case checked as `run_policy_tests` checks
    it (rule ids against `policy` when given), none run: what `auditor policy lint` adds for
    them."""
    problems: list[str] = []
    read_test_files(paths, policy, now, problems)
    return problems


class _CaseReader:
    """Validates the cases of one test file, reporting problems with positions."""

    def __init__(self, doc: YamlDocument, policy: PolicySet | None, problems: list[str]) -> None:
        self.doc = doc
        self.policy = policy
        self.problems = problems

    def fail(self, where: tuple[str | int, ...], message: str, *, key: bool = False) -> None:
        loc = self.doc.locate(where, key=key)
        self.problems.append(problem(loc, render(where), message))

    def case(self, index: int, raw: Any, now: datetime) -> Case | None:
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
        if "name" in raw:
            self._name(raw["name"], (*where, "name"))
        expect = self._expect(raw["expect"], (*where, "expect"))
        self._judged(raw, (*where, "expect"))
        moment = self._now(raw.get("now"), (*where, "now"), now)
        inputs = self._inputs(raw, where, moment)
        if len(self.problems) > count or inputs is None:
            return None
        documents = tuple(plain(raw[k], self.doc, (*where, k)) for k in _DATA_KEYS if k in raw)
        return Case(_shown_name(raw.get("name"), index), inputs, expect, documents)

    def _name(self, raw: Any, where: tuple[str | int, ...]) -> None:
        """A `name:` given holds one: an empty or null one (a name cut, a template's gap) or
        a list or mapping is refused, as a waiver file refuses an empty field, rather than
        read as `case N` or as Python's text of the list."""
        if isinstance(raw, list | dict):
            self.fail(where, "a test case's `name` must be text, got a list or mapping")
        elif raw is None or not str(raw).strip():
            self.fail(
                where,
                "a test case's `name` must be text, got nothing (empty or null): give it one, "
                "or leave `name:` out for `case N`",
            )

    def _expect(self, raw: Mapping[str, Any], where: tuple[str | int, ...]) -> dict[str, str]:
        known = [r.id for r in self.policy.rules] if self.policy else []
        for rule_id, status in raw.items():
            if self.policy is not None and str(rule_id) not in known:
                self.fail(
                    (*where, rule_id),
                    f"unknown rule id `{rule_id}`{suggest(str(rule_id), known)}",
                    key=True,
                )
            if status == "waived":
                self.fail(
                    (*where, rule_id),
                    "`waived` cannot come out of a test case (a case reads no waivers): expect "
                    "the status the rule gives",
                )
            elif status not in STATUSES:
                self.fail((*where, rule_id), f"{status!r} is not a status ({', '.join(STATUSES)})")
        return {str(k): str(v) for k, v in raw.items()}

    def _judged(self, raw: Mapping[str, Any], where: tuple[str | int, ...]) -> None:
        """Each rule expected is given what its target judges (`settings:` for a settings
        rule, a report or more for a readiness rule …): otherwise it is not evaluated, which
        no expected status can name."""
        if self.policy is None:
            return
        if "usage" in raw:  # a usage case judges its days under its settings, nothing else
            given = {"usage"} | ({"settings"} if "settings" in raw else set())
        else:
            # `reports: []` (or null) gives none: the rules judging them are not evaluated
            held = [k for k in raw if k != "reports" or raw[k] not in (None, [])]
            given = {target for target, keys in _NEEDS.items() if any(k in held for k in keys)}
        for rule_id in raw["expect"]:
            rule = self.policy.rule(str(rule_id))
            if rule is None or rule.target in given:
                continue
            needs = _NEEDS[rule.target]
            keys = " or ".join(f"`{k}:`" for k in needs)
            why = " (a `usage:` case gives only `settings:` and `usage:`)" if "usage" in raw else ""
            gives = f"gives no {keys}"
            if "reports" in needs and "reports" in raw and "usage" not in raw:
                gives = "gives an empty `reports:`, no report"
            self.fail(
                (*where, rule_id),
                f"rule `{rule_id}` has `target: {rule.target}`, and this case {gives} "
                f"to judge it by{why}",
                key=True,
            )

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
    ) -> CaseInputs | None:
        data = {k: self._json(raw[k], (*where, k)) for k in _DATA_KEYS if k in raw}
        if any(v is _BAD for v in data.values()):
            return None
        for key in ("settings", "before", "after"):
            if key in data and not isinstance(data[key], dict):
                # (null ran as no settings at all, so `expect: unknown` passed: T98 #9)
                self.fail(
                    (*where, key),
                    f"`{key}:` is settings, an object (write `{{}}` for empty settings)",
                )
                return None
        settings = _revision(1, data["settings"], raw, now) if "settings" in data else None
        steps: tuple[tuple[Revision, Revision], ...] = ()
        for given, lacking in (("before", "after"), ("after", "before")):
            if given in data and lacking not in data:  # read as `{}` it would judge a change
                self.fail(
                    (*where, given),
                    f"`{given}:` without `{lacking}:`: a change case gives both sides (write "
                    f"`{lacking}: {{}}` for empty settings)",
                    key=True,
                )
                return None
        if "before" in data:
            before = _revision(1, data.get("before", {}), {}, now)
            steps = ((before, _revision(2, data.get("after", {}), raw, now)),)
        listed = data.get("reports")  # (null: none; `{}`, `""`, `false` are no list: refused)
        reports = self._reports([] if listed is None else listed, (*where, "reports"))
        if reports is None:
            return None
        if "usage" in data:
            return self._usage(data, (*where, "usage"), now)
        return CaseInputs(now=now, settings=settings, steps=steps, reports=reports)

    def _usage(
        self, data: Mapping[str, Any], where: tuple[str | int, ...], now: datetime
    ) -> CaseInputs | None:
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
        return CaseInputs(
            now=now,
            settings=history[0] if history else None,
            history=history,
            usage_days=tuple(parsed),
        )

    def _json(self, value: Any, where: tuple[str | int, ...]) -> Any:
        """The YAML value as JSON data, or `_BAD` after reporting why it is not."""
        data = plain(value, self.doc, where)
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


def _shown_name(raw: Any, index: int) -> str:
    """A case's name as `policy test` prints it: one that looks like a secret (a token pasted
    as the name) as `<not shown: looks like a secret>`, like any other value of a policy file
    an output shows; two such names are then the same name (refused: results that cannot be
    told apart)."""
    from auditor.redact.shown import not_shown, ordinary_name

    name = str(raw) if raw is not None else f"case {index + 1}"
    return name if ordinary_name(name) else not_shown(name)


_DATA_KEYS = ("settings", "before", "after", "reports", "usage")
_NEEDS: dict[str, tuple[str, ...]] = {  # what a case gives a rule of each target to judge
    "settings": ("settings",),
    "change": ("before", "after"),
    "readiness": ("reports",),
    "org": ("reports",),
    "usage": ("usage",),
}
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
    # no `author:`: nobody known, as a run's change without one (author rules: on_missing)
    email = str(raw.get("author", ""))
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


def read_cases(
    doc: YamlDocument, policy: PolicySet | None, now: datetime, problems: list[str]
) -> list[Case]:
    reader = _CaseReader(doc, policy, problems)
    raw = doc.data.get("tests") if isinstance(doc.data, dict) else None
    if not isinstance(raw, list):
        reader.fail((), "a policy test file must be a mapping with a `tests:` list")
        return []
    cases = [reader.case(i, item, now) for i, item in enumerate(raw)]
    first: dict[str, int] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            continue  # (its own problem): no name to compare
        # every case's name, one with other problems too: all of them are reported at once
        name = _shown_name(item.get("name"), index)
        if name in first:  # a result named twice cannot be told from the other one
            reader.fail(
                ("tests", index, "name"),
                f"test case name {name!r} is used by case {first[name] + 1} already",
            )
        first.setdefault(name, index)
    return [c for c in cases if c is not None]
