"""Readiness model and computed fields for readiness rules.

Takes `ReadinessReport` records and a `ReadinessModel` (criterion id -> level, loaded from YAML),
gives plain dicts that readiness and org rules read: the report's own fields plus `$score`,
`$level`, `$age_days`, `$clean` and per-criterion `passed` (`readiness_view`), and aggregates
across repositories (`org_view`).

Semantics (documented for users in policies/README.md):
- A criterion whose `numerator` is null is skipped: `passed` is None and it counts nowhere.
- A criterion whose entry is not a score (0 of 0, 5 of 1, not an object) is not evaluable: it
  has no `passed` (a rule on it follows `on_missing`) and counts in no `$score`; `$level` is
  absent (unknown) when it, passing or failing, could change the level (`compute_level`).
- A criterion passes when `numerator == denominator` (for an application-scoped x/N criterion:
  every application passes). Its *credit* is 1 or 0 with `partial_credit: all_or_nothing`
  (the default) and `numerator / denominator` with `partial_credit: fraction`.
- `$score` is the credit sum over evaluated criteria divided by their count (None if none).
- `$level`: every repository starts at the lowest level and reaches level n+1 only when the
  credit share of its evaluated level-n criteria is at least `unlock_threshold` (exact rational
  arithmetic, so 4 of 5 at 0.8 unlocks). A level with no evaluated criteria does not unlock.
- Criterion ids the model does not list are data: they count in `$score`, have level None.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson

from auditor.common.paths import render
from auditor.errors import ConfigError, PolicyError
from auditor.models import JSON, DataWarning, ReadinessReport, SourceLocation
from auditor.operators.timing import FUTURE_SKEW_DAYS, future_detail
from auditor.policy.yamlsafe import FileReadError, YamlDocument, load_yaml, problem, suggest
from auditor.redact.shown import not_shown, ordinary_name

DEFAULT_MODEL_PATH = Path(__file__).resolve().parents[1] / "data" / "readiness-criteria.yaml"
PARTIAL_CREDIT_MODES = ("all_or_nothing", "fraction")
SCOPES = ("repository", "application")
REPORT_FIELDS = (
    "reportId", "repoUrl", "createdAt", "branch", "commitHash", "hasLocalChanges",
    "hasNonRemoteCommits", "modelUsed", "agentVersion", "apps", "report",
)  # fmt: skip
FRESH_WINDOWS = (7, 30, 90)
#: The longest criterion id a model may give (a rule id's limit): each is named in the reports.
MAX_CRITERION_ID = 100
#: Report fields a null in which means the agent did not record them: absent from the view
#: (as for an agent too old to send them), so a rule on them follows its `on_missing`.
UNRECORDED_WHEN_NULL = ("hasLocalChanges", "hasNonRemoteCommits")
_TOP_KEYS = frozenset({"levels", "unlock_threshold", "criteria", "partial_credit"})
_CRITERION_KEYS = frozenset({"level", "scope", "pillar", "skippable"})


@dataclass(frozen=True)
class Criterion:
    """One readiness criterion of the model."""

    id: str
    level: int
    scope: str
    pillar: str
    skippable: bool = False


@dataclass(frozen=True)
class ReadinessModel:
    """Levels, the unlock gate and the criterion table used to compute `$level`."""

    levels: Mapping[int, str]
    unlock_threshold: float
    criteria: Mapping[str, Criterion]
    partial_credit: str = "all_or_nothing"


def load_readiness_model(path: Path | None = None) -> ReadinessModel:
    """Load a readiness model file (None: the shipped default); ConfigError lists each problem
    as `file:line:col: error: $.key: message`. A file that cannot be read at all (missing, a
    directory, too large) is a PolicyError `file:1:1: error: cannot read readiness model: …`,
    as a policy or waiver file that cannot be read is."""
    source = path or DEFAULT_MODEL_PATH
    try:
        doc = load_yaml(source)
    except FileReadError as exc:
        where = SourceLocation(str(source), 1, 1)
        why = f"cannot read readiness model: {exc.reason}"
        raise PolicyError([problem(where, "", why)]) from None
    except PolicyError as exc:
        raise InvalidModel(source, exc.problems) from None
    problems = _Problems(doc)
    model = _parse_model(doc.data, problems)
    if problems.lines or model is None:
        raise InvalidModel(source, problems.lines)
    return model


def refuse_secret_names(
    model: ReadinessModel, read: Callable[[], YamlDocument], remembered: Callable[[str], str]
) -> None:
    """InvalidModel listing, each at its `file:line:col` in the model as `read` gives it (its
    text parsed again only then, to place them: a run's model refuses nothing), every
    criterion id of `model` that holds a secret the state file remembers (that `remembered`,
    `Redactor.scrub_known`, changes): an API key of the audited settings written into an id.
    An id is a name the findings, the readiness rows and the reports go by, shown as written,
    so one holding such a value is refused, as a rule id that holds one is
    (`auditor.policy.redacted`), never shown as a marker. (An id that looks like a secret to
    the value detectors is refused as the model is loaded.)"""
    held = [cid for cid in model.criteria if remembered(cid) != cid]
    if not held:
        return
    doc = read()
    where = [doc.locate(("criteria", cid), key=True) for cid in held]
    problems = [problem(at, "$.criteria", f"the id of this {_KNOWN}") for at in where]
    raise InvalidModel(Path(doc.path), problems)


def with_pillars_redacted(model: ReadinessModel, redact: Callable[[str], str]) -> ReadinessModel:
    """`model` with each pillar as `redact` (`Redactor.redact_shown`) shows it: a pillar is in
    each of its criteria's views, which a rule reads and a finding quotes, and it is prose
    (`Secret Management`), shown as a waiver's reason is, a secret in it (a token pasted
    there, a value the state file remembers) as its marker. The same object when no pillar
    changes."""
    shown = {pillar: redact(pillar) for pillar in {c.pillar for c in model.criteria.values()}}
    if all(text == pillar for pillar, text in shown.items()):
        return model
    criteria = {
        cid: replace(c, pillar=shown[c.pillar]) if shown[c.pillar] != c.pillar else c
        for cid, c in model.criteria.items()
    }
    return replace(model, criteria=criteria)


class InvalidModel(ConfigError):
    """A readiness model with mistakes: its message lists them under `FILE: invalid readiness
    model:`, one a line; `problems` holds them apart, so that a caller lists them as a
    policy's are (each escaped when printed) and never splits the message on its line breaks,
    which the file's name may hold too."""

    def __init__(self, source: Path, problems: Sequence[str]) -> None:
        super().__init__(f"{source}: invalid readiness model:\n" + "\n".join(problems))
        self.source = str(source)
        self.problems = list(problems)


