"""The step that runs auditor in each workflow (and in the composite Action), run as GitHub runs
it and cancelled as GitHub cancels it.

The runner (actions/runner `ProcessInvoker`) writes a `run:` script to a file, runs it with
`bash --noprofile --norc -eo pipefail FILE` (`shell: bash`: the workflows' `defaults` and each
of the Action's steps, tests/test_workflows_yaml.py) and, on a cancel or a step's
`timeout-minutes`, sends SIGINT to that shell alone, 7.5 s later SIGTERM, 2.5 s later SIGKILL,
never to its children.
A step that runs auditor as a plain command left it running on after the shell was gone, writing
the state file while the next step archived it. Here a stand-in `auditor` on PATH records the
signals it gets and exits 130/143 after a moment, as the real one does after its rollback."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import emulator_env

REPO = Path(__file__).resolve().parents[1]
WAIT = 30.0  # generous: only a step that never ends waits this long

# `auditor` as far as signals go: Python keeps a SIGINT ignored from the start ignored (as a
# command started with `&` by a shell without job control gets it), and handles it otherwise;
# auditor handles SIGTERM itself. STANDIN_MODE=busy: SIGINT is noted but the run goes on (a
# run that takes longer to stop), SIGTERM ends it.
STANDIN = """\
import os, signal, sys, time
from pathlib import Path

log = Path(os.environ["STANDIN_LOG"])


def note(line):
    with log.open("a") as f:
        f.write(line + "\\n")


def stop(signum, _frame):
    note("got " + signal.Signals(signum).name)
    if signum == signal.SIGINT and os.environ.get("STANDIN_MODE") == "busy":
        return
    time.sleep(0.5)  # the rollback, the partial reports
    note("exited")
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, stop)
if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
    signal.signal(signal.SIGINT, stop)
note("started %d" % os.getpid())
if os.environ.get("STANDIN_MODE") == "finish":
    out = Path(sys.argv[sys.argv.index("--out") + 1])
    out.mkdir(parents=True, exist_ok=True)
    (out / "findings.sarif").write_text("{}")
    note("exited")
    sys.exit(1)
time.sleep(300)
"""


def _load(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def _audit_step(name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The step that runs auditor, and its environment with each input at its default."""
    doc = _load(REPO / name)
    if name == "action.yml":
        all_steps = doc["runs"]["steps"]
        defaults = {k: str(v.get("default", "")) for k, v in doc["inputs"].items()}
    else:
        all_steps = [s for job in doc["jobs"].values() for s in job["steps"]]
        defaults = {}
    (step,) = [s for s in all_steps if "run" in s and "auditor " in s["run"] and "id" in s]
    env = {}
    for key, value in step.get("env", {}).items():
        value = str(value)
        if value.startswith("${{ inputs."):
            value = defaults[value.removeprefix("${{ inputs.").removesuffix(" }}")]
        env[key] = "" if value.startswith("${{") else value
    return step, env


STEPS = ["examples/github/nightly.yml", "examples/github/pr-review.yml", "action.yml"]


