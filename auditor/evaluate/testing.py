"""`auditor policy test`: test cases kept beside the rules, like `conftest verify`.

Takes policy paths (files or folders) and finds `<name>.tests.yaml` beside `<name>.yaml`; gives
one `CaseResult` per case (expected vs actual status per rule id). Invalid test files (unknown
keys, unknown rule ids, malformed `now`, a rule expected of a case that gives nothing for its
target to judge) raise PolicyError with `file:line:col`; `test_file_problems` lists them
without running anything (`auditor policy lint`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from auditor.diff import DEFAULT_LIST_TABLE, ListTable
from auditor.errors import PolicyError
from auditor.evaluate.engine import evaluate
from auditor.evaluate.model import EvaluationInputs, UsageInputs
from auditor.evaluate.projection import NON_FINITE_POSSIBLE
from auditor.fetch.analytics import DAY_SERIES, USERS
from auditor.fetch.tolerant import tolerate
from auditor.models import DataWarning
from auditor.policy.cases import Case, CaseInputs, find_test_files, read_test_files
from auditor.policy.loader import PolicySet, load_policies, sort_problems
from auditor.policy.redacted import hidden_literals
from auditor.redact import Redactor
from auditor.redact.shown import NOT_SHOWN, ordinary_name

__all__ = ["CaseResult", "run_policy_tests"]

NO_CASES = "no test cases found (<name>.tests.yaml beside <name>.yaml)"


@dataclass(frozen=True)
class CaseResult:
    """One test case: its file, name, and the mismatches (empty when it passed); `warnings`:
    what a sync would have said of the case's usage rows (odd values read as absent)."""

    file: str
    name: str
    mismatches: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when every expected status matched."""
        return not self.mismatches


def run_policy_tests(
    paths: Sequence[Path], *, now: datetime, list_table: ListTable = DEFAULT_LIST_TABLE
) -> list[CaseResult]:
    """Load the policies and their test files, run every case; PolicyError if any is invalid.
    `list_table`: how a change case's lists compare (`diff_keys` of the configuration read), as
    `run` and `review` compare them."""
    test_paths, policy_paths = find_test_files(paths)
    problems: list[str] = []
    try:
        policy: PolicySet | None = load_policies(policy_paths)
    except PolicyError as exc:
        problems += exc.problems
        policy = None
    cases, empty = read_test_files(test_paths, policy, now, problems)
    if problems or policy is None:
        raise PolicyError(sort_problems(problems))
    if not cases:
        shown = ", ".join(map(str, paths)) or "."
        raise PolicyError(sort_problems(empty) or [f"{shown}: error: {NO_CASES}"])
    may_hold = NON_FINITE_POSSIBLE.set(True)  # YAML reads `.nan` and `.inf`
    try:
        literals = hidden_literals(policy)  # once: the same for every case
        # every rule's, longest first: hidden in a case's name (no rule's line)
        every = tuple(sorted({t for found in literals.values() for t in found}, key=len))[::-1]
        return [_run(policy, literals, every, file, case, list_table) for file, case in cases]
    finally:
        NON_FINITE_POSSIBLE.reset(may_hold)


def _run(
    policy: PolicySet,
    literals: Mapping[str, tuple[str, ...]],
    every: tuple[str, ...],
    file: str,
    case: Case,
    list_table: ListTable = DEFAULT_LIST_TABLE,
) -> CaseResult:
    """`case` judged by `policy`; `literals`: per rule id, the secret literals hidden in that
    rule's mismatch line (`hidden_literals`); `every`: all of them, longest first, hidden in
    the case's name."""
    wanted = tuple(r for r in policy.rules if r.id in case.expect)
    warned: list[DataWarning] = []
    inputs = replace(_evaluation_inputs(case.inputs, warned), list_table=list_table)
    result = evaluate(replace(policy, rules=wanted), inputs)
    # a value the case's data holds is a marker in them, as in a mismatch
    warnings = _unshown([f"{w.path}: {w.problem}" for w in warned], case.documents)
    mismatches: list[tuple[str, str]] = []  # (rule id, line)
    for rule_id, expected in case.expect.items():
        got = [r for r in result.results if r.rule.id == rule_id]
        statuses: list[str] = sorted({r.status for r in got}) or ["not evaluated"]
        if statuses != [expected]:
            why = "; ".join(dict.fromkeys(r.message for r in got))
            why = why if len(why) <= 200 else why[:199] + "…"  # a cut is marked (`_cut_ones`)
            shown = ", ".join(statuses)
            line = f"{rule_id}: expected {expected}, got {shown}" + (f" ({why})" if why else "")
            mismatches.append((rule_id, line))
    name = _literals_unshown(case.name, every)
    if not mismatches and ordinary_name(name):  # nothing to redact: no redactor made
        return CaseResult(file, name, warnings=warnings)
    redactor = _case_redactor(case.documents)
    # a literal the rule compares with a value secret by its place (a leaked key listed to be
    # refused) is its marker in the rule's line, as in a run's reports, learned by nothing
    lines = [
        _literals_hidden(line, literals.get(rule_id, ()), redactor) for rule_id, line in mismatches
    ]
    return CaseResult(
        file,
        _unshown_name(name, redactor),
        _unshown(lines, case.documents, redactor),
        warnings,
    )


