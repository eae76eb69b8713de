"""A command starved of memory, and signals that land where a command is ending or cleaning up
(a second Ctrl-C, SIGINT then SIGTERM, one after the last line): one line, the documented exit
code, and nothing left in `--out` that claims more than the command did (tester T18).

The signals are real ones sent by the process to itself at a point a hook marks (a function
wrapped in a small driver script), so each test is deterministic."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
REVIEW = ["review", str(EXAMPLES / "proposed-settings.yaml")]
REVIEW += ["--against", str(EXAMPLES / "live-settings.yaml")]


def _script(body: str, argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`body` (hooks), then the `auditor` command's entry with `argv`, in a new interpreter."""
    code = f"import os, signal, sys\n{body}\nimport auditor.__main__ as m\nsys.exit(m.entry())\n"
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True, text=True, cwd=cwd, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO), **env}, preexec_fn=_heeding_signals,
    )  # fmt: skip


def _heeding_signals() -> None:
    """In the child, Ctrl-C and SIGTERM as a terminal gives them: a suite started in the
    background of a non-interactive shell (a CI step's `cmd &`) passes SIGINT on ignored, and
    Python then never raises KeyboardInterrupt for it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


# -- out of memory (#5) -----------------------------------------------------------------------

STARVED = """
import auditor.cli.cmd_review as r
class Starved:  # the memory limit reached: each import not done yet fails as its allocation would
    def find_spec(self, *args):
        raise MemoryError
def review_command(args, ctx):
    sys.meta_path.insert(0, Starved())
    raise {raised}
r.review_command = review_command
"""


@pytest.mark.parametrize(
    ("raised", "line"),
    [
        (
            "MemoryError",
            "auditor: error: out of memory: the command needed more than this process may use (a "
            "`ulimit -v` or a container's memory limit); give it more and run it again",
        ),
        (
            "RuntimeError('boom')",
            "auditor: error: unexpected RuntimeError (rerun with --debug or AUDITOR_DEBUG=1 for "
            "the traceback)",
        ),
    ],
    ids=["out-of-memory", "another-error"],
)
def test_an_error_whose_wording_cannot_import_is_one_line_and_exit_2(
    tmp_path: Path, raised: str, line: str
) -> None:
    """The error handler imported its helpers when an error came: under `ulimit -v` that import
    failed too, and `review` exited 1 (findings, to a PR gate) with a two-part traceback; where
    it got through, the line was `unexpected MemoryError:` with nothing after it."""
    done = _script(STARVED.format(raised=raised), REVIEW, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [line]


def _limited(megabytes: int) -> None:
    size = megabytes << 20
    resource.setrlimit(resource.RLIMIT_AS, (size, size))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux counts it")
def test_review_under_real_memory_limits_never_exits_1_with_a_traceback(tmp_path: Path) -> None:
    """A real `ulimit -v` at the sizes where the loading, the command and the error's own
    wording each ran out (tester T18: 33-46 MB here): exit 2 and one line, or the review done."""
    for megabytes in (28, 31, 33, 36, 39, 46, 52):
        done = subprocess.run(
            [sys.executable, "-m", "auditor", *REVIEW, "--out", str(tmp_path / str(megabytes))],
            capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
            preexec_fn=lambda m=megabytes: (_heeding_signals(), _limited(m)),
        )  # fmt: skip
        lines = done.stderr.splitlines()
        assert "Traceback" not in done.stderr, (megabytes, done.stderr)
        if done.returncode < 0:  # a C extension that crashed on a failed allocation (SIGSEGV,
            continue  # SIGABRT; where the limit falls moves with address-space randomisation)
        if done.returncode == 2 and not lines:  # (rare: no memory left even to write the line;
            continue  # the exit code says it: 1 in 60 runs at 46 MB)
        if done.returncode == 2:
            assert len(lines) == 1 and lines[0].startswith("auditor: error: "), (megabytes, lines)
            assert "MemoryError:" not in lines[0], (megabytes, lines)
        else:  # it had memory enough: the review's own verdict
            assert done.returncode == 1 and lines[-1].startswith("auditor: exit 1: "), lines


# -- a signal after the last line (#9) --------------------------------------------------------

AFTER_LAST_LINE = """
SIGNALS = {signals}
class Stderr:  # sends this process the signals as soon as the last line has been written
    def __init__(self, stream):
        self.stream = stream
    def write(self, text):
        written = self.stream.write(text)
        if text.startswith("auditor: exit") and SIGNALS:
            self.stream.flush()
            for signum in SIGNALS:
                os.kill(os.getpid(), signum)
            SIGNALS.clear()
        return written
    def __getattr__(self, name):
        return getattr(self.stream, name)
