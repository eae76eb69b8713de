"""`auditor run`: the nightly job — sync, evaluate, compare with the last run, write five reports.

Takes the configuration and the clock, gives `reports/<run-id>/` (or `--out`), a short summary on
stdout, and the exit code of design §9 with its reason as the last line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.cli.common import (
    api_address,
    check_at,
    config_from_args,
    named_inputs,
    open_store,
    parse_at,
    refuse_out_over_inputs,
    require_remote,
    store_kept_only_if_synced,
    stored_address,
    sync_store,
    warn_exposed_org_states,
)
from auditor.cli.failure import report_failure, scrubbed
from auditor.cli.outdir import (
    INTERRUPTED_SARIF,
    PDF,
    SARIF,
    clear_old_reports,
    hold_out_dir,
    remove_reports,
    report_dir,
    reports_in,
    sarif_withheld,
    say,
    without_sarif,
)
from auditor.cli.parsers import DEFAULT_WORKERS
from auditor.cli.signals import held, interrupt_exit
from auditor.cli.summary import (
    decide_exit,
    make_run_id,
    print_summary,
    sarif_base,
    sarif_root,
    with_report_options,
)
from auditor.common.dates import DEFAULT_DAYS
from auditor.common.escape import terminal_text
from auditor.common.files import forget_modes
from auditor.common.interrupts import Cancelled
from auditor.common.lazyre import lazy_regex
from auditor.config import Config, OrgEntry, load_orgs, org_config
from auditor.errors import EXIT_ERROR, AuditorError, ReportError, UsageError
from auditor.evaluate.readiness import MODEL_ITEM
from auditor.models import DataWarning
from auditor.report import OUTPUTS, write_reports
from auditor.report.build import RunHeader, build_report_data
from auditor.report.model import ReportData, new_count, new_waived_count, shared_order
from auditor.workflows.run import (
    UNRECORDED,
    AuditOptions,
    AuditOutcome,
    LoadedPolicy,
    Publisher,
    check_rules,
    load_inputs,
    run_audit,
)

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.policy.model import PolicyFile
    from auditor.report.model import DataSource
    from auditor.store.database import Store
    from auditor.workflows.orgs import Crew, OrgResult


def run_command(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: the whole nightly job (for one organization, or each of an --orgs file)."""
    args.run_begun = True  # an interrupt from here on is this handler's (`clear_if_not_begun`)
    config: Config | None = None
    try:
        if args.workers is not None and args.orgs is None:  # (it was ignored without a word)
            raise UsageError("--workers is for --orgs (how many organizations it audits at once)")
        config = config_from_args(args, ctx)
        entries: tuple[OrgEntry, ...] = ()
        if args.orgs is not None:
            # Read first, every organization's token known before any other input is checked:
            # an error about `--at` or a policy path quoted one (`--at "$ACME_TOKEN"`).
            entries = load_orgs(args.orgs, ctx.env, Path(ctx.cwd), ctx.secrets())
            ctx.tokens.update(e.token for e in entries if e.token)
            if not getattr(args, "quiet", False):  # each organization's state file, as --state's
                warn_exposed_org_states(config, entries, ctx)
        # before any other input is read: none is one of the reports `--out` gets
        orgs_file = [("--orgs", Path(args.orgs))] if args.orgs is not None else []
        refuse_out_over_inputs(args, config, ctx, files=orgs_file, orgs=entries)
        now = ctx.clock()
        at = parse_at(args.at, now)
        loaded = load_inputs(*named_inputs(config, ctx), cwd=Path(ctx.cwd), tokens=ctx.secrets())
        # before anything is fetched or written
        check_rules(loaded.policy, usage=not args.no_usage, readiness=not args.no_readiness)
    except KeyboardInterrupt:
        if config is not None and config.out_dir is not None and args.orgs is None:
            clear_if_not_begun(config.out_dir)
        raise
    # `--out`, else `reports/<run-id>/` (`-2` … if taken), made now: `report_dir`
    with report_dir(config.out_dir, Path(ctx.cwd) / "reports", make_run_id(now)) as out_dir:
        try:
            if args.orgs is not None:
                return run_orgs(args, ctx, config, _Audit(loaded, now, at), out_dir, entries)
            return _run_one(config, args, ctx, _Audit(loaded, now, at), out_dir)[0]
        finally:  # the modes of the reports this run cleared and did not write again: not kept
            forget_modes(out_dir)


