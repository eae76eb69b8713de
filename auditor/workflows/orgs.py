"""Many organizations in one run: each audited on its own, a bounded number at a time.

Takes the organizations' names and a function auditing one (the cli builds it: sync, evaluate,
reports into the organization's folder, with its own store and lock), gives one `OrgResult`
per organization, in the order given, a summary table and the overall exit code. One
organization's failure (an error, even an unexpected exception) never stops the others.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.common.files import write_atomic
from auditor.common.interrupts import Cancel, Cancelled, cancellable, may_outlive
from auditor.common.jsonutil import dumps_pretty
from auditor.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, AuditorError
from auditor.report.model import ORGS_SUMMARY, new_words

#: `<root>/summary.json`, written by `write_org_summary` beside the organizations' folders.
SUMMARY_FILE = ORGS_SUMMARY
#: Every name the run writes in the root (besides the organizations' folders and the
#: temporary files of `write_atomic`, which start with `.`): no organization may be named so.
ROOT_FILES = (SUMMARY_FILE,)

_STATUS = {EXIT_OK: "clean", EXIT_FINDINGS: "findings", EXIT_ERROR: "error"}


@dataclass(frozen=True)
class OrgResult:
    """How one organization's audit ended."""

    name: str
    code: int  # its own exit code by the usual rules
    reason: str  # the one line saying why (the `auditor: exit N: …` reason, or the error)
    findings: int | None = None  # failing findings at or above --fail-on; None: no audit
    new: int | None = None  # first seen tonight, waived ones included
    resolved: int | None = None
    out_dir: Path | None = None
    log: tuple[str, ...] = ()  # what the audit printed, for the caller to show
    new_waived: int | None = None  # of `new`, those a waiver covers (said apart)

    @property
    def new_text(self) -> str:
        """`38` or `38 (+5 waived)` (`-`: no audit), as the run's own headlines say it."""
        if self.new is None:
            return "-"
        return new_words(self.new, self.new_waived or 0)

    @property
    def status(self) -> str:
        """clean, findings, error, or interrupted."""
        return _STATUS.get(self.code, "interrupted")


class Crew:
    """The organizations being audited (`audit_orgs`), each with its `Cancel`: an interrupt
    (Ctrl-C or SIGTERM reach the main thread alone) cancels them and starts no other (`stop`),
    and the caller waits for their threads to end (`wait`), each having ended its own store in
    its own thread as an interrupted single run does (a thread's store connection is its
    own: the main thread never touches it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._running: dict[str, tuple[Cancel, threading.Event]] = {}

    def begin(self, name: str) -> Cancel | None:
        """`name`'s audit begins (in its thread), with its cancel; None once stopped."""
        with self._lock:
            if self._stopped:
                return None
            cancel = Cancel()
            self._running[name] = (cancel, threading.Event())
            return cancel

    def end(self, name: str) -> None:
        """`name`'s audit has ended (its store closed)."""
        with self._lock:
            _, ended = self._running.pop(name)
        ended.set()

    def stop(self) -> None:
        """Cancel every organization being audited; none begins after."""
        with self._lock:
            self._stopped = True
            running = list(self._running.values())
        for cancel, _ in running:
            cancel.cancel()

    def wait(self, deadline: float) -> list[str]:
        """Wait (until `deadline`, `time.monotonic`) for the organizations being audited to
        end; the names of those still running then."""
        with self._lock:
            running = list(self._running.items())
        return [
            name
            for name, (_, ended) in running
            if not ended.wait(max(0.0, deadline - time.monotonic()))
        ]


def audit_orgs(
    names: Sequence[str],
    audit_one: Callable[[str], OrgResult],
    *,
    workers: int,
    done: Callable[[OrgResult], None] | None = None,
    crew: Crew | None = None,
) -> list[OrgResult]:
    """Audit every organization, at most `workers` at once; `done` sees each result as it
    arrives (in completion order). Gives the results in the order of `names`.

    On Ctrl-C or SIGTERM (a KeyboardInterrupt here) no other organization starts, and those
    being audited are cancelled (`crew`, for the caller to wait for them): each stops at its
    next check point, its audit ending as an interrupted single run's does. The workers are
    daemon threads: one still busy (writing report.pdf) does not keep the process alive."""
    crew = crew or Crew()
    waiting: queue.SimpleQueue[str] = queue.SimpleQueue()
    for name in names:
        waiting.put(name)
    finished: queue.SimpleQueue[OrgResult] = queue.SimpleQueue()

    def work() -> None:
        while True:
            try:
                name = waiting.get_nowait()
            except queue.Empty:
                return
            cancel = crew.begin(name)
            if cancel is None:  # interrupted: no other begins
                return
            try:
                with cancellable(cancel):
                    result = _guarded(audit_one, name)
            finally:
                crew.end(name)
            finished.put(result)

    for n in range(max(1, min(workers, len(names)))):
        may_outlive(threading.Thread(target=work, name=f"auditor-org-{n}", daemon=True)).start()
    results: dict[str, OrgResult] = {}
    try:
        while len(results) < len(names):
            try:
                result = finished.get(timeout=0.2)  # short waits: Ctrl-C is seen at once
            except queue.Empty:
                continue
            results[result.name] = result
            if done is not None:
                done(result)
    except BaseException:
        crew.stop()
        raise
    return [results[name] for name in names]


