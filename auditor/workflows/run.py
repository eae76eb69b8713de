"""The audit: stored state and policies → findings compared with the previous run → `ReportData`.

Takes an open `Store` and `AuditOptions` (built by the cli from flags, environment and clock),
gives an `AuditOutcome`: the report data to render and what the exit code rests on. Records the
run and its findings in the store so the next run can say new / persisting / resolved.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from auditor import __version__
from auditor.common.collector import few_collections
from auditor.common.pairs import HashPairs
from auditor.common.unique import first_free
from auditor.diff import DEFAULT_LIST_TABLE, ListTable
from auditor.errors import ConfigError, PolicyError, StoreError, UsageError
from auditor.evaluate.model import EvaluationInputs
from auditor.evaluate.readiness import (
    DEFAULT_MODEL_PATH,
    InvalidModel,
    ReadinessModel,
    future_dated,
    latest_per_repo,
    load_readiness_model,
    refuse_secret_names,
    release_views,
    skipped_future,
    unreported_criteria,
    with_pillars_redacted,
)
from auditor.findings.waivers import KnownRules, load_waivers
from auditor.models import (
    OPEN_STATUSES,
    DataWarning,
    FindingRecord,
    ReadinessReport,
    Revision,
    Waiver,
)
from auditor.operators.timing import FUTURE_SKEW_DAYS, future_detail
from auditor.policy import SHIPPED_POLICY_DIR, SHIPPED_PREFIX, PolicySet, load_policies
from auditor.store import evalstate
from auditor.store.database import Store
from auditor.store.schema import IntegrityIssue
from auditor.workflows.usage import usage_inputs, without_usage

# The evaluation engine, the findings and the report modules are imported where they are used,
# so `auditor run` loads its policies and starts its sync without them.
if TYPE_CHECKING:
    from auditor.evaluate.model import Evaluation
    from auditor.findings import Finding
    from auditor.policy.model import PolicyFile
    from auditor.redact import Redactor
    from auditor.report.model import AuditScope, DataSource, InputDigest, InputFile, ReportData


@dataclass(frozen=True)
class AuditOptions:
    """What one audit looks at and how; every outside-world value is passed in."""

    run_id: str
    now: datetime
    api_address: str = ""
    at: datetime | None = None
    all_revisions: bool = False
    fail_on: str = "low"
    not_evaluated: tuple[str, ...] = ()  # problems met before the audit (e.g. a failed sync)
    list_table: ListTable = DEFAULT_LIST_TABLE  # how change rules diff lists (`diff_keys`)
    data_quality: tuple[DataWarning, ...] = ()  # the sync's warnings, shown in every report
    usage_days: int | None = 30  # the usage window (ends the day before `at`/`now`); None: skip
    readiness: bool = True  # False (`--no-readiness`): the readiness and org rules left out
    source: DataSource | None = None  # when the data was fetched (None: not known)


@dataclass(frozen=True)
class LoadedPolicy:
    """Policies, waivers and readiness model, loaded and validated before anything runs."""

    policy: PolicySet
    waivers: tuple[Waiver, ...]
    model: ReadinessModel
    #: the readiness model and waivers file as the reports cite them, each with its text as
    #: read (`cited_files`); empty: not known (an evidence bundle's, named by its manifest)
    files: tuple[tuple[InputFile, str], ...] = field(default=(), repr=False, compare=False)


@dataclass(frozen=True)
class AuditOutcome:
    """The report data and the facts the exit code is decided on."""

    data: ReportData
    failing: tuple[Finding, ...] = field(default=())  # at or above --fail-on, not waived

    @property
    def errors(self) -> tuple[str, ...]:
        """Why the run is incomplete (empty when complete)."""
        return self.data.not_evaluated


def load_inputs(
    policies: Sequence[Path],
    waivers: Path | None,
    model: Path | None,
    *,
    cwd: Path,
    tokens: Iterable[str] = (),
) -> LoadedPolicy:
    """Load policies (shipped packs when none given), waivers and the readiness model. A
    policy or waiver file is named in the reports with a name in its path that looks like a
    secret as `<not shown: looks like a secret>`, and one of `tokens` (the command's own) as
    `[token]` (`auditor.redact.shown.printed_path`)."""
    tokens = tuple(tokens)
    loaded = load_policies(list(policies) or [SHIPPED_POLICY_DIR])
    policy = _with_display_paths(loaded, cwd, tokens)
    rules = KnownRules(r.id for r in loaded.rules)  # a waiver of another rule is refused
    loaded_waivers = _shown_sources(load_waivers(waivers, rules), cwd, tokens) if waivers else ()
    try:
        readiness = load_readiness_model(model)
    except InvalidModel as exc:
        if exc.problems:  # listed one a line, as a policy or waiver file's are
            raise PolicyError(exc.problems) from None
        raise
    files = _input_files(waivers, model, cwd, tokens)
    return LoadedPolicy(policy, loaded_waivers, readiness, files)


def _input_files(
    waivers: Path | None, model: Path | None, cwd: Path, tokens: tuple[str, ...]
) -> tuple[tuple[InputFile, str], ...]:
    """The readiness model (`(shipped)` when none is given) and the waivers file as the
    reports name them, each with the sha256 of its bytes and its text (`redacted_inputs`
    cites a file holding a secret by its copy's digest instead)."""
    from auditor.common.files import UnreadableFile, read_input
    from auditor.policy.yamlsafe import MAX_BYTES
    from auditor.report.model import InputFile

    out: list[tuple[InputFile, str]] = []
    named = [("readiness model", model or DEFAULT_MODEL_PATH, model is not None)]
    if waivers is not None:
        named.append(("waivers", waivers, True))
    for role, path, own in named:
        try:  # read a moment ago, when it was loaded: under the same checks (a FIFO put in
            # its place is refused, not waited on) and cap
            raw = read_input(path, max_bytes=MAX_BYTES)
        except UnreadableFile as exc:
            raise ConfigError(f"{path}: cannot read {role} file: {exc}") from None
        shown = display_path(str(path), cwd, tokens) if own else "(shipped)"
        digest = hashlib.sha256(raw).hexdigest()
        out.append((InputFile(role, shown, digest), raw.decode("utf-8", "replace") if own else ""))
    return tuple(out)


def cited_files(
    files: Sequence[tuple[InputFile, str]], redactor: Redactor
) -> tuple[tuple[InputFile, str], ...]:
    """`files` with a file that holds a secret cited by the sha256 of its copy with the secret
    as its marker (`redacted_source`, the evidence bundle's copy), as a policy file is
    (`with_copy_digests`), never by the sha256 of the file as written, which would let guesses
    of the secret be tested offline; one whose copy cannot be made by the sha256 of its
    marker under the state's key. The shipped model (public text) keeps its bytes' digest."""
    from auditor.policy.redacted import flagged_secrets, redacted_source, secrets_hidden

    own = [(f, text) for f, text in files if text]
    if not own:
        return tuple(files)
    found: dict[str, list[str]] = {}  # what the detectors found in each text: searched once
    flagged = flagged_secrets(redactor, [(t, f.path) for f, t in own], found)
    redact = secrets_hidden(redactor, flagged, found)
    out: list[tuple[InputFile, str]] = []
    for file, text in files:
        if text:
            try:
                copy = redacted_source(text, file.path, redact)
            except PolicyError:
                copy = redactor.marker(text)
            if copy != text:
                file = replace(file, sha256=hashlib.sha256(copy.encode("utf-8")).hexdigest())
        out.append((file, text))
    return tuple(out)


def check_rules(policy: PolicySet, *, usage: bool, readiness: bool = True) -> None:
    """UsageError when the run would evaluate no rule (the policies have none, or only usage
    rules and `usage` is False, `--no-usage`, or only readiness and org rules and `readiness`
    is False, `--no-readiness`): a run that judges nothing would report clean."""
    if not policy.rules:
        raise UsageError(
            "the policies have no rule: a run that evaluates no rule would pass whatever the "
            "settings are; give --policy files with rules (or none, for the shipped packs)"
        )
    if not usage and not without_usage(policy).rules:
        raise UsageError(
            f"every rule of the policies ({len(policy.rules)}) is a usage rule and --no-usage "
            "leaves them out: a run that evaluates no rule would pass whatever the settings "
            "are; drop --no-usage or give --policy files with other rules"
        )
    if not readiness and not without_readiness(policy if usage else without_usage(policy)).rules:
        flags = "--no-readiness" if usage else "--no-readiness and --no-usage"
        kinds = "a readiness or org rule" if usage else "a readiness, org or usage rule"
        verb = "leaves" if usage else "leave"
        raise UsageError(
            f"every rule of the policies ({len(policy.rules)}) is {kinds} and {flags} {verb} "
            "them out: a run that evaluates no rule would pass whatever the settings are; "
            f"drop {flags} or give --policy files with other rules"
        )


#: The rule targets `--no-readiness` leaves out: they judge the readiness reports.
READINESS_TARGETS = frozenset({"readiness", "org"})


def without_readiness(policy: PolicySet) -> PolicySet:
    """The policy set without its readiness and org rules."""
    return replace(
        policy, rules=tuple(r for r in policy.rules if r.target not in READINESS_TARGETS)
    )


def display_path(path: str, cwd: Path, tokens: Iterable[str] = ()) -> str:
    """A policy path as reports show it: relative to the working folder, or `(shipped)
    policies/…` for the shipped packs (`SHIPPED_PREFIX`), so reports do not depend on where
    the tool or the checkout lives; a name in it that looks like a secret as `<not shown:
    looks like a secret>`, one of `tokens` (the command's own) as `[token]`. The names are
    shown only: the comparison with the previous run rests on the rule ids and the view
    (`run_scope`), never on a file's name."""
    from auditor.redact.shown import printed_path

    resolved = Path(path).resolve()
    if resolved.is_relative_to(here := cwd.resolve()):
        return printed_path(resolved.relative_to(here).as_posix(), tokens)
    if resolved.is_relative_to(shipped := SHIPPED_POLICY_DIR.resolve()):
        # the prefix is the tool's words, not a name to judge (`(shipped) policies` is no
        # ordinary name: judging it loaded the secret detector on every offline run)
        name = printed_path(resolved.relative_to(shipped).as_posix(), tokens)
        return SHIPPED_PREFIX + name
    return printed_path(resolved.as_posix(), tokens)


def _with_display_paths(policy: PolicySet, cwd: Path, tokens: Iterable[str] = ()) -> PolicySet:
    return with_shown_paths(policy, distinct_paths([f.path for f in policy.files], cwd, tokens))


def _shown_sources(
    waivers: Iterable[Waiver], cwd: Path, tokens: Iterable[str]
) -> tuple[Waiver, ...]:
    """The waivers with the file each was read from named as the reports and the waiver
    warnings show it: as a policy file is (`display_path`: from the working folder, so the
    reports do not depend on where the repository is checked out; it was the working folder
    joined with the path as given, `/home/alice/src/repo/waivers.yaml`), a name that looks
    like a secret, or the command's token, not shown; the same objects when that is the
    name they were read with."""
    tokens = tuple(tokens)
    out: list[Waiver] = []
    for waiver in waivers:
        source = waiver.source
        shown = display_path(source.file, cwd, tokens) if source is not None else None
        if source is not None and shown is not None and shown != source.file:
            waiver = replace(waiver, source=replace(source, file=shown))
        out.append(waiver)
    return tuple(out)


def distinct_paths(paths: Iterable[str], cwd: Path, tokens: Iterable[str] = ()) -> dict[str, str]:
    """Each policy path's `display_path`, told apart when two read the same (both named like
    a secret, say): the second is shown `… (2)`, the third `… (3)`, so the run's record of
    policy hashes and the reports keep one entry per file."""
    shown: dict[str, str] = {}
    taken: set[str] = set()
    tokens = tuple(tokens)  # read once per path
    for path in paths:
        shown[path] = first_free(display_path(path, cwd, tokens), taken, lambda b, n: f"{b} ({n})")
    return shown


def with_shown_paths(policy: PolicySet, shown: Mapping[str, str]) -> PolicySet:
    """The policy with its files (and its rules' sources) named as `shown` maps them."""
    rules = tuple(
        replace(r, source=replace(r.source, file=shown.get(r.source.file, r.source.file)))
        if r.source
        else r
        for r in policy.rules
    )
    files = tuple(replace(f, path=shown.get(f.path, f.path)) for f in policy.files)
    return replace(policy, rules=rules, files=files)


def run_audit(
    store: Store,
    loaded: LoadedPolicy,
    options: AuditOptions,
    *,
    publish: Publish | Publisher | None = None,
    record: bool = True,
    after_sync: bool = False,
) -> AuditOutcome:
    """Evaluate the stored state, compare with the previous complete run, record this run.

    The run is recorded complete only once `publish` (writing the reports) has returned, and
    only if it wrote them as given, so a run whose reports could not be written never becomes
    the next run's baseline (`Publisher`). A rule's literal is compared with a redacted value
    by the state's keyed fingerprint (`auditor.operators.hidden`); the policy's text passes
    through the state's redactor. `record=False` writes nothing to the store (no run, no
    evaluation state): `export` judging the files as given to compare with its bundle.
    `after_sync`: the store's sync in this process has committed; once the policy and the
    waivers are redacted under everything it learned, the audit works from the memory of
    secrets the state file holds, as a new process would (`Store.start_from_file`).
    """
    from auditor.operators import fingerprinting

    # (the marker depends on the state's key alone, whichever redactor makes it)
    with fingerprinting(store.marker):
        # a secret written into a policy (a rule's literal, its description) or a waiver never
        # reaches an output either
        learned = store.redactor.memory.learned
        inputs = redacted_inputs(loaded, store.redactor)
        if isinstance(publish, Publisher) and publish.cited is not None:
            publish.cited(inputs.policy.files)
        issues = None
        if after_sync:
            # The integrity issues' paths are redacted as they are read: read now, under the
            # values the sync learned (one glued to a key's letters is found by value alone).
            issues = store.integrity_issues()
            # (what the policy and waivers taught is kept, as a new process has it)
            store.start_from_file(taught=store.redactor.memory.learned_since(learned))
        return _run_audit(store, inputs, options, publish=publish, record=record, issues=issues)


def redacted_inputs(loaded: LoadedPolicy, redactor: Redactor) -> LoadedPolicy:
    """`loaded` with the secrets in its text as markers, under `redactor` (the one that hid
    the data judged): the policy's (`redacted_policy`) and each waiver's reason, owner and
    ticket, the text the reports show of it. A literal a rule compares with a value secret by
    its place (`apiKey not_in [OLD]`, `env.X not_equals OLD`) is its marker in that rule's
    own texts (`with_literals_hidden`), learned by nothing: a path, a selector, an enum or
    another rule stays as written, so no verdict changes. A policy file holding a secret is
    cited by the sha256 of its copy with the secret as its marker, the bundle's copy
    (`with_copy_digests`), never of the file as written, which would let guesses of the
    secret be tested offline; it is taken before the policy's texts teach the memory
    anything, as `export` takes its copy from the state file as opened."""
    from auditor.policy.redacted import (
        hidden_literals,
        redacted_policy,
        with_copy_digests,
        with_literals_hidden,
    )

    model = _checked_model(loaded, redactor)
    policy = with_copy_digests(loaded.policy, redactor)
    policy = redacted_policy(policy, redactor.redact_text, redactor.scrub_known)
    literals = hidden_literals(loaded.policy)
    return replace(
        loaded,
        policy=with_literals_hidden(policy, literals, redactor.literals_hidden),
        waivers=tuple(_redacted_waiver(w, redactor.redact_text) for w in loaded.waivers),
        model=model,
        files=cited_files(loaded.files, redactor),
    )


@functools.cache
def _shipped_model_digest() -> str:
    """The sha256 of the shipped readiness model's bytes."""
    return hashlib.sha256(DEFAULT_MODEL_PATH.read_bytes()).hexdigest()


def _checked_model(loaded: LoadedPolicy, redactor: Redactor) -> ReadinessModel:
    """The readiness model given, as the reports may show it: PolicyError, each problem at
    its `file:line:col`, when a criterion id holds a secret `redactor`'s memory holds
    (`readiness.refuse_secret_names`: an API key of the audited settings written into an id
    would be printed in every report otherwise), and each pillar with a secret in it as its
    marker (`readiness.with_pillars_redacted`), learning nothing: prose a detector flags
    (`Bearer tokens` makes `tokens` one) would hide that word in the policy's paths, which then
    match nothing (`tokens.by_model`), and change verdicts. The shipped model is public text (a
    remembered password that is a word of it, `Security`, says nothing there), also given by
    its path or as a copy of its bytes, and an evidence bundle's copy was redacted when the
    bundle was made."""
    from auditor.policy.yamlsafe import load_text

    for file, text in loaded.files:
        if file.role == "readiness model" and text and file.sha256 != _shipped_model_digest():
            try:
                read = functools.partial(load_text, text, file.path, unread=True)
                refuse_secret_names(loaded.model, read, redactor.scrub_known)
            except InvalidModel as exc:
                raise PolicyError(exc.problems) from None
            return with_pillars_redacted(loaded.model, redactor.redact_shown)
    return loaded.model


def _redacted_waiver(waiver: Waiver, redact: Callable[[str], str]) -> Waiver:
    """`waiver` with a secret in any of its text (rule, subject, reason, owner, ticket: all of
    it reaches the reports) as its marker; what it matches (rule, subject) kept as written in
    `written`. The same object when nothing changed."""
    rule, subject = redact(waiver.rule_id), redact(waiver.subject)
    reason, owner, ticket = redact(waiver.reason), redact(waiver.owner), redact(waiver.ticket)
    shown = (rule, subject, reason, owner, ticket)
    if shown == (waiver.rule_id, waiver.subject, waiver.reason, waiver.owner, waiver.ticket):
        return waiver
    written = (waiver.match_rule, waiver.match_subject)
    return replace(
        waiver,
        rule_id=rule,
        subject=subject,
        reason=reason,
        owner=owner,
        ticket=ticket,
        written=written if written != (rule, subject) else None,
    )


def _run_audit(
    store: Store,
    loaded: LoadedPolicy,
    options: AuditOptions,
    *,
    publish: Publish | Publisher | None = None,
    record: bool = True,
    issues: list[IntegrityIssue] | None = None,
) -> AuditOutcome:
    """`run_audit` of the redacted inputs; `issues`: the store's integrity issues as read
    already (None: read them)."""
    from auditor.evaluate.engine import evaluate
    from auditor.findings import (
        apply_waivers,
        compare_runs,
        continued,
        error_lines,
        failing_at,
        findings_from_pending,
        records_for_store,
    )
    from auditor.findings.baseline import PriorRecords, set_aside
    from auditor.findings.integrity import RULE_ID as INTEGRITY
    from auditor.findings.integrity import integrity_results, with_issue_fingerprints
    from auditor.findings.waivers import untried_rules, waived_counts
    from auditor.report.build import (
        ReadinessInputs,
        RunHeader,
        build_report_data,
        org_level,
        readiness_rows,
    )
    from auditor.report.usage import usage_view

    left_out: tuple[tuple[str, int, str], ...] = ()
    left_out_ids: list[tuple[str, str]] = []
    for skip, select, reason in (
        (options.usage_days is None, without_usage, NO_USAGE_REASON),
        (not options.readiness, without_readiness, NO_READINESS_REASON),
    ):  # --no-usage, --no-readiness: those rules are not selected, each target named
        if skip:
            selected = select(loaded.policy)
            kept = {r.id for r in selected.rules}
            dropped = [r for r in loaded.policy.rules if r.id not in kept]
            for target in sorted({r.target for r in dropped}):
                n = sum(r.target == target for r in dropped)
                left_out = (*left_out, (target, n, reason))
            left_out_ids += ((r.target, r.id) for r in dropped)
            loaded = replace(loaded, policy=selected)
    scope = run_scope(loaded.policy, options)
    # the waivers of rules left out (`--no-usage`, a policy not given) are not stale
    untried = untried_rules(loaded.waivers, {r.id for r in loaded.policy.rules} | {INTEGRITY})
    # A write the store refuses (a full disk) does not lose the audit: what is stored is still
    # judged and reported, as an incomplete run (exit 2) that the store does not record, so no
    # later run compares with it. (A read that fails, a PostgreSQL server gone, stops the run.)
    unrecorded: list[str] = []
    redactor = store.redactor
    run_id = None
    if record:
        with _recording(unrecorded, redactor):
            run_id = store.start_run(
                options.run_id,
                started=options.now,
                tool_version=__version__,
                policy_hashes={f.path: f.sha256 for f in loaded.policy.files},
                scope=scope,
            )
    options = replace(options, run_id=run_id or options.run_id)  # `-2` … when it was taken
    # fewer collections, what is alive set aside: the audit makes 100,000s of objects
    # that live until the reports are written, and hardly any cycles (`collector`)
    with few_collections():
        known = _Known.read(store, options)
        inputs, skipped = _inputs(store, loaded.model, options, known)
        evaluation = evaluate(loaded.policy, inputs)
        # What the reports take from the inputs is taken now, so that the inputs (the readiness
        # reports and their views, the usage days, every revision number: 10s of MB at 100,000
        # revisions) are let go before the findings are made and compared.
        now, digest = inputs.now, _digest(known, inputs)
        readiness = ReadinessInputs(inputs.reports, loaded.model, now)
        rows, level = readiness_rows(readiness), org_level(readiness)
        usage = usage_view(inputs.usage)
        window = inputs.usage.window if inputs.usage else None
        covered = audit_scope(store, loaded.policy, inputs, digest, options.at, left_out)
        covered = replace(
            covered,
            all_revisions=options.all_revisions,
            rule_ids_left_out=tuple(sorted(left_out_ids)),
        )
        del inputs, readiness
        known.prior = {}
        release_views()  # the readiness rows are taken: the views are not needed
        if record and not unrecorded:
            with _recording(unrecorded, redactor):
                known.remember(store, evaluation)
        # the store's integrity issues, each a finding of the built-in rule (design §4)
        # (as of `--at`: those seen by then, as an audit then would have reported them)
        recorded = store.integrity_issues() if issues is None else issues
        found = integrity_results(
            i for i in recorded if options.at is None or i.seen_at <= options.at
        )
        results, waiver_report = apply_waivers(
            (*evaluation.results, *found) if found else evaluation.results,
            loaded.waivers,
            now,
            untried=untried,
        )
        not_evaluated, failing_by_revision = (
            evaluation.not_evaluated,
            evaluation.failing_by_revision,
        )
        # how many of each revision's failing settings rules a waiver covers, as the results
        # are waived (`settings` every revision, `settings@N` revision N): by the waivers in
        # force alone, never one the reports call stale (it waived nothing)
        waived_by_revision = waived_counts(
            failing_by_revision, evaluation.failing_spans, waiver_report.in_force, now
        )
        errors: tuple[str, ...] = (*options.not_evaluated, *not_evaluated, *error_lines(results))
        del evaluation  # each stage lets go of the one before: `--all-revisions` holds 100,000s
        pending = list(results)
        del results
        findings = with_issue_fingerprints(findings_from_pending(pending))
        previous = store.previous_complete_run(options.run_id, scope)
        prior = None if previous is None else PriorRecords(previous.findings)
        # Which findings continue an older one under another fingerprint: worked out once for
        # the marks and the records (marking does not change it).
        carried = continued(findings, prior) if prior else {}
        marked, resolved = compare_runs(findings, prior, in_place=True, carried=carried)
        # a usage day that left the window, or that this run did not judge, is not resolved
        aside = set_aside(resolved, marked, usage_from=window[0] if window else None)
        del findings
        if record and not unrecorded:
            with _recording(unrecorded, redactor):
                store.finish_run(
                    options.run_id,
                    finished=options.now,
                    complete=False,
                    findings=records_for_store(
                        marked, prior, options.run_id, carried=carried, kept=aside.not_evaluated
                    ),
                    # Written as a delta from the previous run's rows: most nights change few.
                    like=None if previous is None or prior is None else (previous.run_id, prior),
                )
        before, compared_with = (
            ("", None) if previous is None else (previous.tool_version, previous.run_id)
        )
        first_seen = _first_seen(marked, prior, carried)
        del previous, prior
        errors = (*errors, *unrecorded)
        header = RunHeader(options.run_id, options.now, "run", options.api_address, options.fail_on)
        data = build_report_data(
            header,
            loaded.policy.files,
            marked,
            errors,
            resolved=aside.resolved,
            waivers=waiver_report,
            failing_by_revision=failing_by_revision,
            waived_by_revision=waived_by_revision,
            inputs=digest,
            in_order=True,  # `findings_from_pending` sorted them; marking kept the order
            waivers_as_of=options.at,  # `apply_waivers` judged them as of `--at` (`now`)
        )
        del marked  # the report data holds them now
        data = replace(
            data,
            readiness_rows=rows,
            org_level=level,
            data_quality=(*options.data_quality, *skipped),
            usage=usage,
            scope=covered,
            previous_tool_version=before,
            previous_run_id=compared_with,
            left_window=tuple(aside.left_window),
            not_reevaluated=tuple(aside.not_evaluated),
            first_seen=first_seen,
            input_files=tuple(f for f, _ in loaded.files),
            source=options.source,
        )
        publisher = publish if isinstance(publish, Publisher) else Publisher(publish)
        written = publisher.written(data)
        if record and not errors and written is data:  # the reports say complete: recorded so

            def complete() -> bool:
                with _recording(unrecorded, redactor):
                    store.complete_run(options.run_id)
                return not unrecorded

            publisher.record(complete)
            if unrecorded:  # the reports said complete: written again, saying why it is not
                written = replace(data, complete=False, not_evaluated=tuple(unrecorded))
                written = publisher.written(written)
        return AuditOutcome(written, failing_at(written.findings, options.fail_on))


#: Writes a run's reports from its data; gives the lines why it wrote them marked incomplete
#: instead (a write failed part-way: the ones written went, and all were written again: notes
#: about its outputs, `ReportData.output_notes`), or nothing when they were written as given.
Publish = Callable[["ReportData"], "Sequence[str] | None"]


def _first_seen(
    findings: Sequence[Finding],
    prior: Sequence[FindingRecord] | None,
    carried: Mapping[int | str, FindingRecord],
) -> dict[int | str, str]:
    """The run that first saw each `persisting` finding (`first_seen_runs`), needed only past
    code scanning's 5,000 results, where findings.sarif lists the oldest first (10,000s of
    entries with `--all-revisions`: none below the cap)."""
    from auditor.findings.baseline import first_seen_runs
    from auditor.report import sarif

    listed = OPEN_STATUSES | {"waived"}  # what findings.sarif may list
    if not prior or sum(f.status in listed for f in findings) <= sarif.MAX_RESULTS:
        return {}
    return first_seen_runs(findings, prior, carried)


def _record_now(complete: Callable[[], bool]) -> None:
    complete()


@dataclass(frozen=True)
class Publisher:
    """How the caller writes a run's reports (`write`, a `Publish`) and has it recorded
    complete (`record`: given the step that records it, True once the state file holds the
    run complete; the caller runs it, e.g. with Ctrl-C and SIGTERM held, so that it knows,
    whatever interrupts it, whether the state holds the run complete, and so what its reports
    may say)."""

    write: Publish | None = None
    record: Callable[[Callable[[], bool]], None] = _record_now
    #: Given the policy files as this run cites them (`redacted_inputs`: under the state's
    #: key and memory, once the sync is done), before the evaluation begins: what a report
    #: of the run interrupted from then on cites too.
    cited: Callable[[tuple[PolicyFile, ...]], None] | None = None

    def written(self, data: ReportData) -> ReportData:
        """`data` as its reports were written: itself, or marked incomplete with the lines
        `write` gave (notes about its outputs: no item went unevaluated)."""
        why = self.write(data) if self.write is not None else None
        if not why:
            return data
        return replace(data, complete=False, output_notes=(*data.output_notes, *why))


@contextmanager
def _recording(unrecorded: list[str], redactor: Redactor) -> Iterator[None]:
    """One of the run's records: a `StoreError` its write raises is kept in `unrecorded` (the
    line the reports and stderr give, shown as the sync's failure is: a secret in the state
    file's path is a marker), not raised; the caller writes no more records then."""
    try:
        yield
    except StoreError as exc:
        unrecorded.append(UNRECORDED + redactor.redact_shown(str(exc)))


#: How the line of a run that the state file could not record begins.
UNRECORDED = "the state file could not record this run, so no later run compares with it: "


@dataclass(frozen=True)
class StoredHistory:
    """The stored revisions up to `end`, streamed from the store anew on every iteration (the
    store parses a row only when it is reached)."""

    store: Store
    end: int

    then: tuple[Revision, ...] = ()  # revisions that follow the stored ones (a proposal)

    def __iter__(self) -> Iterator[Revision]:
        yield from self.store.iter_revisions(end=self.end)
        yield from self.then


@dataclass
class _Known:
    """What the store says about the history before evaluating it: the settings under test,
    every stored (revision, content hash) up to it, read once from the index, and the
    evaluation state earlier runs left that still fits this history."""

    settings: Revision | None
    hashes: HashPairs
    prior: Mapping[str, bytes]
    moves_on: bool
    digest: str | None = None  # of the stored history up to `settings` (the state's filing)

    @classmethod
    def read(cls, store: Store, options: AuditOptions) -> _Known:
        at = options.at
        settings = store.revision_at(at) if at else store.latest_revision()
        if settings is None:
            return cls(None, HashPairs(), {}, False)
        # `--at`: the state may have been computed past the revision under test; it is checked
        # against the whole stored history, then cut back to that revision by the engine.
        stored = store.revision_hashes(end=None if at else settings.revision)
        hashes = (
            stored
            if not stored or stored[-1][0] <= settings.revision
            else HashPairs(pair for pair in stored if pair[0] <= settings.revision)
        )
        prior: Mapping[str, bytes] = {}
        fits: dict[int, str] = {}
        if not options.all_revisions:
            # One pass over the pairs: the rows' revisions, and the one the new state is filed
            # under (a digest up to it is the same over `stored` and over `hashes`).
            fitting, fits = _fitting(store.eval_state(), stored, settings.revision)
            prior = _HandedOver(fitting)
        # Only a run of the latest stored revision moves the state on (`--at` only reads it).
        moves_on = at is None and not options.all_revisions
        return cls(settings, hashes, prior, moves_on, fits.get(settings.revision))

    def remember(self, store: Store, evaluation: Evaluation) -> None:
        """Store the evaluation's new state, filed under the history it was computed over."""
        at = evaluation.state_revision
        if not self.moves_on or at is None or not evaluation.state:
            return
        digest = (
            self.digest
            if self.settings is not None and at == self.settings.revision
            else evalstate.history_digests(self.hashes, {at}).get(at)
        )
        if digest is not None:
            store.save_eval_state(at, digest, evaluation.state)


def _fitting(
    rows: Iterable[evalstate.EvalStateRow], stored: Iterable[tuple[int, str]], *also: int
) -> tuple[dict[str, bytes], dict[int, str]]:
    """The rows (their data as stored, by rule key) computed over the very history `stored`
    (its ascending (revision, content hash) pairs) leads up to their revision, and the digest
    of that history up to each row's revision and each of `also`."""
    rows = list(rows)
    fits = evalstate.history_digests(stored, {row.revision for row in rows} | set(also))
    return {r.rule_key: r.data for r in rows if fits.get(r.revision) == r.history}, fits


def stored_state(
    store: Store, end: int, keys: Collection[str]
) -> tuple[dict[str, bytes], HashPairs]:
    """For a reader that never moves the state on (a review): the states of `keys` that
    earlier runs left and that fit the stored history up to revision `end` (as `run` checks
    them: by the digest of the (revision, content hash) pairs up to the state's revision),
    unpacked (a damaged row is left out: its rule is evaluated afresh), and those pairs.
    Nothing is written. A state file with none of them (never `run`) costs no read of the
    pairs: no pairs are given then."""
    rows = [row for row in store.eval_state() if row.rule_key in keys]
    if not rows:
        return {}, HashPairs()
    hashes = store.revision_hashes(end=end)
    fitting, _ = _fitting(rows, hashes)
    states: dict[str, bytes] = {}
    for key, data in fitting.items():
        try:
            states[key] = evalstate.unpack(data)
        except ValueError:
            continue
    return states, hashes


class _HandedOver(Mapping[str, bytes]):
    """The evaluation state earlier runs left, by rule key, each rule's state handed over
    once: the engine reads it once, and at 100,000 revisions a change rule's state is
    megabytes that the results read from it then hold anyway. A state read a second time is
    absent, so the rule would be evaluated afresh (the state is only ever a cache); the keys,
    and so the length, stay as they were."""

    def __init__(self, states: dict[str, bytes]) -> None:
        self._states = states
        self._keys = tuple(states)

    def __getitem__(self, key: str) -> bytes:
        return evalstate.unpack(self._states.pop(key))

    def again(self, key: str) -> Callable[[], bytes] | None:
        """How to have the state of `key` again once it is read (None: there is none): from
        its row as stored, which is a tenth of the state (`evalstate.pack`)."""
        row = self._states.get(key)
        return None if row is None else functools.partial(evalstate.unpack, row)

    def __contains__(self, key: object) -> bool:
        return key in self._states

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def _inputs(
    store: Store, model: ReadinessModel, options: AuditOptions, known: _Known
) -> tuple[EvaluationInputs, tuple[DataWarning, ...]]:
    from auditor.evaluate.engine import Steps

    at = options.at
    settings = known.settings
    end = settings.revision if settings else None
    history: Iterable[Revision] = StoredHistory(store, end) if end is not None else ()
    reports, skipped = readiness_reports(store, at, options.now)
    skipped = (*skipped, *unreported_criteria(model, reports))  # a model id no report holds
    if at is None and settings is not None:
        skipped = (*skipped, *future_revision(settings, options.now))
    inputs = EvaluationInputs(
        now=at or options.now,
        settings=settings,
        history=history,
        all_revisions=options.all_revisions,
        steps=Steps(history),
        reports=reports,
        readiness_model=model,
        list_table=options.list_table,
        usage=usage_inputs(store, (at or options.now).date(), options.usage_days),
        prior=known.prior,
        tail=lambda start: store.iter_revisions(start=start, end=end),
        history_from=lambda when: _history_from(store, when, end),
        revision_numbers=known.hashes.numbers(),
        remember=known.moves_on,
        check_history=store.check_rows_kept,
    )
    return inputs, skipped


def future_revision(settings: Revision, now: datetime) -> tuple[DataWarning, ...]:
    """A data-quality warning when the newest revision, which the run judges, is dated more
    than the clock-skew allowance after the run's time: no `--at` run before that date reaches
    it (each judges the one in force then), so the two would judge different settings."""
    if settings.updated_at - now <= timedelta(days=FUTURE_SKEW_DAYS):
        return ()
    problem = (
        f"updatedAt {future_detail(settings.updated_at, now)}: judged as the settings in force "
        "(the newest revision), but an `--at` run before that time judges the one before it; "
        "check the service's clock"
    )
    return (DataWarning("$.updatedAt", problem, f"revision {settings.revision}", "stored history"),)


def readiness_reports(
    store: Store, at: datetime | None, now: datetime
) -> tuple[tuple[ReadinessReport, ...], tuple[DataWarning, ...]]:
    """Each repository's newest report (as of `at`): the store reads only those rows (and any
    that tie on time, which `latest_per_repo` settles as it always did). Without `at`, a
    report dated more than a day after `now` is read only for a repository that has no
    other; each one passed over for an earlier report is a data-quality warning."""
    if at is not None:
        return tuple(latest_per_repo(store.latest_reports(at))), ()
    newest = store.latest_reports()
    if not any(future_dated(r, now) for r in newest):  # as a rule: each newest is in time
        return tuple(latest_per_repo(newest)), ()
    earlier = store.latest_reports(now + timedelta(days=FUTURE_SKEW_DAYS))
    used = latest_per_repo([*earlier, *newest], now)
    return tuple(used), tuple(skipped_future(newest, used, now))


def _history_from(store: Store, when: datetime, end: int | None) -> Iterable[Revision]:
    """The stored history up to `end`, from the revision in force at `when` on (all of it
    when none was)."""
    first = store.revision_at(when)
    start = None if first is None else min(first.revision, end if end is not None else 2**63 - 1)
    return store.iter_revisions(start=start, end=end)


def run_scope(policy: PolicySet, options: AuditOptions) -> str:
    """Which earlier runs this one can be compared with: the same rules (by id; editing a rule
    keeps the comparison, adding or dropping one starts a new baseline) over the same view."""
    rules = hashlib.sha256("\n".join(sorted(r.id for r in policy.rules)).encode()).hexdigest()
    view = options.at.isoformat() if options.at else "latest"
    return f"rules:{rules[:16]} at:{view} all-revisions:{options.all_revisions}"


def _digest(known: _Known, inputs: EvaluationInputs) -> InputDigest:
    from auditor.report.model import InputDigest

    revisions = known.hashes  # held compactly (a tuple of pairs is 22 MB at 100,000)
    return InputDigest(
        revisions_evaluated=revisions,  # read from the index: no third pass over the history
        reports_evaluated=tuple((r.report_id, r.content_hash) for r in inputs.reports),
        settings_revision=inputs.settings.revision if inputs.settings else None,
    )


#: Why the usage rules are left out with `--no-usage` (the scope block of every report says it).
NO_USAGE_REASON = "`--no-usage` was given: the usage analytics were not read"
#: Why the readiness and org rules are left out with `--no-readiness`.
NO_READINESS_REASON = "`--no-readiness` was given: the readiness reports were not read"


def audit_scope(
    store: Store,
    policy: PolicySet,
    inputs: EvaluationInputs,
    digest: InputDigest,
    at: datetime | None,
    left_out: tuple[tuple[str, int, str], ...] = (),
) -> AuditScope:
    """The period, rule counts per target (and the rules `left_out`: target, count, why) and
    populations the reports' scope block states."""
    from auditor.report.model import AuditScope

    revisions = len(digest.revisions_evaluated)
    first = store.get_revision(digest.revisions_evaluated[0][0]) if revisions else None
    targets: dict[str, int] = {}
    for rule in policy.rules:
        targets[rule.target] = targets.get(rule.target, 0) + 1
    # The evaluated reports are each repository's newest (as of `at`): one per repository.
    reports = store.count_reports(at)
    return AuditScope(
        period_start=first.updated_at if first else None,
        period_end=inputs.settings.updated_at if inputs.settings else None,
        as_of=at,
        rules_by_target=tuple(sorted(targets.items())),
        revisions=revisions,
        change_steps=max(0, revisions - 1),
        repositories=len(inputs.reports),
        reports=reports,
        reports_evaluated=len(inputs.reports),
        rules_left_out=left_out,
    )