def clear_if_not_begun(out_dir: Path) -> None:
    """Ctrl-C or SIGTERM while the run loaded (its modules, `auditor.cli`; its inputs, here),
    before it took its report folder:
    the reports an earlier run left there (findings.sarif among them, `"complete": true`) go,
    as for any interrupted run, so exit 130/143 never leaves a folder whose reports read as
    this run's. A folder another auditor command holds, or none yet, is left as it is."""
    with held(), contextlib.suppress(AuditorError, OSError):
        if out_dir.is_dir() and not out_dir.is_symlink():
            with hold_out_dir(out_dir):
                clear_old_reports(out_dir)
            forget_modes(out_dir)


@dataclass(frozen=True)
class _Audit:
    """What every organization's audit shares: the policies, the clock, `--at`."""

    loaded: LoadedPolicy
    now: datetime
    at: datetime | None


class _CutShort(Exception):
    """An organization of `run --orgs` that the interrupt wrote up as not recorded, reaching
    the step that would record it complete: it stops there, writing nothing more."""


@dataclass
class _Published:
    """What a run's reports show, once its evaluation has finished: an interrupt while they
    are written (the PDF takes minutes) keeps these results, rather than none; and whether the
    state file has recorded the run complete (an interrupt then leaves the reports as they
    are: they say what the state holds)."""

    data: ReportData | None = None
    outputs: tuple[str, ...] = ()
    recorded: bool = False  # the state file holds the run complete
    cut: bool = False  # (`--orgs`) cut short by an interrupt: never recorded complete after it
    # taken while the run is recorded and while an interrupt decides what its reports say
    lock: threading.Lock = field(default_factory=threading.Lock)
    # (`--orgs`) held by the worker while it writes (or removes) one report file, each begun
    # only if the organization is not cut short: the interrupt waits for the one begun
    writing: threading.Lock | None = None
    file: str = ""  # (`--orgs`) the report file the worker writes, or last wrote
    # the policy files as the run cites them, once its evaluation begins (`Publisher.cited`)
    files: tuple[PolicyFile, ...] | None = None

    @contextlib.contextmanager
    def turn(self, out_dir: Path, file: str) -> Iterator[None]:
        """One step of the worker's report writing (`--orgs`), begun only if the organization
        is not cut short (`_CutShort` then), the interrupt waiting for its end; a single run
        (no `writing` lock) just runs it."""
        if self.writing is None:
            yield
            return
        with self.writing:
            if self.cut:
                raise _CutShort(out_dir.name)
            self.file = file
            yield


def _run_one(
    config: Config,
    args: argparse.Namespace,
    ctx: Context,
    audit: _Audit,
    out_dir: Path,
    published: _Published | None = None,
) -> tuple[int, AuditOutcome | None]:
    """One organization's nightly job: its exit code and outcome (None when interrupted)."""
    loaded = audit.loaded
    options = _options(config, args, audit)
    published = published or _Published()

    outputs: tuple[str, ...] = args.outputs  # without "sarif" when the SARIF is withheld

    def publish(data: ReportData) -> tuple[str, ...]:  # before the run is recorded complete
        nonlocal outputs
        data = with_report_options(
            data,
            args,
            config.org,
            ctx.secrets(),
            sarif_base(ctx.env, ctx.cwd),
            sarif_root(ctx.env),
        )
        if published.cut:  # (`--orgs`: written up as interrupted: writes nothing more)
            raise _CutShort(config.org)
        line = ""
        if why := sarif_withheld(data):
            data, outputs, line = without_sarif(data, outputs, out_dir, why)
        published.data, published.outputs = data, outputs
        notes = _write_whole(data, out_dir, outputs, published)
        outputs = published.outputs
        say(line, ctx)
        return notes

    def cited(files: tuple[PolicyFile, ...]) -> None:
        published.files = files

    def record(complete: Callable[[], bool]) -> None:
        # Ctrl-C and SIGTERM held: one that comes while the run is recorded is raised once
        # `published.recorded` says whether it was, never between the commit and that flag.
        with held(), published.lock:
            if published.cut:  # (`--orgs`: the main thread wrote it up as interrupted)
                raise _CutShort(config.org)
            published.recorded = complete()

    # the report folder, once `_audit` holds it, is held until its reports (partial ones too)
    # are written: `hold_out_dir`
    with contextlib.ExitStack() as folder:
        try:
            outcome = _audit(
                config,
                loaded,
                options,
                out_dir,
                Publisher(publish, record, cited),
                offline=args.offline,
                quiet=args.quiet,
                ctx=ctx,
                folder=folder,
            )
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (see auditor.cli.signals)
            if isinstance(exc, Cancelled):  # (`run --orgs`: the main thread writes it up)
                raise
            code, word = interrupt_exit(exc)
            if published.recorded:  # the run is done and recorded: its reports stand
                print(f"auditor: {word} {RECORDED_STANDS} in {out_dir} stand", file=ctx.stderr)
                print(f"auditor: exit {code}: {word}", file=ctx.stderr)
                return code, None
            removed = _unpublish(out_dir, published)
            _write_interrupted(loaded, options, out_dir, args.outputs, ctx, published, removed)
            print(f"auditor: {word}; partial reports in {out_dir}", file=ctx.stderr)
            print(f"auditor: exit {code}: {word}", file=ctx.stderr)
            return code, None
    if not args.quiet:
        print_summary(outcome.data, out_dir, ctx, outputs)
    code = decide_exit(
        outcome.errors,
        outcome.failing,
        config.fail_on,
        args.soft_fail,
        ctx,
        notes=outcome.data.output_notes,
    )
    return code, outcome