Parts = tuple[str | int, ...]


class _Problems:
    """Model problems, each at the position of the key or value it is about."""

    def __init__(self, doc: YamlDocument) -> None:
        self.doc = doc
        self.lines: list[str] = []

    def add(self, where: Parts, message: str, *, key: bool = False) -> None:
        shown = ".".join(map(str, where))
        text = f"`{shown}`: {message}" if where else message
        self.lines.append(problem(self.doc.locate(where, key=key), render(where), text))

    def add_unnamed(self, where: Parts, message: str) -> None:
        """A problem with the key at `where`, whose name is not shown: the line names the
        mapping holding it (`$.criteria`) and points at the key's `line:col`."""
        loc = self.doc.locate(where, key=True)
        self.lines.append(problem(loc, render(where[:-1]), message))


def _looks_secret(name: str) -> bool:
    """Whether the value detectors take `name` (a criterion id) for a secret, as a policy's
    rule id is judged. An ordinary name
    (`lint_config`, `gitignore_comprehensive`: lowercase words joined by `_` or `-`) loads no
    detector: every run reads the shipped model, whose ids are such names."""
    return not (ordinary_name(name) or _WORDS.fullmatch(name)) and not_shown(name) != name


_WORDS = re.compile(r"[a-z]+(?:[_-][a-z]+)*")
#: Why a criterion id that looks like a secret is refused (a rule id is, in the same words).
_SECRET_CRITERION = (
    "looks like a secret (not shown): a criterion id is a name the reports and the readiness "
    "rows go by, so it cannot be shown as a marker; rename it"
)
#: Why a criterion id holding a remembered secret is refused (`refuse_secret_names`).
_KNOWN = (
    "criterion holds a value the state file remembers as a secret (not shown): a criterion id "
    "is a name the reports and the readiness rows go by, so it cannot be shown as a marker; "
    "rename it"
)