class Step:
    """One run of a step's script in a folder of its own, with the stand-in on PATH."""

    def __init__(self, tmp_path: Path, name: str, mode: str) -> None:
        step, env = _audit_step(name)
        tmp_path.mkdir()
        self.composite = name == "action.yml"
        self.log = tmp_path / "auditor.log"
        self.output = tmp_path / "github_output"
        self.output.touch()
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        auditor = bin_dir / "auditor"
        auditor.write_text(f"#!{sys.executable}\n{STANDIN}", encoding="utf-8")
        auditor.chmod(0o755)
        script = tmp_path / "step.sh"
        script.write_text(step["run"], encoding="utf-8")
        work = tmp_path / "work"
        work.mkdir()
        env.update(
            PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            GITHUB_OUTPUT=str(self.output),
            STANDIN_LOG=str(self.log),
            STANDIN_MODE=mode,
        )
        self.proc = subprocess.Popen(  # as the runner starts a `run:` step
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=work,
            env={"HOME": os.environ.get("HOME", "/"), **env},
            stdin=subprocess.DEVNULL,
            # the runner's shell starts with SIGINT at its default, whatever this process has
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def until(self, line: str, timeout: float = WAIT) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(seen.startswith(line) for seen in self.lines()):
                return True
            time.sleep(0.05)
        return False

    def auditor_pid(self) -> int:
        (started,) = [line for line in self.lines() if line.startswith("started ")]
        return int(started.split()[1])

    def outputs(self) -> list[str]:
        return self.output.read_text().splitlines()

    def ended(self, timeout: float = WAIT) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent to collect it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def step(tmp_path: Path) -> Iterator[Any]:
    """Starts a step's script; whatever the test's outcome, ends what it started."""
    started: list[Step] = []

    def start(name: str, mode: str = "") -> Step:
        started.append(Step(tmp_path / str(len(started)), name, mode))
        return started[-1]

    yield start
    for run in started:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()
        if any(line.startswith("started ") for line in run.lines()):
            pid = run.auditor_pid()
            if _alive(pid):  # an orphan of the step: the failure under test
                os.kill(pid, signal.SIGKILL)


def _runner_cancels(run: Step) -> int | None:
    """SIGINT to the step's shell; if it has not ended, SIGTERM (the runner waits 7.5 s, here
    longer); the shell's exit code, or None if it has not ended after that either."""
    run.proc.send_signal(signal.SIGINT)
    code = run.ended(10.0)
    if code is None:
        run.proc.send_signal(signal.SIGTERM)
        code = run.ended()
    return code


@pytest.mark.parametrize("name", STEPS)
def test_a_cancel_stops_auditor_and_the_step_ends_after_it_with_its_exit_code(
    step: Any, name: str
) -> None:
    """SIGINT to the step's shell reaches auditor, the step ends only once auditor has exited,
    and the step keeps auditor's 130 as its output (and, but for the Action, its exit code)."""
    run = step(name)
    assert run.until("started"), "auditor did not start"
    code = _runner_cancels(run)
    auditor_gone = not _alive(run.auditor_pid())
    assert "got SIGINT" in run.lines(), "auditor never got the SIGINT"
    assert auditor_gone and run.lines()[-1] == "exited", "the step ended while auditor ran"
    assert code == (0 if run.composite else 130)
    assert run.outputs() == ["exit-code=130"]


@pytest.mark.parametrize("name", STEPS)
def test_a_sigterm_after_the_sigint_reaches_auditor_too(step: Any, name: str) -> None:
    """auditor still busy after the SIGINT: the runner's SIGTERM reaches it as well, and the
    step ends after it with auditor's 143."""
    run = step(name, "busy")
    assert run.until("started"), "auditor did not start"
    run.proc.send_signal(signal.SIGINT)
    got_sigint = run.until("got SIGINT", 10.0)
    run.proc.send_signal(signal.SIGTERM)
    code = run.ended()
    auditor_gone = not _alive(run.auditor_pid())
    assert got_sigint, "auditor never got the SIGINT"
    assert "got SIGTERM" in run.lines(), "auditor never got the SIGTERM"
    assert auditor_gone and run.lines()[-1] == "exited", "the step ended while auditor ran"
    assert code == (0 if run.composite else 143)
    assert run.outputs() == ["exit-code=143"]


@pytest.mark.parametrize("name", STEPS)
def test_a_run_that_finishes_keeps_its_exit_code_and_outputs(step: Any, name: str) -> None:
    """Not cancelled: auditor's own exit code (1, findings), as the step's output and exit
    code; the Action also says a SARIF is there to upload. (What the steps did before the
    signals were passed on, kept: this one holds on main too.)"""
    run = step(name, "finish")
    code = run.ended()
    assert run.lines()[-1] == "exited"
    if run.composite:
        assert code == 0  # the Action's last step ends the job with auditor's code
        assert run.outputs() == ["exit-code=1", "sarif=true"]
    else:
        assert code == 1
        assert run.outputs() == ["exit-code=1"]


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_cancelled_nightly_rolls_its_sync_back_before_the_step_ends(
    emulator: Any, tmp_path: Path
) -> None:
    """The real CLI in the nightly's step, cancelled while its sync holds a write open (the
    service asked it to wait a minute for the readiness reports): auditor gets the SIGINT,
    rolls the sync back and exits 130, and only then does the step end, with
    `exit-code=130`; no journal is left and the state file is whole, so the save that follows
    archives a consistent file."""
    # (the readiness listing: the history's pages are kept aside before the sync's write
    # opens, so a wait among them holds no write open)
    emulator.faults.add("reports", "429", page=1, times=0, retry_after=60)
    step, _ = _audit_step("examples/github/nightly.yml")
    work = tmp_path / "work"
    shutil.copytree(REPO / "policies", work / "policies")
    (work / "waivers.yaml").write_text("waivers: []\n")
    state = work / ".auditor" / "state.db"
    journal = state.with_name("state.db-journal")
    (tmp_path / "step.sh").write_text(step["run"], encoding="utf-8")
    (tmp_path / "github_output").touch()
    env = {
        **os.environ,
        **emulator_env(emulator, state),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
    }
    shell = subprocess.Popen(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(tmp_path / "step.sh")],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    auditor: list[int] = []
    try:
        deadline = time.monotonic() + WAIT
        while not journal.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert journal.exists(), "the sync never opened its write"
        auditor = _children(shell.pid)
        shell.send_signal(signal.SIGINT)
        try:
            code = shell.wait(10.0)
        except subprocess.TimeoutExpired:
            shell.send_signal(signal.SIGTERM)
            code = shell.wait(WAIT)
        assert [pid for pid in auditor if _alive(pid)] == [], "the step ended while auditor ran"
        assert code == 130
        assert (tmp_path / "github_output").read_text() == "exit-code=130\n"
        assert "auditor: exit 130: interrupted" in (shell.stderr.read() if shell.stderr else "")
        assert not journal.exists()
        with closing(sqlite3.connect(state)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait()
        for pid in auditor:
            if _alive(pid):  # an orphan of the step: the failure under test
                os.kill(pid, signal.SIGKILL)
        if shell.stderr:
            shell.stderr.close()