def _options(config: Config, args: argparse.Namespace, audit: _Audit) -> AuditOptions:
    return AuditOptions(
        run_id=make_run_id(audit.now),
        now=audit.now,
        api_address=api_address(config),
        at=audit.at,
        all_revisions=args.all_revisions,
        fail_on=config.fail_on,
        list_table=config.list_table,
        usage_days=None if args.no_usage else DEFAULT_DAYS,
        readiness=not args.no_readiness,
    )


def run_orgs(
    args: argparse.Namespace,
    ctx: Context,
    config: Config,
    audit: _Audit,
    root: Path,
    loaded: tuple[OrgEntry, ...],
) -> int:
    """`--orgs FILE`: every organization audited on its own (store, lock, reports folder
    `<root>/<name>/`), `--workers` at once; a summary table; exit 2 if any errored, else 1
    if any has findings, else 0."""
    from auditor.workflows.orgs import Crew, OrgResult, audit_orgs, overall_exit, overall_reason

    for flag in ("org", "base_url", "app_url", "token_file"):
        if getattr(args, flag, None) is not None:
            option = "--" + flag.replace("_", "-")
            raise UsageError(f"{option} cannot be combined with --orgs (the file gives each one's)")
    workers = DEFAULT_WORKERS if args.workers is None else args.workers
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    entries = {e.name: e for e in loaded}
    _refuse_state_clash(config, loaded, root)
    # An unusable folder, or one another auditor command is writing, stops the run before any
    # organization starts; it is held until the summary is written (each organization's
    # worker holds its own folder as a single run does).
    with hold_out_dir(root):
        # The checks have passed: the earlier summary and every organization's reports go
        # before any starts, so an interrupt never leaves the ones not yet started with
        # yesterday's reports (findings.sarif among them) beside a summary saying "interrupted".
        clear_old_reports(root, orgs=True)
        for name in entries:  # each held while it is cleared: never another command's reports
            # (held elsewhere: left as it is, and its worker says so)
            with contextlib.suppress(ReportError), hold_out_dir(root / name):
                clear_old_reports(root / name)
        started: dict[str, _Published] = {}

        def audit_one(name: str) -> OrgResult:
            started[name] = _Published(writing=threading.Lock())
            one = org_config(config, entries[name], root / name)  # its token known since start
            return _audit_org(one, args, ctx, audit, started[name])

        finished: dict[str, OrgResult] = {}

        def done(result: OrgResult) -> None:
            finished[result.name] = result
            for line in result.log:  # with --quiet, what a single run's --quiet prints: its errors
                print(f"[{result.name}] {line}", file=ctx.stderr, flush=True)

        crew = Crew()  # (an interrupt cancels the organizations being audited)
        try:
            results = audit_orgs(list(entries), audit_one, workers=workers, done=done, crew=crew)
        except KeyboardInterrupt as exc:  # the organizations done so far keep their reports
            # (as `audit_orgs` does: an interrupt landing as it waited did not always reach
            # its handler there, CPython 3.11)
            crew.stop()
            code, word = interrupt_exit(exc)
            stood: dict[str, OrgResult] = {}
            cut_short: dict[str, _Published] = {}
            for name in entries:  # the organizations cut short: partial reports, marked incomplete
                if name in started and name not in finished:
                    with started[name].lock:  # its worker records it complete now, or never
                        if started[name].recorded:  # done and recorded: its reports stand
                            why = f"{word} {RECORDED_STANDS} stand"
                            stood[name] = OrgResult(name, code, why, out_dir=root / name)
                            continue
                        started[name].cut = True
                    cut_short[name] = started[name]
            removed, late = _cut_short(cut_short, root, ctx, crew)
            for name, published in cut_short.items():  # the reports gone: written up again
                one = org_config(config, entries[name], root / name)
                with contextlib.suppress(AuditorError, OSError):  # the summary still follows
                    _write_interrupted(
                        audit.loaded,
                        _options(one, args, audit),
                        root / name,
                        args.outputs,
                        replace(ctx, stderr=io.StringIO()),  # the summary says it was cut short
                        published,
                        sarif_removed=removed[name],
                    )
            cut = OrgResult("", code, f"{word} before it finished")
            results = [
                finished.get(name) or stood.get(name) or replace(cut, name=name) for name in entries
            ]
            results = [
                replace(r, reason=f"{r.reason} ({late[r.name]})") if r.name in late else r
                for r in results
            ]
            _org_summary(results, root, args, ctx, ended=(code, word))
            print(f"auditor: exit {code}: {word}", file=ctx.stderr)
            return code
        _org_summary(results, root, args, ctx)
        code = overall_exit(results)
        print(f"auditor: exit {code}: {overall_reason(results)}", file=ctx.stderr)
        return code