def _parse_model(data: Any, problems: _Problems) -> ReadinessModel | None:
    if not isinstance(data, dict):
        problems.add((), "the file must hold a mapping with `levels` and `criteria`")
        return None
    for key in sorted({problems.doc.key_text((), k) for k in data} - _TOP_KEYS):
        problems.add((key,), f"unknown key{suggest(key, _TOP_KEYS)}", key=True)
    levels = _parse_levels(data.get("levels"), problems)
    threshold = _parse_threshold(data.get("unlock_threshold", 0.8), problems)
    mode = data.get("partial_credit", "all_or_nothing")
    if mode not in PARTIAL_CREDIT_MODES:
        problems.add(("partial_credit",), f"must be one of {list(PARTIAL_CREDIT_MODES)}")
    criteria = _parse_criteria(data.get("criteria"), levels, problems)
    if problems.lines:
        return None
    return ReadinessModel(levels, threshold, criteria, str(mode))


def _parse_levels(raw: Any, problems: _Problems) -> dict[int, str]:
    if not isinstance(raw, dict) or not raw:
        problems.add(("levels",), "must be a non-empty mapping of level number to name")
        return {}
    levels: dict[int, str] = {}
    for key, name in raw.items():
        if isinstance(key, bool) or not isinstance(key, int) or not isinstance(name, str):
            written = problems.doc.key_text(("levels",), key)  # `true`, not Python's `True`
            problems.add(("levels", written), "must map an integer level to a name")
        elif key < 1:  # every repository starts at level 1; `0x0:` named and placed as written
            written = problems.doc.key_text(("levels",), key)
            problems.add(("levels", written), f"a level is 1 or more, got {written}", key=True)
        else:
            levels[key] = name
    if len(levels) == len(raw) and sorted(levels) != list(range(1, len(levels) + 1)):
        got = ", ".join(problems.doc.key_text(("levels",), key) for key in sorted(levels))
        problems.add(
            ("levels",),
            f"levels are numbered 1, 2, … without a gap (a repository starts at level 1 and "
            f"reaches n+1 from n), got [{got}]",
        )
    return dict(sorted(levels.items()))


def _parse_threshold(raw: Any, problems: _Problems) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < raw <= 1:
        problems.add(("unlock_threshold",), "must be a number in (0, 1]")
        return 0.8
    return float(raw)


def _parse_criteria(
    raw: Any, levels: Mapping[int, str], problems: _Problems
) -> dict[str, Criterion]:
    if not isinstance(raw, dict) or not raw:  # (none: every repository would stay at level 1)
        problems.add(
            ("criteria",), "must be a non-empty mapping of criterion id to {level, scope, pillar}"
        )
        return {}
    criteria: dict[str, Criterion] = {}
    for cid, spec in raw.items():
        # a key YAML reads as other than text (`true:`, `0x10:`) named and found as written
        where: Parts = ("criteria", problems.doc.key_text(("criteria",), cid))
        if not isinstance(cid, str):
            problems.add(where, "a criterion id must be a string", key=True)
        elif len(cid) > MAX_CRITERION_ID:  # (not shown: every report would copy it)
            problems.add_unnamed(
                where,
                f"the id of this criterion is {len(cid):,} characters long; a criterion id is "
                f"at most {MAX_CRITERION_ID}, as a rule id is",
            )
        elif _looks_secret(cid):  # nothing else said of it: each line would name it
            problems.add_unnamed(where, f"the id of this criterion {_SECRET_CRITERION}")
        elif not isinstance(spec, dict):
            problems.add(where, "must be a mapping with level, scope, pillar")
        else:
            criteria[cid] = _criterion(cid, spec, levels, problems)
    return criteria


def _criterion(
    cid: str, spec: Mapping[Any, Any], levels: Mapping[int, str], problems: _Problems
) -> Criterion:
    where: Parts = ("criteria", cid)
    for key in sorted({problems.doc.key_text(where, k) for k in spec} - _CRITERION_KEYS):
        problems.add((*where, key), f"unknown key{suggest(key, _CRITERION_KEYS)}", key=True)
    level, scope = spec.get("level"), spec.get("scope", "repository")
    if isinstance(level, bool) or not isinstance(level, int) or level not in levels:
        problems.add((*where, "level"), f"must be one of the levels {list(levels)}")
    if scope not in SCOPES:
        problems.add((*where, "scope"), f"must be one of {list(SCOPES)}")
    if not isinstance(spec.get("skippable", False), bool):
        problems.add((*where, "skippable"), "must be true or false")
    pillar = spec.get("pillar", "")
    if not isinstance(pillar, str):
        problems.add((*where, "pillar"), "must be a string")
    return Criterion(
        cid,
        level if isinstance(level, int) else 0,
        str(scope),
        str(pillar),
        bool(spec.get("skippable", False)),
    )


