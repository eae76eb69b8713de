"""What the evaluate stage takes and gives: inputs, one result per (rule, subject), the whole."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from auditor.diff import DEFAULT_LIST_TABLE, ListTable
from auditor.evaluate.readiness import ReadinessModel
from auditor.models import (
    JSON,
    Attribution,
    Evidence,
    ReadinessReport,
    Revision,
    Status,
    Subject,
    Waiver,
)
from auditor.policy.model import Rule
from auditor.store.evalstate import States


@dataclass(frozen=True, slots=True, init=False)
class RuleResult:
    """The outcome of one rule on one subject. `raw_status` is the status before waivers."""

    rule: Rule
    subject: Subject
    status: Status
    message: str
    evidence: tuple[Evidence, ...] = ()
    raw_status: Status | None = None  # set when a waiver changed `status`
    waiver: Waiver | None = None
    since: Attribution | None = None

    def __init__(
        self,
        rule: Rule,
        subject: Subject,
        status: Status,
        message: str,
        evidence: tuple[Evidence, ...] = (),
        raw_status: Status | None = None,
        waiver: Waiver | None = None,
        since: Attribution | None = None,
    ) -> None:
        # The dataclass's own `__init__` as it would be, with each slot filled by its
        # descriptor instead of `object.__setattr__` (a frozen class's way): half the time,
        # and a run makes one result per rule and subject (9,000 a nightly, 100,000s with
        # `--all-revisions`), every night, also those read back from the evaluation state.
        rule_, subject_, status_, message_, evidence_, raw_, waiver_, since_ = _RESULT_SLOTS
        rule_(self, rule)
        subject_(self, subject)
        status_(self, status)
        message_(self, message)
        evidence_(self, evidence)
        raw_(self, raw_status)
        waiver_(self, waiver)
        since_(self, since)

    @property
    def original_status(self) -> Status:
        """The status before any waiver applied."""
        return self.raw_status or self.status


_RESULT_SLOTS: tuple[Callable[[RuleResult, Any], None], ...] = tuple(
    getattr(RuleResult, name).__set__
    for name in (
        "rule", "subject", "status", "message", "evidence", "raw_status", "waiver", "since",
    )
)  # fmt: skip


@dataclass(frozen=True)
class UsageInputs:
    """The stored analytics days the `usage` rules read (`auditor.evaluate.usage`), or why
    there are none."""

    days: tuple[tuple[str, Mapping[str, JSON]], ...] = ()  # (YYYY-MM-DD, {series: data}) ascending
    unavailable: str = ""  # why usage cannot be evaluated (403, never synced); empty when fine
    window: tuple[str, str] | None = None  # the window the days were chosen from
    first_judged: str = ""  # days before this one only feed the trailing median


@dataclass(frozen=True)
class EvaluationInputs:
    """Everything one evaluation looks at. Built by the cli; evaluated by `auditor.evaluate`."""

    now: datetime
    settings: Revision | None = None  # the revision under test (latest / --at / proposed)
    # `history` and `steps` are re-iterable (a tuple, or a view that streams anew on each
    # iteration, e.g. over the store), so a long history is never held in memory.
    history: Iterable[Revision] | None = None  # ascending; for attribution and --all-revisions
    all_revisions: bool = False
    steps: Iterable[tuple[Revision, Revision]] = ()  # (before, after) pairs for change rules
    reports: tuple[ReadinessReport, ...] = ()
    readiness_model: ReadinessModel | None = None  # None: the shipped model
    list_table: ListTable = DEFAULT_LIST_TABLE  # how change documents diff lists (`diff_keys`)
    memoise: bool = True  # reuse a verdict when a rule's inputs repeat (results are identical)
    usage: UsageInputs | None = None  # analytics days for `usage` rules (None: none stored)
    # Incremental evaluation (see `auditor.evaluate.incremental`): `prior` is the state an
    # earlier run left, by rule key, computed over a prefix of this same history (the caller
    # checks that); `tail(n)` streams the history from revision n on; `revision_numbers` are
    # every revision number of `history` (ascending). `remember` asks for the new state.
    prior: Mapping[str, bytes] = field(default_factory=dict)
    tail: Callable[[int], Iterable[Revision]] | None = None
    # `history` from the revision in force at the given time on (usage rules read only the
    # last weeks); None: walk all of `history`.
    history_from: Callable[[datetime], Iterable[Revision]] | None = None
    revision_numbers: Sequence[int] | None = None
    remember: bool = False
    # Raises (`Store.check_rows_kept`'s StoreError, "… is damaged") when the stored history
    # lost rows its syncs stored (deleted behind auditor's back); called only of a history of
    # one revision. None: a history given whole.
    check_history: Callable[[], None] | None = None


@dataclass(frozen=True)
class Evaluation:
    """All results of one evaluation plus what could not be evaluated."""

    results: tuple[RuleResult, ...]
    not_evaluated: tuple[str, ...] = ()  # human-readable reasons; non-empty means incomplete
    failing_by_revision: Sequence[tuple[int, int]] = ()  # (revision, failing rule count)
    #: each settings rule's failing stretches, by rule id: (first revision failing, first
    #: revision no longer failing or None), for telling how many of `failing_by_revision`'s
    #: a waiver covers (`auditor.findings.waivers.waived_counts`)
    failing_spans: tuple[tuple[str, tuple[tuple[int, int | None], ...]], ...] = ()
    # With `remember`: each stored rule's state at `state_revision`, by rule key (dumped as
    # it is stored; `dict(state.items())` for the bytes).
    state: States = field(default_factory=dict)
    state_revision: int | None = None

    @property
    def complete(self) -> bool:
        """True when nothing was left unevaluated."""
        return not self.not_evaluated