#: How long an interrupt of `run --orgs` waits for the organizations it cuts short: for their
#: workers to end their stores (a write rolled back, a first sync's store removed) and to
#: finish the report file each is writing (report.pdf takes minutes).
_WRITING_WAIT = 3.0
STILL_WRITING = "its worker was still writing {file}: its reports were written up without it"
STORE_LEFT = (
    "its worker had not ended its store {seconds} s after the interrupt: the store was not "
    "cleaned up (a first sync's empty store, a -journal or this run's pid in its lock may be "
    "left; the next run goes on from it)"
)


def _cut_short(
    cut: dict[str, _Published], root: Path, ctx: Context, crew: Crew
) -> tuple[dict[str, bool], dict[str, str]]:
    """The organizations an interrupt of `run --orgs` cut short (their `cut` set, so their
    workers begin no other report file and record nothing; cancelled, `Crew.stop`): each
    worker is waited for to end its audit (its store ended in its own thread, as an
    interrupted single run ends its own) and the report file it is writing (at most
    `_WRITING_WAIT` s in all; one still running then is said on stderr), then every report
    they wrote goes (but a complete report.pdf, as `_unpublish`), with Ctrl-C and SIGTERM held
    for those removals, before any is written up as interrupted: a second signal, even while
    waiting, leaves no report claiming a complete run. Gives whether each one's findings.sarif
    was among those removed, and why each one still running after the wait was left so."""
    late: dict[str, str] = {}
    deadline = time.monotonic() + _WRITING_WAIT
    try:
        for name in crew.wait(deadline):
            late[name] = STORE_LEFT.format(seconds=f"{_WRITING_WAIT:g}")
            print(f"auditor: [{name}] {late[name]}", file=ctx.stderr, flush=True)

        for name, published in cut.items():
            lock = published.writing
            if lock is None:
                continue
            if lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                lock.release()
            else:
                shown = STILL_WRITING.format(file=published.file)
                late[name] = f"{late[name]}; {shown}" if name in late else shown
                print(f"auditor: [{name}] {shown}", file=ctx.stderr, flush=True)
    finally:  # (also when a second signal cut the wait short)
        removed: dict[str, bool] = {}
        with held():
            for name in cut:
                removed[name] = SARIF in remove_reports(root / name, keep=(PDF,))
    return removed, late