def _valid(value: Any) -> bool:
    """A finite JSON number (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not isinstance(value, float) or math.isfinite(value)


def _exact(value: int | float) -> int | Fraction:
    """A numerator or denominator as an exact number (a float by its shortest decimal form)."""
    return Fraction(str(value)) if isinstance(value, float) else value


#: The views of plain integer scores, by (numerator, denominator, level, pillar, partial
#: credit), which make the whole view: one object for each, shared by every report and run that
#: has it (views are read, never changed). 500 repositories' newest reports held 36,000 such
#: dicts, 9.6 MB, through the whole evaluation of a first run; a few hundred differ.
_SCORES: dict[tuple[int, int, int | None, str | None, str], dict[str, Any]] = {}
_SCORES_KEPT = 4096


def _criterion_view(cid: str, entry: Any, model: ReadinessModel) -> dict[str, Any]:
    """One criterion: passed/skipped/credit plus the model's level and pillar."""
    known = model.criteria.get(cid)
    level, pillar = (known.level, known.pillar) if known else (None, None)
    if isinstance(entry, dict):
        num, den = entry.get("numerator"), entry.get("denominator")
        # The common case, in integers: plain int fractions (`type` rules out booleans).
        if type(num) is int and type(den) is int and 0 <= num <= den and den > 0:
            key = (num, den, level, pillar, model.partial_credit)
            shared = _SCORES.get(key)
            if shared is not None:
                return shared
            passed = num == den
            credit = (
                float(Fraction(num, den))
                if model.partial_credit == "fraction"
                else (1.0 if passed else 0.0)
            )
            view = {
                "passed": passed, "numerator": num, "denominator": den, "skipped": False,
                "credit": credit, "level": level, "pillar": pillar,
            }  # fmt: skip
            if len(_SCORES) < _SCORES_KEPT:
                _SCORES[key] = view
            return view
    if not isinstance(entry, dict):
        return _not_evaluable(None, None, level, pillar, "criterion entry is not an object")
    return _odd_score(entry.get("numerator"), entry.get("denominator"), level, pillar, model)


def _odd_score(
    num: Any, den: Any, level: int | None, pillar: str | None, model: ReadinessModel
) -> dict[str, Any]:
    """`_criterion_view` of a score that is not two plain integers: skipped (a null
    numerator), not evaluable, or in floats."""
    if num is None:
        return {
            "passed": None, "numerator": None, "denominator": den, "skipped": True,
            "credit": None, "level": level, "pillar": pillar,
        }  # fmt: skip
    # Plain comparisons: Python compares ints and floats exactly, so no Fraction is needed.
    if not (_valid(num) and _valid(den)) or den <= 0 or not 0 <= num <= den:
        return _not_evaluable(num, den, level, pillar, NOT_A_SCORE)
    out: dict[str, Any] = {
        "passed": num == den, "numerator": num, "denominator": den, "skipped": False,
        "credit": None, "level": level, "pillar": pillar,
    }  # fmt: skip
    out["credit"] = float(_credit(out, model))
    return out


NOT_A_SCORE = "numerator/denominator must be numbers with 0 <= numerator <= denominator"


def _not_evaluable(
    num: Any, den: Any, level: int | None, pillar: str | None, problem: str
) -> dict[str, Any]:
    """A criterion whose entry is not a score: it has no `passed` (nor `credit`), so a rule
    on `criteria.<id>.passed` follows its `on_missing` (`unknown` in the shipped pack) rather
    than failing on a null, and `problem` says why. It counts in no `$score`; the `$level` is
    unknown where its pass or fail could change it (`compute_level`)."""
    return {
        "numerator": num, "denominator": den, "skipped": False, "level": level,
        "pillar": pillar, "problem": problem,
    }  # fmt: skip


def _criteria(data: Any, model: ReadinessModel) -> dict[str, dict[str, Any]]:
    report = data.get("report") if isinstance(data, dict) else None
    if not isinstance(report, dict):
        return {}
    return {str(cid): _criterion_view(str(cid), entry, model) for cid, entry in report.items()}


