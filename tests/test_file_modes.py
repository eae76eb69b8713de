"""The reports and bundle files get the mode any tool's files get: a new file 0666 less the
umask, a file rewritten keeps its mode (mkstemp made every one 0600, and reset a chmod)."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _run(state: Path, out: Path) -> None:
    err = io.StringIO()
    argv = ["run", "--offline", "--soft-fail", "-q", "--state", str(state), "--out", str(out)]
    ctx = Context(env={}, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd="/")
    main(argv, ctx)  # exit 2: an empty state file has nothing to evaluate; the reports say so
    assert (out / "report.md").is_file(), err.getvalue()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    from auditor.store import Store

    path = tmp_path / "state.db"
    Store.open(path, create=True).close()
    return path


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002, 0o077])
def test_new_reports_get_0666_less_the_umask(
    tmp_path: Path, state: Path, umask: None, mask: int
) -> None:
    os.umask(mask)
    out = tmp_path / "reports"
    _run(state, out)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 4
    assert {p.name: _mode(p) for p in files} == {p.name: 0o666 & ~mask for p in files}


def test_a_report_rewritten_keeps_its_mode(tmp_path: Path, state: Path, umask: None) -> None:
    out = tmp_path / "reports"
    _run(state, out)
    (out / "report.md").chmod(0o664)  # shared with the team by hand
    (out / "findings.json").chmod(0o600)
    _run(state, out)
    assert _mode(out / "report.md") == 0o664
    assert _mode(out / "findings.json") == 0o600
    assert _mode(out / "junit.xml") == 0o644


def _run_with(state: Path, out: Path, *extra: str) -> None:
    err = io.StringIO()
    argv = ["run", "--offline", "--soft-fail", "-q", "--state", str(state), "--out", str(out)]
    ctx = Context(env={}, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd="/")
    main([*argv, *extra], ctx)
    assert (out / "findings.json").is_file(), err.getvalue()


NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
@pytest.mark.parametrize("cleared", [True, False], ids=["auditor-report", "other-file"])
def test_a_symlink_s_target_gives_the_new_report_no_mode(
    tmp_path: Path, state: Path, umask: None, cleared: bool
) -> None:
    # report.md a link to another user's world-writable, executable file: the new report is a
    # regular file of 0666 less the umask, and the target keeps its content and mode
    out = tmp_path / "reports"
    _run(state, out)
    target = tmp_path / "theirs.md"
    target.write_bytes((out / "report.md").read_bytes() if cleared else b"# notes\n")
    os.chown(target, NOBODY, NOBODY)
    target.chmod(0o777)
    before = target.read_bytes()
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(target)
    _run(state, out)
    assert not (out / "report.md").is_symlink()
    assert _mode(out / "report.md") == 0o644
    assert _mode(target) == 0o777 and target.read_bytes() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_another_user_s_report_gives_no_mode(tmp_path: Path, state: Path, umask: None) -> None:
    out = tmp_path / "reports"
    _run(state, out)
    os.chown(out / "report.md", NOBODY, NOBODY)
    (out / "report.md").chmod(0o666)
    _run(state, out)
    assert _mode(out / "report.md") == 0o644


@pytest.mark.parametrize(("mask", "kept"), [(0o022, 0o664), (0o000, 0o666)])
def test_a_kept_mode_has_no_execute_bits_and_no_write_for_all_unless_the_umask_allows(
    tmp_path: Path, state: Path, umask: None, mask: int, kept: int
) -> None:
    os.umask(mask)
    out = tmp_path / "reports"
    _run(state, out)
    (out / "report.md").chmod(0o777)
    (out / "junit.xml").chmod(0o640)
    _run(state, out)
    assert _mode(out / "report.md") == kept
    assert _mode(out / "junit.xml") == 0o640  # a mode set by hand that is safe: kept


def test_a_cleared_report_not_written_again_leaves_no_mode_for_a_later_run(
    tmp_path: Path, state: Path, umask: None
) -> None:
    out = tmp_path / "reports"
    _run(state, out)
    (out / "report.md").chmod(0o600)
    _run_with(state, out, "-o", "json")  # report.md cleared (its mode noted), not written
    assert not (out / "report.md").exists()
    _run_with(state, out, "-o", "json,md")  # the same process, later: a new report.md
    assert _mode(out / "report.md") == 0o644


def test_organizations_clearing_and_writing_at_once_share_the_kept_modes_safely(
    tmp_path: Path,
) -> None:
    """`run --orgs` clears and writes each organization's folder in its own thread: walking the
    kept modes while another thread added one raised `RuntimeError: dictionary changed size
    during iteration` (that organization's run failed, exit 2)."""
    import sys
    import threading

    from auditor.common.files import forget_modes, keep_mode

    errors: list[BaseException] = []
    acme, globex = tmp_path / "acme", tmp_path / "globex"
    acme.mkdir()
    globex.mkdir()
    files = [acme / f"report-{n}.md" for n in range(2000)]
    for path in files:
        path.write_text("x")

    def guarded(work: Any) -> Any:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # the failure under test, from either thread
                errors.append(exc)

        return run

    kept = threading.Event()

    def clearing() -> None:  # one organization's folder cleared again and again
        while not kept.is_set():
            forget_modes(globex)

    def keeping() -> None:  # while another's earlier reports are cleared, modes kept
        try:
            for path in files:
                keep_mode(path)
            forget_modes(acme)
        finally:
            kept.set()

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads take turns as often as can be
    try:
        threads = [threading.Thread(target=guarded(w)) for w in (clearing, keeping)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert errors == []


def _sync(env: dict[str, str], cwd: Path) -> None:
    from tests.conftest import run_cli

    code, _, stderr = run_cli(["sync", "-q"], env, cwd)
    assert code == 0, stderr


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o000, 0o077])
def test_a_new_state_file_and_its_lock_are_private_whatever_the_umask(
    env: dict[str, str], tmp_path: Path, umask: None, mask: int
) -> None:
    """The state file holds the fingerprint key (and the settings history): created 0644 under
    the usual umask, any local account could read it (and confirm a guessed secret)."""
    os.umask(mask)
    state = Path(env["AUDITOR_STATE"])
    _sync(env, tmp_path)
    assert _mode(state) == 0o600
    assert _mode(Path(f"{state}.lock")) == 0o600