#: Beside an SQLite state file: its lock (`<file>.lock`) and SQLite's own files.
_STATE_COMPANIONS = ("", ".lock", "-journal", "-wal", "-shm")


def _refuse_state_clash(config: Config, loaded: tuple[OrgEntry, ...], root: Path) -> None:
    """A UsageError when an organization's report folder (`<root>/<name>`) would take the name
    of a file an organization's SQLite store writes there (`--state rep/state.db --out rep`
    with an organization named `state-acme.db`: acme's state file, or that folder, is refused
    at random, whichever comes second). Compared without case, as a file system may."""
    if config.state_url:  # PostgreSQL: no file of its own
        return
    folder = config.state_path.parent.resolve()
    if folder != root.resolve():
        return
    files: dict[str, tuple[str, str]] = {}
    for entry in loaded:
        name = org_config(config, entry, root / entry.name).state_path.name
        for suffix in _STATE_COMPANIONS:
            files.setdefault((name + suffix).casefold(), (name + suffix, entry.name))
    for entry in loaded:
        if entry.name.casefold() in files:
            file, owner = files[entry.name.casefold()]
            raise UsageError(
                f"organization {entry.name!r}: its report folder would be named as {file}, "
                f"a file of the state of organization {owner!r} in the same folder; give "
                "--state a folder other than --out"
            )


def _org_summary(
    results: list[OrgResult],
    root: Path,
    args: argparse.Namespace,
    ctx: Context,
    ended: tuple[int, str] | None = None,
) -> None:
    """summary.json, and the table on stdout (not with --quiet)."""
    from auditor.workflows.orgs import summary_table, write_org_summary

    write_org_summary(results, root, ended)
    if not args.quiet:
        print(summary_table(results), file=ctx.stdout)
        from auditor.redact.shown import printed_path

        shown = printed_path(root, ctx.secrets())
        print(f"reports: {shown}/<organization>/; summary: {shown}/summary.json", file=ctx.stdout)


_CAUSE = lazy_regex(globals(), "_CAUSE", r"^auditor: (?:error: |sync failed)")
_EXIT_LINE = lazy_regex(globals(), "_EXIT_LINE", r"^auditor: (?:exit \d+: |error: )(.*)$")


def _audit_org(
    config: Config,
    args: argparse.Namespace,
    ctx: Context,
    audit: _Audit,
    published: _Published | None = None,
) -> OrgResult:
    """One organization of an --orgs run, its output kept for the caller to show."""
    from auditor.workflows.orgs import OrgResult

    err = io.StringIO()  # stdout and stderr in one, in the order written
    quiet = replace(ctx, stdout=err, stderr=err)
    outcome = None
    secrets = {config.token or "", *ctx.secrets()}
    try:
        code, outcome = _run_one(config, args, quiet, audit, config.out_dir or Path(), published)
    except Exception as exc:  # one organization's bug must not hide the others' results
        paths = {str(p) for p in (config.state, config.out_dir) if p} | ctx.paths
        debug = bool(getattr(args, "debug", False))
        code = report_failure(exc, err, secrets, debug=debug, paths=paths)
    lines = [scrubbed(line, secrets) for line in err.getvalue().splitlines()]
    reasons = [m.group(1) for m in map(_EXIT_LINE.match, lines) if m]
    if code == EXIT_ERROR:  # the first cause says more than "the audit is incomplete"
        causes = [line.removeprefix("auditor: ") for line in lines if _CAUSE.match(line)]
        reasons = causes[:1] or reasons
    data = outcome.data if outcome is not None else None
    return OrgResult(
        name=config.org,
        code=code,
        reason=reasons[-1] if reasons else "interrupted",
        findings=None if outcome is None else len(outcome.failing),
        new=None if data is None else new_count(data.findings),
        new_waived=None if data is None else new_waived_count(data.findings),
        resolved=None if data is None else len(data.resolved),
        out_dir=config.out_dir,
        log=tuple(lines),
    )