sys.stderr = Stderr(sys.stderr)
"""


@pytest.mark.parametrize(
    "after",
    [[signal.SIGINT], [signal.SIGTERM], [signal.SIGINT, signal.SIGTERM]],
    ids=["INT", "TERM", "INT+TERM"],
)
def test_a_signal_after_the_last_line_is_ignored(tmp_path: Path, after: list[int]) -> None:
    """README: a signal that lands once a command has ended (its last line said) is ignored,
    the exit code is the command's. A Ctrl-C just after `auditor: exit 1: …` printed a second
    line, `auditor: exit 130: interrupted`, and a KeyboardInterrupt traceback, and the process
    died by SIGINT; SIGTERM killed it (-15)."""
    body = AFTER_LAST_LINE.format(signals=[int(s) for s in after])
    done = _script(body, [*REVIEW, "--out", str(tmp_path / "r")], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert [line for line in lines if line.startswith("auditor: exit")] == [lines[-1]]
    assert lines[-1].startswith("auditor: exit 1: 4 findings introduced by the change")


def test_a_sigterm_after_an_interrupts_last_line_is_ignored(tmp_path: Path) -> None:
    """Ctrl-C while the reports are written, then SIGTERM once `auditor: exit 130` is out (a
    wrapper forwarding both): a second line `exit 143`, a traceback ending in `Terminated`, and
    exit 1 or death by SIGTERM. Now: exit 130, that line last."""
    body = AFTER_LAST_LINE.format(signals=[int(signal.SIGTERM)])
    body += """