def _guarded(audit_one: Callable[[str], OrgResult], name: str) -> OrgResult:
    try:
        return audit_one(name)
    except AuditorError as exc:
        return OrgResult(name, exc.exit_code, str(exc))
    except Cancelled:  # (the main thread writes it up as interrupted)
        return OrgResult(name, EXIT_INTERRUPTED, "interrupted")
    except BaseException as exc:  # a bug in one organization's audit must not
        # end the others, nor end its worker without a result (the run would wait for ever):
        # a KeyboardInterrupt or SystemExit raised in a worker thread (Ctrl-C itself reaches
        # only the main thread) is that organization's error too.
        return OrgResult(name, EXIT_ERROR, f"unexpected {type(exc).__name__}: {exc}")


def overall_exit(results: Sequence[OrgResult]) -> int:
    """2 if any organization errored (or was interrupted), else 1 if any has failing
    findings, else 0."""
    codes = {r.code for r in results}
    if codes - {EXIT_OK, EXIT_FINDINGS}:
        return EXIT_ERROR
    return EXIT_FINDINGS if EXIT_FINDINGS in codes else EXIT_OK


def overall_reason(results: Sequence[OrgResult]) -> str:
    """The last line's reason: how many organizations ended how."""
    failed = [r.name for r in results if r.status in ("error", "interrupted")]
    found = [r.name for r in results if r.status == "findings"]
    total = len(results)
    if failed:
        return (
            f"{len(failed)} of {total} organization(s) could not be audited ({', '.join(failed)})"
        )
    if found:
        return f"{len(found)} of {total} organization(s) have findings ({', '.join(found)})"
    return f"all {total} organization(s) clean"


def summary_table(results: Sequence[OrgResult]) -> str:
    """One line per organization: status, failing findings, new, resolved, exit code, reason."""
    width = max([len("ORG"), *(len(r.name) for r in results)])
    # NEW as the run's headlines say it: `38 (+5 waived)` when waivers cover some
    new_width = max([5, *(len(r.new_text) for r in results)])
    head = f"{'ORG':<{width}}  {'STATUS':<11} {'FINDINGS':>8} {'NEW':>{new_width}} {'RESOLVED':>8}"
    lines = [f"{head}  EXIT  REASON"]
    for r in results:
        counts = [("-" if n is None else str(n)) for n in (r.findings, r.new, r.resolved)]
        lines.append(
            f"{r.name:<{width}}  {r.status:<11} {counts[0]:>8} {r.new_text:>{new_width}} "
            f"{counts[2]:>8}  {r.code:>4}  {r.reason}"
        )
    return "\n".join(lines)


def write_org_summary(
    results: Sequence[OrgResult], root: Path, ended: tuple[int, str] | None = None
) -> Path:
    """`<root>/summary.json`: per organization its status, counts, exit code, reason and
    report folder, and the overall exit code (for dashboards and CI steps); `ended`: the code
    and reason the process ends with when that is not the organizations' (a signal)."""
    root.mkdir(parents=True, exist_ok=True)
    code, reason = ended or (overall_exit(results), overall_reason(results))
    body = {
        "exit_code": code,
        "reason": reason,
        "organizations": [
            {
                "name": r.name,
                "status": r.status,
                "exit_code": r.code,
                "reason": r.reason,
                "failing_findings": r.findings,
                "new": r.new,
                "new_waived": r.new_waived,
                "resolved": r.resolved,
                "reports": r.out_dir.name if r.out_dir is not None else None,
            }
            for r in results
        ],
    }
    path = root / SUMMARY_FILE
    write_atomic(path, dumps_pretty(body))
    return path