def _audit(
    config: Config,
    loaded: LoadedPolicy,
    options: AuditOptions,
    out_dir: Path,
    publish: Publisher,
    *,
    offline: bool,
    quiet: bool = False,
    ctx: Context,
    folder: contextlib.ExitStack[bool | None],
) -> AuditOutcome:
    if not offline:
        require_remote(config)  # a missing address or token is a usage error, not a failed sync
    # A first online run whose sync never completes (cut off, the service out of reach, a bad
    # `--out`) leaves no empty state file behind, as `sync` does: a CI cache would keep it.
    opened: contextlib.AbstractContextManager[Store] = (
        open_store(config) if offline else store_kept_only_if_synced(config, even_on_success=True)
    )
    with opened as store:
        # An unusable folder, or one another auditor command is writing, stops the run before
        # it is recorded; the folder is held until the caller has written the reports.
        made = folder.enter_context(hold_out_dir(out_dir))
        # The checks have passed: an earlier run's reports go, even if this run then fails.
        clear_old_reports(out_dir)
        try:
            return _sync_and_audit(store, config, loaded, options, publish, offline, quiet, ctx)
        except Exception:  # not an interrupt: its partial reports go into the folder
            from auditor.cli.outdir import remove_made

            # a run stopped before it wrote anything (`--at` before the first revision) leaves
            # no empty folder, nor the parents made for it (`--out new/x`)
            remove_made(out_dir, made)
            raise


def _sync_and_audit(
    store: Store,
    config: Config,
    loaded: LoadedPolicy,
    options: AuditOptions,
    publish: Publisher,
    offline: bool,
    quiet: bool,
    ctx: Context,
) -> AuditOutcome:
    problems: list[str] = []
    if not offline:
        try:
            usage = options.usage_days is not None
            readiness = options.readiness
            summary = sync_store(store, config, ctx, quiet=quiet, usage=usage, readiness=readiness)
            quality = summary.data_quality
            if summary.reports_skipped and readiness:  # on stderr and in every report, as `sync`
                skipped = reports_not_synced(store.count_reports())
                quality = (*quality, skipped)
                if not quiet:
                    print(f"auditor: warning: readiness reports {skipped.problem}", file=ctx.stderr)
            options = replace(options, data_quality=quality)
            if not quiet:
                print(
                    f"synced: {summary.revisions_new} new revisions, "
                    f"{summary.reports_new} new reports",
                    file=ctx.stderr,
                )
        except AuditorError as exc:  # keep what is stored; the run is marked incomplete
            from auditor.workflows.sync import failure_of

            why = failure_of(exc)  # (said once: `sync failed, auditing …: sync failed, …`)
            print(
                f"auditor: sync failed, auditing the stored data: {terminal_text(why)}",
                file=ctx.stderr,
            )
            problems.append(f"sync failed: {why}")
    if problems:
        options = replace(options, not_evaluated=tuple(problems))
    stored = stored_address(config, store, offline)  # it said `(offline)`, naming no service
    if stored is not None:
        options = replace(options, api_address=stored)
    check_at(store, options.at)
    why = "--offline" if offline else "its sync failed" if problems else ""
    options = replace(options, source=data_source(store, not_synced=why))
    # (after a sync that committed, what it learned is let go once the policy is redacted)
    outcome = run_audit(store, loaded, options, publish=publish, after_sync=not why)
    if not quiet:  # a criterion of the readiness model that no report holds (a misspelt id)
        for warning in outcome.data.data_quality:
            if warning.item == MODEL_ITEM:
                print(f"auditor: warning: {terminal_text(warning.describe())}", file=ctx.stderr)
    return outcome


def data_source(store: Store, *, not_synced: str = "") -> DataSource:
    """When the state's data was last fetched (its last finished sync), whether this run
    synced (`not_synced`: why not, "" when it did), and which stored revisions that sync
    compared with the service."""
    from auditor.report.model import DataSource

    last = store.last_sync()
    recorded, rechecked = store.history_recheck()
    return DataSource(
        last_sync=last.finished if last is not None else None,
        synced=not not_synced,
        not_synced=not_synced,
        rechecked=rechecked,
        recheck_recorded=recorded,
    )


def reports_not_synced(stored: int) -> DataWarning:
    """The data-quality warning of a run whose sync fetched no readiness reports because no
    app URL is configured (none given, or `AUDITOR_APP_URL=` set empty, which reads as unset):
    the readiness rules judge what the store holds, which no sync of this run refreshed."""
    held = (
        f"the {stored} stored report{'s are' if stored != 1 else ' is'} as an earlier sync "
        "left them"
        if stored
        else "none is stored, so no repository is judged"
    )
    return DataWarning(
        "readiness reports",
        "not synced: no app URL is configured (--app-url, AUDITOR_APP_URL or app_url; an empty "
        f"AUDITOR_APP_URL reads as unset); {held}",
        "this run's sync",
        "configuration",
    )