def _credit(entry: Mapping[str, Any], model: ReadinessModel) -> int | Fraction:
    """Exact credit of an evaluated criterion: 1/0 (integers, the default mode), or
    numerator/denominator in fraction mode (the only place a Fraction is built)."""
    if model.partial_credit == "fraction":
        return Fraction(_exact(entry["numerator"])) / _exact(entry["denominator"])
    return 1 if entry["passed"] else 0


def _evaluated(criteria: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [c for c in criteria.values() if c.get("passed") is not None]


def _credit_sum(entries: Sequence[Mapping[str, Any]], model: ReadinessModel) -> int | Fraction:
    return sum(_credit(c, model) for c in entries)


def compute_score(criteria: Mapping[str, Mapping[str, Any]], model: ReadinessModel) -> float | None:
    """Credit share over evaluated criteria (skipped and malformed ones excluded)."""
    evaluated = _evaluated(criteria)
    # int / int is correctly rounded, exactly as float(Fraction(total, count)) would be.
    return float(_credit_sum(evaluated, model) / len(evaluated)) if evaluated else None


def compute_level(criteria: Mapping[str, Mapping[str, Any]], model: ReadinessModel) -> int | None:
    """Readiness level by the model's gate; the lowest level when nothing unlocks; None
    (unknown) when a criterion of the model that is not evaluable (`_not_evaluable`) could
    change it, passing or failing."""
    if not any("problem" in c for c in criteria.values()):  # (most reports: one walk)
        return _level_with(criteria, model, False)
    low, high = (_level_with(criteria, model, passed) for passed in (False, True))
    return low if low == high else None


def _level_with(
    criteria: Mapping[str, Mapping[str, Any]], model: ReadinessModel, open_passes: bool
) -> int:
    """The level with every not-evaluable criterion of the model counted as passing (full
    credit) or failing (none): the highest and the lowest level the report can have."""
    order = sorted(model.levels)
    gate = _gate(model.unlock_threshold)
    evaluated = _evaluated(criteria)
    level = order[0]
    for current, following in pairwise(order):
        at_level = [c for c in evaluated if c["level"] == current]
        opened = sum(1 for c in criteria.values() if "problem" in c and c["level"] == current)
        if not at_level and not opened:
            break
        credit = _credit_sum(at_level, model) + (opened if open_passes else 0)
        # credit / count < num / den, cross-multiplied: exact, in integers in the default mode
        if credit * gate[1] < (len(at_level) + opened) * gate[0]:
            break
        level = following
    return level


def _score_and_level(
    criteria: Mapping[str, Mapping[str, Any]], model: ReadinessModel
) -> tuple[float | None, int | None]:
    """`compute_score` and `compute_level` in one pass: in the default all-or-nothing mode a
    criterion's credit is 1 or 0, so both are sums of integers counted per level."""
    if model.partial_credit != "all_or_nothing":
        return compute_score(criteria, model), compute_level(criteria, model)
    counts: dict[Any, list[int]] = {}  # level -> [evaluated, passed, not evaluable]
    for c in criteria.values():
        passed = c.get("passed")
        if passed is None and "problem" not in c:
            continue  # skipped
        tally = counts.get(c["level"])
        if tally is None:
            tally = counts[c["level"]] = [0, 0, 0]
        if passed is None:
            tally[2] += 1
        else:
            tally[0] += 1
            tally[1] += passed is True
    evaluated = sum(t[0] for t in counts.values())
    score = sum(t[1] for t in counts.values()) / evaluated if evaluated else None
    low = _tallied_level(counts, model, False)
    if not any(t[2] for t in counts.values()):
        return score, low  # nothing is open: as in every report that is all scores
    return score, low if low == _tallied_level(counts, model, True) else None


def _tallied_level(
    counts: Mapping[Any, list[int]], model: ReadinessModel, open_passes: bool
) -> int:
    """`_level_with` from `_score_and_level`'s tallies, in integers."""
    order = sorted(model.levels)
    num, den = _gate(model.unlock_threshold)
    level = order[0]
    for current, following in pairwise(order):
        tally = counts.get(current)
        if tally is None:
            break
        passed = tally[1] + (tally[2] if open_passes else 0)
        if passed * den < (tally[0] + tally[2]) * num:
            break
        level = following
    return level


@functools.lru_cache(maxsize=8)
def _gate(threshold: float) -> tuple[int, int]:
    """The unlock threshold as an exact ratio (numerator, denominator) of its decimal form."""
    exact = Fraction(str(threshold))
    return exact.numerator, exact.denominator


def compute_clean(data: Mapping[str, Any]) -> bool | None:
    """False if local changes or unpushed commits; True if both known absent; else None."""
    flags = [data.get("hasLocalChanges"), data.get("hasNonRemoteCommits")]
    if any(flag is True for flag in flags):
        return False
    if all(flag is False for flag in flags):
        return True
    return None


def readiness_view(
    report: ReadinessReport, model: ReadinessModel, now: datetime
) -> dict[str, JSON]:
    """The document readiness rules see: report fields, computed `$` fields and `criteria`."""
    return _view(report, model, now, None, None)


#: Criterion ids a view's `criteria` must hold: None for all of them.
Wanted = Collection[str] | None


class Grades:
    """`$score` and `$level` of report contents, by content hash, under one readiness model:
    `known` read back from an earlier run (see `incremental.load_grades`, which checks their
    form), `used` those of the views made now (what is kept for the next run). A report of
    the same content hash has the same criteria, so under the same model its grades stand;
    its criteria are then worked out only where a rule reads them (`criteria_read`)."""

    def __init__(self, known: Mapping[str, tuple[float | None, int]] | None = None) -> None:
        self.known = known or {}
        self.used: dict[str, tuple[float | None, int]] = {}


def _view(
    report: ReadinessReport, model: ReadinessModel, now: datetime, wanted: Wanted,
    grades: Grades | None,
) -> dict[str, Any]:  # fmt: skip
    """`readiness_view` whose `criteria` holds at least the `wanted` ones (every one when
    None), its `$score` and `$level` taken from `grades` when they are known there."""
    data: Mapping[str, Any] = report.data if isinstance(report.data, dict) else {}
    view: dict[str, Any] = {key: data[key] for key in REPORT_FIELDS if key in data}
    for flag in UNRECORDED_WHEN_NULL:  # null: the agent did not record it, so it is absent
        if flag in view and view[flag] is None:
            del view[flag]
    view.setdefault("repoUrl", report.repo_url)
    view.setdefault("reportId", report.report_id)
    graded: tuple[float | None, int | None] | None = (
        grades.known.get(report.content_hash) if grades is not None else None
    )
    if graded is not None and graded[1] not in model.levels:
        graded = None  # not a level of this model: worked out again
    if wanted is None or graded is None:
        criteria = _criteria(data, model)
        graded = _score_and_level(criteria, model) if graded is None else graded
    else:
        criteria = _some_criteria(data, model, wanted)
    score, level = graded
    if grades is not None and level is not None:  # an unknown level is worked out each time
        grades.used[report.content_hash] = (score, level)
    view["criteria"] = criteria
    view["$score"] = score
    if level is not None:  # unknown (`compute_level`): absent, so a rule on it is `on_missing`
        view["$level"] = level
    # In days to two decimals (a quarter of an hour): what a report says of a report's age
    # (`$age_days is 35.98`) stays the same for runs minutes apart, not to the microsecond.
    # A report dated more than FUTURE_SKEW_DAYS after `now` has no age (null): a negative one
    # would read as fresh, so a rule on it is an error, as `within_days` on that time is.
    age = (now - report.created_at).total_seconds() / 86400
    view["$age_days"] = None if age < -FUTURE_SKEW_DAYS else round(age, 2)
    view["$clean"] = compute_clean(data)
    return view


def _some_criteria(
    data: Mapping[str, Any], model: ReadinessModel, wanted: Collection[str]
) -> dict[str, dict[str, Any]]:
    """The `wanted` entries of `_criteria(data, model)` (a path into `criteria` sees only
    its own entry)."""
    report = data.get("report")
    if not isinstance(report, dict):
        return {}
    return {cid: _criterion_view(cid, report[cid], model) for cid in wanted if cid in report}


def criteria_read(reads: Iterable[tuple[str, ...]]) -> frozenset[str] | None:
    """The criterion ids paths with these leading keys (`memo.rule_reads`) can see in a
    view: None when one of them can see all of `criteria` (it reads the whole view, all of
    `criteria`, or a path with a wildcard or an index right below it)."""
    wanted: set[str] = set()
    for deps in reads:
        if not deps or (deps[0] == "criteria" and len(deps) < 2):
            return None
        if deps[0] == "criteria":
            wanted.add(deps[1])
    return frozenset(wanted)


def model_digest(model: ReadinessModel) -> str:
    """A digest of everything of `model` that grades depend on (the whole model)."""
    shape = [
        sorted(model.levels.items()),
        repr(model.unlock_threshold),
        [[c.id, c.level, c.scope, c.pillar, c.skippable] for c in model.criteria.values()],
        model.partial_credit,
    ]
    return hashlib.sha256(orjson.dumps(shape)).hexdigest()


View = tuple[ReadinessReport, dict[str, Any]]


def future_dated(report: ReadinessReport, now: datetime) -> str | None:
    """Why `report` cannot be judged when it is dated more than FUTURE_SKEW_DAYS after `now`
    (its `$age_days` is null), else None. Such a report is read only for a repository that
    has no other (`latest_per_repo`), so none of its readiness rules is judged on it: each is
    an `error` saying this."""
    if (now - report.created_at).total_seconds() / 86400 >= -FUTURE_SKEW_DAYS:
        return None
    return (
        f"report {report.report_id}: createdAt {future_detail(report.created_at, now)}, so it "
        "is not judged (its repository has no report dated before it)"
    )


def latest_per_repo(
    reports: Iterable[ReadinessReport], now: datetime | None = None
) -> list[ReadinessReport]:
    """The newest report of each repository (ties broken by report id), sorted by repo URL.
    With `now`: a report dated more than FUTURE_SKEW_DAYS after it is taken only for a
    repository that has no other (a date no clock can have yet would otherwise hide every
    real report of its repository, night after night)."""
    latest: dict[str, ReadinessReport] = {}
    ahead: dict[str, ReadinessReport] = {}
    for report in reports:
        into = latest if now is None or future_dated(report, now) is None else ahead
        held = into.get(report.repo_url)
        if held is None or (report.created_at, report.report_id) > (
            held.created_at,
            held.report_id,
        ):
            into[report.repo_url] = report
    for url, report in ahead.items():
        latest.setdefault(url, report)
    return [latest[url] for url in sorted(latest)]


def skipped_future(
    reports: Iterable[ReadinessReport], used: Iterable[ReadinessReport], now: datetime
) -> list[DataWarning]:
    """A data-quality warning for each report of `reports` dated more than FUTURE_SKEW_DAYS
    after `now` that `latest_per_repo` passed over for an earlier one of its repository."""
    taken = {r.repo_url: r for r in used}
    warnings = []
    for report in reports:
        held = taken.get(report.repo_url)
        if held is None or held is report or future_dated(report, now) is None:
            continue
        problem = (
            f"createdAt {future_detail(report.created_at, now)}: not used; the repository's "
            f"newest report dated before it (report {held.report_id}) is"
        )
        warnings.append(
            DataWarning(
                "$.createdAt", problem, f"report {report.report_id}", "stored readiness reports"
            )
        )
    return warnings


#: The views of the last `repo_views` call: (reports, model, now, criteria held) -> views. One
#: entry, holding its inputs, so the engine, the org view and the report's readiness rows
#: share one computation per repository and per run.
_LAST_VIEWS: list[
    tuple[Sequence[ReadinessReport], ReadinessModel, datetime, frozenset[str] | None, list[View]]
] = []


def repo_views(
    reports: Sequence[ReadinessReport],
    model: ReadinessModel,
    now: datetime,
    criteria: Wanted = (),
    grades: Grades | None = None,
) -> list[View]:
    """(report, `readiness_view`) of each repository's newest report, by repository URL;
    computed once for the same reports, model and time (the sequence object itself).

    A view's `criteria` holds at least the `criteria` ids asked for (all of them with None):
    the `$` fields (what the report rows and the org view read) never need the others once
    a report's grades are known (`grades`: read back, and filled with this run's)."""
    for held, held_model, held_now, held_criteria, views in _LAST_VIEWS:
        covered = held_criteria is None or (criteria is not None and set(criteria) <= held_criteria)
        if held is reports and held_model is model and held_now == now and covered:
            return views
    wanted = None if criteria is None else frozenset(criteria)
    views = [(r, _view(r, model, now, wanted, grades)) for r in latest_per_repo(reports, now)]
    # Views made without grades held every criterion.
    _LAST_VIEWS[:] = [(reports, model, now, wanted if grades is not None else None, views)]
    return views


def release_views() -> None:
    """Let go of the views `repo_views` keeps (once the run's report data has its rows)."""
    _LAST_VIEWS.clear()


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def org_view(
    reports: Sequence[ReadinessReport], model: ReadinessModel, now: datetime
) -> dict[str, Any]:
    """Aggregates over each repository's latest report (the `org` target's document)."""
    pairs = repo_views(reports, model, now)
    views = [view for _, view in pairs]
    # A repository whose level is unknown (a criterion that is not evaluable could change it)
    # counts with the lowest and the highest level it can have: an aggregate is given when
    # both agree, and is absent (so a rule on it follows its `on_missing`) when they do not.
    bounds = [_bounds(view, model) for view in views]
    # a repository whose level is unknown is left out of `levels` (a rule reading its key
    # follows `on_missing`, as on `$level`; a null there made `gte` an error)
    levels = {r.repo_url: v["$level"] for r, v in pairs if v.get("$level") is not None}
    total = len(views)
    ages = [v["$age_days"] for v in views if v["$age_days"] is not None]
    out: dict[str, Any] = {}
    low, high = (math.floor(sum(b[i] for b in bounds) / total) if total else None for i in (0, 1))
    if low == high:
        out["$level"] = low
    out |= {
        "repo_count": total,
        "levels": levels,
        "clean_share": _share(sum(1 for v in views if v["$clean"] is True), total),
        # A report dated after now (`$age_days` null) is neither the oldest nor fresh.
        "oldest_report_days": max(ages, default=None),
    }
    for days in FRESH_WINDOWS:
        fresh = sum(1 for age in ages if age <= days)
        out[f"fresh_share_{days}d"] = _share(fresh, total)
    for level in sorted(model.levels)[1:]:
        surely, maybe = (sum(1 for b in bounds if b[i] < level) for i in (1, 0))
        if surely == maybe:
            out[f"below_level_{level}"] = surely
    return out


def _bounds(view: Mapping[str, Any], model: ReadinessModel) -> tuple[int, int]:
    """The lowest and highest level of a repository's view: its `$level` twice when known."""
    level = view.get("$level")
    if isinstance(level, int):
        return level, level
    criteria = view["criteria"]  # every criterion: an unknown level is never read back
    return _level_with(criteria, model, False), _level_with(criteria, model, True)


#: The item `unreported_criteria`'s warnings are about (the command says them on stderr too).
MODEL_ITEM = "the readiness model"

#: Most model criteria `unreported_criteria` names one by one (one more warning counts the rest).
MAX_UNREPORTED = 10


def unreported_criteria(
    model: ReadinessModel, reports: Sequence[ReadinessReport]
) -> list[DataWarning]:
    """A data-quality warning for each criterion of `model` that none of `reports` (each
    repository's newest, the ones the run grades) holds, with a "did you mean" among the
    criterion ids the reports hold that the model does not list: a misspelt id in a
    `--readiness-model` file would otherwise drop its criterion from every level, silently.
    Nothing without reports (there is nothing to compare with)."""
    if not reports:
        return []
    unseen = set(model.criteria)
    for report in reports:  # as a rule the first report or two hold every criterion
        entries = report.data.get("report") if isinstance(report.data, dict) else None
        if isinstance(entries, dict):
            unseen.difference_update(entries)
            if not unseen:
                return []
    held: set[str] = set()
    for report in reports:
        entries = report.data.get("report") if isinstance(report.data, dict) else None
        if isinstance(entries, dict):
            held.update(map(str, entries))
    missing = [cid for cid in model.criteria if cid in unseen]
    if not missing:  # a model without criteria
        return []
    count = f"{len(reports)} report{'s' if len(reports) != 1 else ''}"
    where = MODEL_ITEM
    page = "each repository's newest readiness report"
    effect = "it counts in no repository's level, as a criterion a report lacks never does"
    if len(missing) == len(model.criteria):
        problem = (
            f"none of the model's {len(missing)} criteria is in any of the {count} the run "
            f"grades (a model for other reports?): every repository stays at level "
            f"{min(model.levels)}"
        )
        return [DataWarning("$.criteria", problem, where, page)]
    others = held - set(model.criteria)
    warnings = [
        DataWarning(
            render(("criteria", cid)),
            f"criterion in none of the {count} the run grades{suggest(cid, others)}; {effect}",
            where,
            page,
        )
        for cid in missing[:MAX_UNREPORTED]
    ]
    if len(missing) > MAX_UNREPORTED:
        rest = len(missing) - MAX_UNREPORTED
        problem = f"{rest} more criteria of the model are in none of the {count}, not named"
        warnings.append(DataWarning("$.criteria", problem, where, page))
    return warnings