def test_the_journal_of_a_write_cut_off_is_private_too(
    env: dict[str, str], tmp_path: Path, umask: None
) -> None:
    """SQLite gives `-journal` the database file's mode: the pages it holds are the file's."""
    import subprocess
    import sys

    from tests.test_state_file import _CUT_OFF_WRITE

    state = Path(env["AUDITOR_STATE"])
    _sync(env, tmp_path)
    subprocess.run([sys.executable, "-c", _CUT_OFF_WRITE, str(state)], check=False)
    journal = Path(f"{state}-journal")
    assert journal.exists() and _mode(journal) == 0o600


def test_an_existing_state_file_keeps_its_mode_and_its_lock_gets_it(
    env: dict[str, str], tmp_path: Path, umask: None
) -> None:
    """A state file shared on purpose (`chmod 640`, for a group that reads it) stays so; a lock
    file made beside it takes its mode (readers of the group can take the lock)."""
    state = Path(env["AUDITOR_STATE"])
    _sync(env, tmp_path)
    state.chmod(0o640)
    Path(f"{state}.lock").unlink()
    _sync(env, tmp_path)
    assert _mode(state) == 0o640
    assert _mode(Path(f"{state}.lock")) == 0o640


def test_a_new_state_file_through_a_symlink_is_private(
    env: dict[str, str], tmp_path: Path, umask: None
) -> None:
    """`--state` a symlink to where the file is to be: the file made at its target is 0600."""
    target = tmp_path / "cache" / "state.db"
    target.parent.mkdir()
    link = tmp_path / "state-link.db"
    link.symlink_to(target)
    _sync({**env, "AUDITOR_STATE": str(link)}, tmp_path)
    assert _mode(target) == 0o600 and link.is_symlink()