def _write_whole(
    data: ReportData, out_dir: Path, outputs: tuple[str, ...], published: _Published
) -> tuple[str, ...]:
    """The reports written so that none is left claiming more than the state file holds: a
    write that failed part-way (the disk full at findings.sarif) left the ones before it
    claiming a complete run, which the state file does not record. Then every report of this
    run goes (the folder was cleared when the run began: what auditor wrote there is this
    run's), freeing their space too, and each is written once more (but report.pdf: minutes),
    marked incomplete, report.md and findings.json first: the lines why are returned, so the
    run is not recorded complete. If one of those fails too, the ReportError names both
    causes, what was written again and what was not. In `run --orgs`, each report file is a
    step of its own (`_Published.turn`): once the organization is cut short, none is begun."""
    try:
        _write_each(data, out_dir, outputs, published)
        return ()
    except ReportError as exc:
        failed = str(exc)
    with published.turn(out_dir, "its reports, removed"):
        removed = remove_reports(out_dir)
    notes = [REWRITTEN.format(error=failed)]
    if "pdf" in outputs:
        notes.append(REWRITTEN_PDF)
    again = replace(data, complete=False, output_notes=(*data.output_notes, *notes))
    published.data, published.outputs = again, tuple(o for o in outputs if o != "pdf")
    written: list[str] = []
    refused: dict[str, str] = {}
    # (each with the mode kept of the report cleared when the run began, or of the one just
    # removed: the modes are forgotten when the command ends, `run_command`)
    with shared_order(again):
        for output in sorted(published.outputs, key=_REWRITE_ORDER.index):
            try:  # each on its own: one that fits is kept (it says the run is incomplete)
                with published.turn(out_dir, OUTPUTS[output]):
                    write_reports(again, out_dir, (output,))
                written.append(OUTPUTS[output])
            except ReportError as exc:
                refused[OUTPUTS[output]] = str(exc)
    if refused:
        raise ReportError(_unwritten(data, out_dir, failed, written, refused, removed))
    return tuple(notes)


def _write_each(
    data: ReportData, out_dir: Path, outputs: tuple[str, ...], published: _Published
) -> None:
    """`write_reports`; in `run --orgs`, one report file at a time (`_Published.turn`)."""
    if published.writing is None:
        write_reports(data, out_dir, outputs)
        return
    # counted and ordered once for the files; the kept modes are forgotten when the command
    # ends (`run_command`), not when the worker stops: the interrupt's write-up, in the main
    # thread, writes the organization's reports again with them
    with shared_order(data):
        for output in (o for o in OUTPUTS if o in outputs):  # (the order write_reports writes)
            with published.turn(out_dir, OUTPUTS[output]):
                write_reports(data, out_dir, (output,))


#: The order a run's reports are written again after a write failed: the job summary's and
#: the machine-readable record first, the largest last.
_REWRITE_ORDER = ("md", "json", "junit", "html", "oscal", "sarif")


def _unwritten(
    data: ReportData,
    out_dir: Path,
    first: str,
    written: list[str],
    refused: dict[str, str],
    removed: set[str],
) -> str:
    """The error of a run whose reports could not all be written, even marked incomplete: why
    the state file does not hold it complete, the write that failed, what is left."""
    unrecorded = [line for line in data.not_evaluated if line.startswith(UNRECORDED)]
    cause = f"{unrecorded[0]}; and its" if unrecorded else "the run is not recorded complete: its"
    second = next(iter(refused.values()))
    tail = "" if second == first else f"; written again, marked incomplete: {second}"
    if written:
        return (
            f"{cause} reports could not all be written: {first}; written again, marked "
            f"incomplete: {', '.join(written)}; not written: {', '.join(refused)}"
            + ("" if second == first else f" ({second})")
        )
    left = reports_in(out_dir)  # (one that could not be removed)
    where = f"{', '.join(left)} could not be removed from" if left else "none is left in"
    gone = [n for n in OUTPUTS.values() if n in removed]
    shown = f" (removed: {', '.join(gone)})" if gone else ""
    return f"{cause} reports could not be written, so {where} {out_dir}{shown}: {first}{tail}"