import auditor.cli.cmd_review as r
real = r.write_reports
def write_reports(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    return real(*args, **kwargs)
r.write_reports = write_reports
"""
    done = _script(body, [*REVIEW, "--out", str(tmp_path / "r")], tmp_path)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == "auditor: exit 130: interrupted"
    assert done.stderr.count("auditor: exit") == 1


# -- a second signal while an interrupted run rewrites its reports (#3) -----------------------

FIRST_AT_SARIF = """
import auditor.report as report
real_sarif = report._write_sarif
def write_sarif(*args, **kwargs):  # the first signal: as findings.sarif begins
    report._write_sarif = real_sarif
    for signum in {first}:
        os.kill(os.getpid(), signum)
    return real_sarif(*args, **kwargs)
report._write_sarif = write_sarif
"""
SECOND_AT_REWRITE = """
import auditor.cli.cmd_run as cmd_run
real_rewrite = cmd_run._write_interrupted
def write_interrupted(*args, **kwargs):  # the second: as the incomplete reports begin
    os.kill(os.getpid(), signal.SIGTERM)
    return real_rewrite(*args, **kwargs)
cmd_run._write_interrupted = write_interrupted
"""
SECOND_IN_REWRITE = """
import auditor.cli.cmd_run as cmd_run
real_rewrite, real_write = cmd_run._write_interrupted, report._write
def write_interrupted(*args, **kwargs):
    def write(path, name, *more):  # the second: once the rewrite's first report is written
        real_write(path, name, *more)
        os.kill(os.getpid(), signal.SIGTERM)
    report._write = write
    return real_rewrite(*args, **kwargs)
cmd_run._write_interrupted = write_interrupted
"""


@pytest.fixture
def synced(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """`env` with its state file synced from the emulator."""
    from auditor.cli import Context, main

    ctx = Context(env=env, stdout=io.StringIO(), stderr=io.StringIO(), cwd=str(tmp_path))
    assert main(["sync", "-q"], ctx) == 0
    return env


def _incomplete_or_absent(out: Path) -> list[str]:
    """What in `out` claims a complete run (an interrupted run's reports must not)."""
    claims = []
    if (out / "findings.sarif").exists():
        claims.append("findings.sarif")
    json_path = out / "findings.json"
    if json_path.exists() and json.loads(json_path.read_text())["complete"] is not False:
        claims.append("findings.json")
    for name, mark in [
        ("report.md", "**Incomplete:**"),
        ("report.html", '<div class="banner incomplete">'),
        ("junit.xml", 'type="incomplete"'),
    ]:
        if (out / name).exists() and mark not in (out / name).read_text():
            claims.append(name)
    return claims


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([signal.SIGINT, signal.SIGTERM], ""),
        ([signal.SIGINT, signal.SIGINT], ""),
        ([signal.SIGINT], SECOND_AT_REWRITE),
        ([signal.SIGTERM], SECOND_IN_REWRITE),
    ],
    ids=["INT+TERM", "INT+INT", "TERM-at-rewrite", "TERM-in-rewrite"],
)
def test_a_second_signal_while_reports_are_written_leaves_none_claiming_complete(
    synced: dict[str, str], tmp_path: Path, first: list[int], second: str
) -> None:
    """Ctrl-C twice (or SIGINT then SIGTERM) while `run` wrote its reports: exit 130/143 with
    findings.json `"complete": true`, report.md and report.html without the Incomplete banner
    and junit.xml missing. Whatever the second signal cuts, what is left reads incomplete."""
    out = tmp_path / "o"
    body = FIRST_AT_SARIF.format(first=[int(s) for s in first]) + second
    done = _script(body, ["run", "--offline", "--out", str(out)], tmp_path, **synced)
    assert done.returncode in (130, 143), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"auditor: exit {done.returncode}: ")
    assert _incomplete_or_absent(out) == [], (sorted(os.listdir(out)), done.stderr)
    if second == SECOND_IN_REWRITE:  # the report written before the second signal is there
        assert (out / "report.html").exists()


# -- a second signal while an interrupted export removes its bundle (#4) ----------------------

EXPORT_SIGNALS = """
import shutil
import auditor.workflows.export as export
real_write, real_rmtree = export._write, shutil.rmtree
def write(path, data):  # the first signal: once manifest.json is written
    real_write(path, data)
    if path.name == "manifest.json":
        shutil.rmtree = rmtree
        for signum in {first}:
            os.kill(os.getpid(), signum)
def rmtree(*args, **kwargs):  # the second: once the removal has removed its first folder
    real_rmtree(*args, **kwargs)
    shutil.rmtree = real_rmtree
    for signum in {second}:
        os.kill(os.getpid(), signum)
export._write = write
"""


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([signal.SIGINT], [signal.SIGTERM]),
        ([signal.SIGTERM], [signal.SIGINT]),
        ([signal.SIGINT, signal.SIGTERM], []),
    ],
    ids=["INT-then-TERM-in-removal", "TERM-then-INT-in-removal", "INT+TERM"],
)
def test_a_second_signal_while_an_export_is_removed_leaves_no_bundle(
    synced: dict[str, str], tmp_path: Path, first: list[int], second: list[int]
) -> None:
    """README: exit 130/143 always means no bundle. A second signal a millisecond after the
    first cut the removal short: exit 143 and 14-20 files left, some a bundle `verify` passed."""
    out = tmp_path / "e"
    body = EXPORT_SIGNALS.format(first=[int(s) for s in first], second=[int(s) for s in second])
    done = _script(body, ["export", "--out", str(out)], tmp_path, **synced)
    assert done.returncode in (130, 143), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"auditor: exit {done.returncode}: ")
    assert not out.exists(), sorted(str(p.relative_to(out)) for p in out.rglob("*"))