def test_a_reader_who_may_not_open_the_lock_file_reads_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state file shared with a group by `chmod 640` after its first sync made its lock
    0600: a group member's read-only command cannot open the lock, and reads without it (as in
    a folder it cannot write: SQLite's shared lock keeps its reads whole), where it was refused
    (`cannot lock state file …: Permission denied`). A writer still needs the lock."""
    import builtins

    import auditor.store.file as store_file
    from auditor.errors import StoreError

    state = tmp_path / "state.db"
    state.write_bytes(b"")
    (tmp_path / "state.db.lock").write_text("")

    def denied(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).endswith(".lock"):
            raise PermissionError(13, "Permission denied")
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(store_file, "open", denied, raising=False)
    assert store_file.acquire_lock(state, shared=True) is None
    with pytest.raises(StoreError, match="Permission denied"):
        store_file.acquire_lock(state)


def _cli(argv: list[str], cwd: Path) -> tuple[int, str]:
    err = io.StringIO()
    ctx = Context(env={}, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), err.getvalue()


@pytest.mark.parametrize(
    ("mode", "warned"),
    [(0o644, True), (0o604, True), (0o606, True), (0o640, False), (0o660, False), (0o600, False)],
)
def test_a_state_file_other_accounts_may_read_is_warned_of_once_per_command(
    tmp_path: Path, state: Path, mode: int, warned: bool
) -> None:
    """A state file made before 0.3.0 (0644 under umask 022) keeps its mode, and holds the
    fingerprint key: each command says once to `chmod 600` it (not with -q); one shared with
    a group (`chmod 640`) is a supported set-up, on which nothing is said."""
    state.chmod(mode)
    policy = Path(__file__).resolve().parent / "policies" / "valid" / "sample.yaml"
    runs = {
        "lint": ["policy", "lint", str(policy), "--state", str(state)],
        "run": ["run", "--offline", "--soft-fail", "--state", str(state)],
        "run -q": ["run", "--offline", "--soft-fail", "-q", "--state", str(state)],
    }
    for name, argv in runs.items():
        out = ["--out", str(tmp_path / name.replace(" ", ""))] if argv[0] == "run" else []
        _, stderr = _cli([*argv, *out], tmp_path)
        expected = 1 if warned and name != "run -q" else 0
        assert stderr.count(f"`chmod 600 {state}`") == expected, (name, stderr)
        if expected:
            line = next(x for x in stderr.splitlines() if "chmod 600" in x)
            assert line.startswith(f"auditor: warning: state file {state} is open to every")
            assert f"(mode {mode:04o})" in line and "fingerprint key" in line
    assert stat.S_IMODE(state.stat().st_mode) == mode  # told, never changed


def test_another_program_s_database_readable_by_all_is_not_called_a_state_file(
    tmp_path: Path,
) -> None:
    import sqlite3

    path = tmp_path / "contacts.db"
    sqlite3.connect(path).execute("CREATE TABLE contacts (name TEXT)").connection.close()
    path.chmod(0o644)
    code, stderr = _cli(["history", "--state", str(path)], tmp_path)
    assert code == 2 and "is not an auditor state file" in stderr
    assert "chmod" not in stderr


def _cli_env(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    err = io.StringIO()
    ctx = Context(env=env, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), err.getvalue()


def test_run_orgs_warns_of_each_organization_s_state_file_others_may_read(
    tmp_path: Path,
) -> None:
    """`run --orgs` opens `state-<org>.db`, never `--state` itself: a multi-organization
    nightly upgraded from 0.2.0 (its files 0644) was never told (review R3 #5)."""
    from auditor.store import Store

    folder = tmp_path / "st"
    folder.mkdir()
    for org in ("acme", "beta"):
        Store.open(folder / f"state-{org}.db", create=True, org=org).close()
    (folder / "state-acme.db").chmod(0o644)  # as 0.2.0 made it; beta's is 0600
    Store.open(folder / "state.db", create=True).close()
    (folder / "state.db").chmod(0o644)  # `--state`, which `--orgs` never opens: not named
    orgs = tmp_path / "orgs.toml"
    orgs.write_text(
        "".join(
            f'[[org]]\nname = "{org}"\nbase_url = "http://127.0.0.1:9"\ntoken_env = "T"\n'
            for org in ("acme", "beta")
        )
    )
    argv = ["run", "--orgs", str(orgs), "--state", str(folder / "state.db"), "--offline"]
    env = {"T": "tok-0123456789abcdef0123"}
    for quiet in ([], ["-q"]):
        out = ["--out", str(tmp_path / f"out{len(quiet)}")]
        _, stderr = _cli_env([*argv, *out, *quiet], tmp_path, env)
        warned = [x for x in stderr.splitlines() if "chmod 600" in x]
        if quiet:
            assert warned == [], stderr
        else:
            assert len(warned) == 1, stderr
            assert warned[0].startswith(f"auditor: warning: state file {folder / 'state-acme.db'}")


def test_the_warning_says_whether_the_file_holds_the_fingerprint_key(tmp_path: Path) -> None:
    """With AUDITOR_FINGERPRINT_KEY the key is not in the file: the line said it was (R3 #8)."""
    from auditor.store import Store

    key = "my-own-fingerprint-key-0123456789"
    own, given = tmp_path / "own.db", tmp_path / "given.db"
    Store.open(own, create=True).close()
    Store.open(given, create=True, fingerprint_key=key.encode()).close()
    for path in (own, given):
        path.chmod(0o644)
    _, stderr = _cli_env(["history", "--state", str(own)], tmp_path, {})
    assert "and it holds the fingerprint key of the secrets' markers" in stderr
    env = {"AUDITOR_FINGERPRINT_KEY": key}
    _, stderr = _cli_env(["history", "--state", str(given)], tmp_path, env)
    line = next(x for x in stderr.splitlines() if "chmod 600" in x)
    assert "holds the fingerprint key" not in line
    assert "the fingerprint key is not in it: AUDITOR_FINGERPRINT_KEY gives it" in line


def test_run_orgs_rewriting_reports_keeps_each_one_s_mode(tmp_path: Path, umask: None) -> None:
    """`run --orgs` writes an organization's reports one file at a time: the modes kept of the
    cleared reports were forgotten after the first file, so report.md, findings.json and the
    rest came back 0666 less the umask (the README: a report rewritten keeps its mode)."""
    from auditor.store import Store

    folder = tmp_path / "st"
    folder.mkdir()
    for org in ("acme", "beta"):
        Store.open(folder / f"state-{org}.db", create=True, org=org).close()
    orgs = tmp_path / "orgs.toml"
    orgs.write_text(
        "".join(
            f'[[org]]\nname = "{org}"\nbase_url = "http://127.0.0.1:9"\ntoken_env = "T"\n'
            for org in ("acme", "beta")
        )
    )
    out = tmp_path / "out"
    argv = ["run", "--orgs", str(orgs), "--state", str(folder / "state.db"), "--offline"]
    argv += ["--out", str(out), "-q"]
    env = {"T": "tok-0123456789abcdef0123"}
    _cli_env(argv, tmp_path, env)
    reports = [p for p in (out / "acme").iterdir() if p.is_file()]
    assert len(reports) >= 4, reports
    for path in reports:
        path.chmod(0o640)  # shared with the team's group by hand
    _cli_env(argv, tmp_path, env)
    assert {p.name: _mode(p) for p in reports} == {p.name: 0o640 for p in reports}