def _unpublish(out_dir: Path, published: _Published) -> bool:
    """Interrupted once the evaluation finished: the reports this run wrote complete (its
    folder was cleared when it began) go at once, with Ctrl-C and SIGTERM held for those few
    removals, before the incomplete ones are written. A second signal (Ctrl-C twice, SIGINT
    then SIGTERM) cuts that writing short, never a report left claiming a complete run (it
    left findings.json `"complete": true`, no banner, exit 130/143). True when this run's
    findings.sarif was among them."""
    if published.data is None:
        return False
    with held():  # (a report.pdf written whole stays: it is not rendered again, see below)
        removed = remove_reports(out_dir, keep=(PDF,))
    return SARIF in removed


def _files_cited(loaded: LoadedPolicy, published: _Published | None) -> tuple[PolicyFile, ...]:
    """The policy files as a report interrupted before the evaluation finished cites them.
    Once the evaluation began (`published.files`), as the run would have: one that holds a
    secret by the digest of its copy with the secret as a marker under the state's key and
    memory (`with_copy_digests`), the bundle's copy. Before, which secrets a file holds is not
    known: the state file may not be open, or its sync may not have taught it all it will
    know, and a secret it knows (learned by its place in the data, `env.DB_PASSWORD`) that a
    file also writes (a title) is a marker in the bundle's copy; the sha256 of the file as
    written, with the copy and the marker's length, would let guesses of it be tested
    offline (reviewer R32 #1). So every file of the user's own is cited by a digest under a
    key kept nowhere (`with_digests_keyed_nowhere`); a shipped pack by its bytes'."""
    from auditor.policy.redacted import with_digests_keyed_nowhere

    if published is not None and published.files is not None:
        return published.files
    return with_digests_keyed_nowhere(loaded.policy).files


def _write_interrupted(
    loaded: LoadedPolicy,
    options: AuditOptions,
    out_dir: Path,
    outputs: tuple[str, ...],
    ctx: Context,
    published: _Published | None = None,
    sarif_removed: bool = False,
) -> None:
    """The partial reports, without a SARIF: one without the run's results would close every
    open code-scanning alert of its category. Interrupted while the reports were written (the
    evaluation finished: `published`), they keep every result, marked incomplete, for the run
    is not recorded in the state file; the PDF is not rendered again (minutes, after a cancel)."""
    if published is not None and published.data is not None:
        notes = [INTERRUPTED_WRITING]
        if "pdf" in published.outputs and not (out_dir / "report.pdf").is_file():
            notes.append(INTERRUPTED_PDF)  # (the earlier run's was removed when this one began)
        data = published.data
        data = replace(data, complete=False, output_notes=(*data.output_notes, *notes))
        outputs = tuple(o for o in published.outputs if o != "pdf")
        why = INTERRUPTED_WRITING_SARIF
        own = "sarif" in published.outputs  # written (or begun) before the interrupt
    else:
        header = RunHeader(options.run_id, options.now, "run", options.api_address, options.fail_on)
        interrupted = ("interrupted before the evaluation finished",)
        data = build_report_data(header, _files_cited(loaded, published), (), interrupted)
        why, own = INTERRUPTED_SARIF, False
    data, outputs, line = without_sarif(data, outputs, out_dir, why, own=own, removed=sarif_removed)
    if outputs:
        write_reports(data, out_dir, outputs)
    say(line, ctx)


INTERRUPTED_WRITING = (
    "interrupted while the reports were written: every result of the evaluation is here, but "
    "the run is not recorded in the state file (the next run marks new and resolved findings "
    "against the last recorded one)"
)
INTERRUPTED_PDF = "report.pdf not written: interrupted while it was rendered"
INTERRUPTED_WRITING_SARIF = (
    "findings.sarif not written: the run was interrupted (an interrupted run writes no SARIF "
    "for code scanning)"
)
RECORDED_STANDS = "after the run was recorded complete in the state file: its reports"
REWRITTEN = (
    "the run is not recorded complete in the state file: the reports could not be written "
    "({error}) and were written again, marked incomplete (the next run compares with the last "
    "recorded run)"
)
REWRITTEN_PDF = (
    "report.pdf not written: it is not rendered again after a report could not be written"
)