# -- a cleanup's error after the last line (#11) ----------------------------------------------

FINALIZER_AFTER_LAST_LINE = """
import sqlite3
def transaction():  # as an interrupted `Store.transaction` collected after its database closed
    try:
        yield
    finally:
        raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
class Stderr:
    def __init__(self, stream):
        self.stream = stream
    def write(self, text):
        written = self.stream.write(text)
        if text.startswith("auditor: exit"):
            self.stream.flush()
            pending = transaction()
            next(pending)
            del pending  # finalized here: `Exception ignored in: <generator …>`
        return written
    def __getattr__(self, name):
        return getattr(self.stream, name)
sys.stderr = Stderr(sys.stderr)
"""


def test_a_cleanup_error_after_the_last_line_is_not_printed(tmp_path: Path) -> None:
    """SIGINT then SIGTERM in a first `run`: after `auditor: exit 143` came `Exception ignored
    in: <generator object Store.transaction …> … Cannot operate on a closed database`, a
    traceback after the command's last line. With --debug it is still shown."""
    argv = [*REVIEW, "--out", str(tmp_path / "r")]
    done = _script(FINALIZER_AFTER_LAST_LINE, argv, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1].startswith("auditor: exit 1: ")
    assert "Exception ignored" not in done.stderr
    shown = _script(FINALIZER_AFTER_LAST_LINE, [*argv, "--debug"], tmp_path)
    assert "Cannot operate on a closed database" in shown.stderr


# -- temporary files a killed run left (#7) ---------------------------------------------------

KILLED_WRITING_HTML = """
import tempfile
real_mkstemp = tempfile.mkstemp
def mkstemp(*args, **kwargs):  # killed (`kill -9`, the OOM killer) as report.html is written
    made = real_mkstemp(*args, **kwargs)
    if str(kwargs.get("prefix", "")).startswith(".report.html."):
        os.write(made[0], b"<!DOCTYPE html>\\n<html")
        os.kill(os.getpid(), signal.SIGKILL)
    return made
tempfile.mkstemp = mkstemp
"""


def test_a_temporary_report_a_killed_run_left_is_removed_by_the_next(
    synced: dict[str, str], tmp_path: Path
) -> None:
    """A run killed with SIGKILL while writing report.html left `.report.html.XXXXXXXX.tmp`
    in `--out`, and no later run removed it: it piled up and went out with the reports. The
    next run into the folder removes it; files of other names stay."""
    out = tmp_path / "o"
    argv = ["run", "--offline", "-q", "--out", str(out)]
    killed = _script(KILLED_WRITING_HTML, argv, tmp_path, **synced)
    assert killed.returncode == -signal.SIGKILL
    (left,) = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert left.startswith(".report.html.")
    others = [".notes.abcd1234.tmp", ".report.html.keep", "report.html.abcd1234.tmp"]
    for name in others:
        (out / name).write_text("mine\n")
    done = _script("", argv, tmp_path, **synced)
    assert done.returncode in (0, 1), done.stderr
    assert not (out / left).exists()
    assert all((out / name).read_text() == "mine\n" for name in others)


# -- an interrupt while the run loads (#10) ---------------------------------------------------

INTERRUPTED_LOADING = """
import auditor.cli.cmd_run as cmd_run
real_load = cmd_run.load_inputs
def load_inputs(*args, **kwargs):  # Ctrl-C while the policy files are read
    os.kill(os.getpid(), signal.{name})
    return real_load(*args, **kwargs)
cmd_run.load_inputs = load_inputs
"""