def _literals_unshown(name: str, every: tuple[str, ...]) -> str:
    """A case's name with each secret literal of the policy (`every`, longest first: a leaked
    key a rule checks for) in it as `<not shown: looks like a secret>`, as one of the case's
    secrets reads there (`_unshown_name`)."""
    for literal in every:
        if literal in name:
            name = name.replace(literal, NOT_SHOWN)
    return name


def _literals_hidden(line: str, literals: tuple[str, ...], redactor: Redactor) -> str:
    """`line` with each of `literals` (its rule's secret literals) as its marker under the
    case's key (`Redactor.literals_hidden`), the start of one a cut left before a `…` too."""
    hide = redactor.literals_hidden(literals) if literals else None
    return line if hide is None else hide(_cut_ones(line, literals, redactor))


def _evaluation_inputs(given: CaseInputs, warned: list[DataWarning]) -> EvaluationInputs:
    if given.usage_days is None:
        return EvaluationInputs(
            now=given.now, settings=given.settings, steps=given.steps, reports=given.reports
        )
    days = _as_synced(given.usage_days, warned.append)
    usage = UsageInputs(days=days, first_judged=days[-1][0])
    return EvaluationInputs(
        now=given.now, settings=given.settings, history=given.history, usage=usage
    )


def _as_synced(
    days: Sequence[tuple[str, Mapping[str, Any]]], warn: Callable[[DataWarning], None]
) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    """The case's usage days (given "as the API returns its rows") read as a sync reads the
    API's rows: each row through the tolerant reader with its series' schema
    (`auditor.fetch.tolerant.tolerate`, as `AnalyticsReader` calls it), so an odd value (a
    negative count, a count as text) is read as absent, as in a run, and warned of (`warn`,
    paths from the case's `usage`)."""
    out = []
    for i, (day, series) in enumerate(days):
        at = "usage" if len(days) == 1 else f"usage[{i}]"
        read = dict(series)
        for name in DAY_SERIES:
            row = series.get(name)
            if isinstance(row, dict):
                read[name] = _read_row(row, name, day, f"{at}.{name}", f"{name} {day}", warn)
        users = series.get(USERS)
        if isinstance(users, list):
            read[USERS] = [
                _read_row(u, USERS, day, f"{at}.users[{n}]", f"user {u.get('user_id')}", warn)
                if isinstance(u, dict)
                else u
                for n, u in enumerate(users)
            ]
        out.append((day, read))
    return tuple(out)


def _read_row(
    row: Mapping[str, Any],
    series: str,
    day: str,
    base: str,
    item: str,
    warn: Callable[[DataWarning], None],
) -> Any:
    """One row as the sync reads it. A case's row may leave out `date` (its day's): the
    API's always has it, so it is given for the reading and taken out again after."""
    given = dict(row) if "date" in row else {"date": day, **row}
    read = tolerate(given, f"api-analytics-{series}.schema.json", base, item, warn)
    if "date" not in row:
        read = {k: v for k, v in read.items() if k != "date"}
    return read


def _case_redactor(documents: tuple[Any, ...]) -> Redactor:
    """A redactor that has redacted the case's data as a run redacts what it stores (where
    secrets live, by key name, by value), so its memory holds every secret the data has. The
    key is made for this case alone: its markers are compared with nothing."""
    redactor = Redactor(secrets.token_bytes(32))
    for document in documents:
        redactor.redact_json(document)
    return redactor


def _unshown_name(name: str, redactor: Redactor) -> str:
    """The case's name (already without what the detectors see, `cases._shown_name`) with
    every secret of the case's data in it (`rotated key <its apiKey>`) as
    `<not shown: looks like a secret>`, as a name that looks like a secret reads: beside the
    value's marker in a mismatch it would say what the marker stands for."""
    found = redactor.memory.find(name)
    for secret in sorted(found, key=len, reverse=True):
        name = name.replace(secret, NOT_SHOWN)
    # one written encoded (URL-encoded, base64) is found by what it decodes to: its marker
    return redactor.redact_text(name) if found and redactor.memory.find(name) else name


def _unshown(
    mismatches: list[str], documents: tuple[Any, ...], redactor: Redactor | None = None
) -> tuple[str, ...]:
    """The mismatches with every secret of the case's data `documents` replaced by its marker
    (`redactor`: one that redacted them already, `_case_redactor`): a rule's message quotes
    the value it judged (`apiKey is "…"`), so a value a run would never show is not printed
    here either."""
    if not mismatches:
        return ()
    redactor = _case_redactor(documents) if redactor is None else redactor
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