INTERRUPTED_IMPORTING = """
class Hook:  # Ctrl-C while the run's modules load (0.2 s)
    def find_spec(self, name, path=None, target=None):
        if name == "auditor.cli.cmd_run":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.{name})
sys.meta_path.insert(0, Hook())
"""


@pytest.mark.parametrize(
    "hook", [INTERRUPTED_LOADING, INTERRUPTED_IMPORTING], ids=["inputs", "modules"]
)
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_run_interrupted_while_loading_leaves_no_earlier_reports_unmarked(
    synced: dict[str, str], tmp_path: Path, name: str, hook: str
) -> None:
    """Exit 130 means no findings.sarif in `--out` (the earlier run's is removed): a run
    interrupted in its first 0.3 s kept the earlier run's five reports, SARIF included,
    `"complete": true`, beside an exit 130. Files of other tools stay."""
    out = tmp_path / "o"
    argv = ["run", "--offline", "-q", "--out", str(out)]
    assert _script("", argv, tmp_path, **synced).returncode in (0, 1)
    assert (out / "findings.sarif").exists()
    (out / "notes.txt").write_text("mine\n")
    done = _script(hook.format(name=name), argv, tmp_path, **synced)
    assert done.returncode == 128 + getattr(signal, name), done.stderr
    assert "Traceback" not in done.stderr
    assert _incomplete_or_absent(out) == [], sorted(os.listdir(out))
    assert (out / "notes.txt").read_text() == "mine\n"


def test_a_second_signal_before_an_interrupts_last_line_is_ignored(tmp_path: Path) -> None:
    """Ctrl-C, then SIGTERM while the guard words the interrupt (before its `exit 130` line):
    the second was raised in the handler of the first, a traceback and exit 1."""
    body = """
import auditor.cli as cli
import auditor.cli.cmd_review as r
real_reports, real_exit = r.write_reports, cli.interrupt_exit
def write_reports(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    return real_reports(*args, **kwargs)
def interrupt_exit(exc):
    os.kill(os.getpid(), signal.SIGTERM)
    return real_exit(exc)
r.write_reports, cli.interrupt_exit = write_reports, interrupt_exit
"""
    done = _script(body, [*REVIEW, "--out", str(tmp_path / "r")], tmp_path)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == ["auditor: exit 130: interrupted"]


_NO_PARSE = "Not enough memory to allocate buffer for parsing: line 1 column 1 (char 0)"


@pytest.mark.parametrize(
    "error",
    [
        f"state file s.db is damaged: {_NO_PARSE}; restore a copy saved before it was damaged",
        f"e/analytics.jsonl:30: not valid JSON: {_NO_PARSE}",
        "enomem",
    ],
    ids=["stored-row-read-as-damage", "bundle-line-read-as-not-json", "enomem"],
)
def test_out_of_memory_behind_another_error_is_said_so(tmp_path: Path, error: str) -> None:
    """Under `ulimit -v` a stored row's JSON that could not be parsed for want of memory was
    `state file … is damaged … move it aside and run auditor sync to start a new one` (reviewer
    R12), advice that throws a sound state file's history away; a bundle's own line was `not
    valid JSON`, ENOMEM an `unexpected OSError`. Each is the out-of-memory line, exit 2."""
    import auditor.cli.cmd_policy as cmd_policy
    from auditor.cli import Context, main
    from auditor.errors import OUT_OF_MEMORY, StoreError

    def fails(*_args: object, **_kwargs: object) -> None:
        if error == "enomem":
            raise OSError(12, "Cannot allocate memory")
        raise StoreError(error)

    out, err = io.StringIO(), io.StringIO()
    saved = cmd_policy.load_policies
    cmd_policy.load_policies = fails
    try:
        code = main(["policy", "lint"], Context(env={}, stdout=out, stderr=err, cwd=str(tmp_path)))
    finally:
        cmd_policy.load_policies = saved
    assert code == 2
    assert err.getvalue() == f"auditor: error: {OUT_OF_MEMORY}\n"
