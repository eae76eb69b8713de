"""Many organizations in one run (`auditor run --orgs FILE`, `auditor demo --orgs N`), on an
SQLite file per organization and on one PostgreSQL store, against emulators over HTTP."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from auditor.config import load_orgs
from auditor.errors import ConfigError
from auditor.report import DEFAULT_OUTPUTS, OUTPUTS
from auditor.store import Store
from auditor.workflows.orgs import OrgResult, audit_orgs, overall_exit
from tests.conftest import OWNER_TOKEN

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOKEN = "demo-owner-token"
WRONG = "wrong-token-0123456789"


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, Context(env=env, stdout=out, stderr=err, clock=lambda: NOW, cwd=str(cwd)))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def emulators() -> Iterator[list[Any]]:
    from auditor.emulator import start_emulator

    started = [start_emulator(seed=s, revisions=30, repos=5, now=NOW) for s in (1, 2, 3)]
    try:
        yield started
    finally:
        for emu in started:
            emu.stop()


def _orgs_file(tmp_path: Path, emulators: list[Any], tokens: list[str]) -> Path:
    blocks = []
    for name, emu, var in zip(("acme", "globex", "initech"), emulators, tokens, strict=True):
        blocks.append(
            f'[[org]]\nname = "{name}"\nbase_url = "{emu.base_url}"\n'
            f'app_url = "{emu.app_url}"\ntoken_env = "{var}"\n'
        )
    path = tmp_path / "orgs.toml"
    path.write_text("\n".join(blocks))
    return path


def _rows(stdout: str) -> dict[str, list[str]]:
    lines = stdout.splitlines()
    assert lines[0].split()[:6] == ["ORG", "STATUS", "FINDINGS", "NEW", "RESOLVED", "EXIT"]
    return {line.split()[0]: line.split() for line in lines[1:4]}


def test_one_organizations_failure_never_stops_the_others(
    emulators: list[Any], tmp_path: Path
) -> None:
    orgs = _orgs_file(tmp_path, emulators, ["GOOD", "BAD", "GOOD"])
    env = {"GOOD": TOKEN, "BAD": WRONG, "AUDITOR_STATE": str(tmp_path / "st" / "state.db")}
    argv = ["run", "--orgs", str(orgs), "--out", str(tmp_path / "r"), "--workers", "2"]
    code, out, err = _run(argv, env, tmp_path)
    assert code == 2, err
    rows = _rows(out)
    assert rows["acme"][1:2] == ["findings"] and rows["acme"][5] == "1"
    assert rows["initech"][1:2] == ["findings"] and rows["initech"][5] == "1"
    assert rows["globex"][1:2] == ["error"] and rows["globex"][5] == "2"
    assert "sync failed" in " ".join(rows["globex"]) and "401" in " ".join(rows["globex"])
    assert "[globex] auditor: sync failed" in err and "401" in err
    assert err.rstrip().splitlines()[-1] == (
        "auditor: exit 2: 1 of 3 organization(s) could not be audited (globex)"
    )
    for name in ("acme", "initech", "globex"):  # every organization has its reports
        assert (tmp_path / "r" / name / "report.html").is_file()
    for name in ("acme", "initech"):
        sarif = json.loads((tmp_path / "r" / name / "findings.sarif").read_text())
        assert name in json.dumps(sarif["runs"][0]["automationDetails"])  # labelled with its org
    # globex's first sync failed: no settings evaluated, no SARIF to close its alerts with
    assert not (tmp_path / "r" / "globex" / "findings.sarif").exists()
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["exit_code"] == 2
    by_name = {o["name"]: o for o in summary["organizations"]}
    assert by_name["acme"]["failing_findings"] == int(rows["acme"][2]) > 0
    assert by_name["globex"]["status"] == "error"
    for name in ("acme", "initech"):  # a store file per organization, bound to it
        with Store.open(tmp_path / "st" / f"state-{name}.db", readonly=True) as s:
            assert s.count_revisions() == 30
    assert TOKEN not in out + err and WRONG not in out + err


def test_exit_codes_follow_the_usual_rules(emulators: list[Any], tmp_path: Path) -> None:
    orgs = _orgs_file(tmp_path, emulators, ["GOOD"] * 3)
    env = {"GOOD": TOKEN, "AUDITOR_STATE": str(tmp_path / "state.db")}
    base = ["run", "--orgs", str(orgs), "--quiet"]
    code, out, err = _run([*base, "--out", str(tmp_path / "a")], env, tmp_path)
    assert code == 1 and out == "", err
    assert err.splitlines()[-1].startswith("auditor: exit 1: 3 of 3 organization(s) have findings")
    code, _, err = _run([*base, "--out", str(tmp_path / "b"), "--fail-on", "none"], env, tmp_path)
    assert code == 0, err
    assert err.splitlines()[-1] == "auditor: exit 0: all 3 organization(s) clean"
    results = [OrgResult("a", 0, ""), OrgResult("b", 1, ""), OrgResult("c", 130, "")]
    assert overall_exit(results[:1]) == 0 and overall_exit(results[:2]) == 1
    assert overall_exit(results) == 2


def test_quiet_still_says_why_an_organization_could_not_be_audited(
    emulator: Any, tmp_path: Path
) -> None:
    """`--quiet` prints errors: an organization's failed sync and its exit line, as a single
    run's `--quiet` does (they were dropped, leaving only "1 of 2 … could not be audited")."""
    path = tmp_path / "orgs.toml"
    path.write_text(
        f'[[org]]\nname = "acme"\nbase_url = "{emulator.base_url}"\n'
        f'app_url = "{emulator.app_url}"\ntoken_env = "T"\n\n'
        '[[org]]\nname = "gone"\nbase_url = "http://127.0.0.1:9"\ntoken_env = "T"\n'
    )
    env = {"T": OWNER_TOKEN, "AUDITOR_STATE": str(tmp_path / "state.db")}
    argv = ["run", "--orgs", str(path), "--quiet", "--no-usage", "--out", str(tmp_path / "r")]
    code, out, err = _run(argv, env, tmp_path)
    assert code == 2 and out == "", err
    lines = err.splitlines()
    assert any(x.startswith("[gone] auditor: sync failed") for x in lines), err
    assert any("connection refused" in x for x in lines if x.startswith("[gone]")), err
    assert any(x.startswith("[gone] auditor: exit 2: ") for x in lines), err
    assert lines[-1] == "auditor: exit 2: 1 of 2 organization(s) could not be audited (gone)"


def test_many_organizations_on_one_postgresql_store(
    emulators: list[Any], tmp_path: Path, pg_url: str
) -> None:
    orgs = _orgs_file(tmp_path, emulators, ["GOOD"] * 3)
    env = {"GOOD": TOKEN, "AUDITOR_STATE": pg_url}
    argv = ["run", "--orgs", str(orgs), "--out", str(tmp_path / "r")]
    code, out, err = _run(argv, env, tmp_path)
    assert code == 1, err
    assert {r[1] for r in _rows(out).values()} == {"findings"}
    seen = set()
    for name in ("acme", "globex", "initech"):
        with Store.open(pg_url, org=name, readonly=True) as s:
            assert s.count_revisions() == 30
            seen.add(tuple(h for _, h in s.revision_hashes()))
    assert len(seen) == 3  # three organizations' own data, not one copied
    code, out, err = _run([*argv[:-1], str(tmp_path / "again")], env, tmp_path)
    assert code == 1, err
    assert "synced: 0 new revisions" in err  # the second run found each one's stored history


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_demo_with_three_organizations(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    state = ["--state", request.getfixturevalue("pg_url")] if backend == "postgres" else []
    out_dir = tmp_path / "demo"
    argv = ["demo", "--orgs", "3", "--revisions", "40", "--repos", "5", "--out", str(out_dir)]
    code, out, err = _run([*argv, *state], {}, tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "acme",
        "globex",
        "initech",
        "summary.json",
    ]
    for name in ("acme", "globex", "initech"):
        data = json.loads((out_dir / name / "findings.json").read_text())
        assert data["findings"], name
    assert "a nightly run would have exited 1" in out
    if backend == "postgres":
        with Store.open(state[1], org="initech", readonly=True) as s:
            assert s.count_revisions() == 40


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[org]]\nname = "a"\nbase_url = "https://x"\ntoken = "t"', "never read from a file"),
        ('[[org]]\nname = "a"\nbase_url = "https://x"\ntoken_env = "NOPE"', "NOPE is not set"),
        ('[[org]]\nname = "a"\nbase_url = "https://x"', "exactly one of token_env"),
        ('[[org]]\nname = "../a"\nbase_url = "https://x"\ntoken_env = "T"', "org\\[0\\]: name"),
        ('[[org]]\nname = "a"\nbase_url = "ftp://x"\ntoken_env = "T"', "a\\): base_url"),
        ('[[org]]\nname = "a"\nbase_uri = "https://x"\ntoken_env = "T"', "did you mean"),
        (
            '[[org]]\nname = "a"\nbase_url = "https://x"\ntoken_env = "T"\n' * 2,
            "org\\[1\\] \\(a\\): name: organization 'a' is listed twice",
        ),
        (
            '[[org]]\nname = "acme"\nbase_url = "https://x"\ntoken_env = "T"\n'
            '[[org]]\nname = "ACME"\nbase_url = "https://y"\ntoken_env = "T"\n',
            "org\\[1\\] \\(ACME\\): name: organization 'ACME' differs from 'acme' \\(org\\[0\\]",
        ),
        ("name = 'a'", "unknown key 'name'"),
        ("", "expected one or more \\[\\[org\\]\\] tables"),
    ],
)
def test_bad_orgs_files_say_what_and_where(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "orgs.toml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=message) as info:
        load_orgs(path, {"T": "tok-123456"}, tmp_path)
    assert str(path) in str(info.value)


_A = '[[org]]\nname = "a"\n'
_URL = 'base_url = "https://x"\n'


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (f'\n{_A}  base_url = "ftp://x"\ntoken_env = "T"', ":4:3: org[0] (a): base_url:"),
        (f'{_A}{_URL}token_env = "T"\n[[org]]\nname = "b"\n{_URL}token_env = "NOPE"',
         ":8:1: org[1] (b): token_env:"),
        ('[[org]]\nname = "a/b"\n', ":2:1: org[0]: name:"),
        (f'{_A}base_uri = "https://x"\ntoken_env = "T"', ":3:1: org[0] (a): unknown"),
        (f'{_A}token_env = "T"\n[org.extra]\nx = 1', ":4:1: org[0] (a): unknown key 'extra'"),
        (f"{_A}{_URL}", ":1:1: org[0] (a): give exactly one"),
        (f"x = 1\n{_A}", ":1:1: unknown key 'x'"),
    ],
)  # fmt: skip
def test_a_problem_of_an_orgs_file_names_its_line(tmp_path: Path, body: str, where: str) -> None:
    """As a config file's problems do (`file:line:col: …`); they named `org[1]` alone."""
    path = tmp_path / "orgs.toml"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        load_orgs(path, {"T": "tok-123456"}, tmp_path)
    assert str(info.value).startswith(f"{path}{where}"), info.value


_NAME_RULE = (
    "name: expected 1-63 letters, digits, '.', '_' or '-', the first a letter or a digit (it "
    "names the organization's report folder), "
)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ('".."', "got '..', which begins with '.'"),
        ('"."', "got '.', which begins with '.'"),
        ('"-rf"', "got '-rf', which begins with '-'"),
        ('".hidden"', "got '.hidden', which begins with '.'"),
        ('"a/b"', "got 'a/b', which holds '/'"),
        (f'"{"a" * 64}"', f"got '{'a' * 64}', 64 characters long"),
        (None, "none given (this [[org]] has no name key)"),
    ],
)
def test_a_refused_org_name_says_which_part_of_the_rule_it_breaks(
    tmp_path: Path, name: str | None, why: str
) -> None:
    """`..`, `.`, `-rf` hold only allowed characters: the rule they break (the first one) was
    not said; an `[[org]]` without a name was `got None` (tester T72 #7)."""
    path = tmp_path / "orgs.toml"
    line = "" if name is None else f"name = {name}\n"
    path.write_text(f'[[org]]\n{line}token_env = "T"\n')
    code, out, err = _run(["run", "--offline", "--orgs", str(path)], {"T": "tok-123456"}, tmp_path)
    assert (code, out) == (2, "")
    where = f"{path}:{2 if name else 1}:1: org[0]: "
    assert err == f"auditor: error: {where}{_NAME_RULE}{why}\n"


def test_workers_without_orgs_is_refused(tmp_path: Path) -> None:
    """`run --workers 3` of one organization went ahead, `--workers` ignored without a word
    (tester T72 #7), where `--org` with `--orgs` is refused."""
    code, out, err = _run(["run", "--offline", "--workers", "3"], {}, tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith(
        "auditor: error: --workers is for --orgs (how many organizations it audits at once)\n"
    ), err
    assert list(tmp_path.iterdir()) == []


def test_token_file_and_flags_that_conflict(tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("file-token-123456\n")
    path = tmp_path / "orgs.toml"
    path.write_text('[[org]]\nname = "a"\nbase_url = "https://x/"\ntoken_file = "tok"\n')
    (entry,) = load_orgs(path, {}, tmp_path)
    assert (entry.name, entry.base_url, entry.token) == ("a", "https://x", "file-token-123456")
    assert "file-token" not in repr(entry)
    code, _, err = _run(["run", "--orgs", str(path), "--org", "b"], {}, tmp_path)
    assert code == 2 and "--org cannot be combined with --orgs" in err


def test_sigterm_keeps_the_finished_organizations_and_ends_at_once(
    emulators: list[Any], tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    emulators[1].faults.add("history", "delay", times=0, seconds=60)  # globex never finishes
    orgs = _orgs_file(tmp_path, emulators, ["GOOD"] * 3)
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor", "run", "--orgs", str(orgs), "--out", "r"],
        env={**os.environ, "GOOD": TOKEN, "AUDITOR_STATE": str(tmp_path / "state.db")},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    files = [OUTPUTS[name] for name in DEFAULT_OUTPUTS]
    written = [tmp_path / "r" / n / f for n in ("acme", "initech") for f in files]
    while not all(path.exists() for path in written):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    time.sleep(2)  # their runs are recorded and reported (a loaded CI machine takes its time)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, err
    assert time.monotonic() - start < 10  # not after globex's 60 s wait
    assert err.rstrip().splitlines()[-1] == "auditor: exit 143: terminated (SIGTERM)"
    rows = _rows(out)
    assert rows["globex"][1] == "interrupted" and rows["acme"][1] == "findings"
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert [o["status"] for o in summary["organizations"]] == [
        "findings",
        "interrupted",
        "findings",
    ]
    assert (summary["exit_code"], summary["reason"]) == (143, "terminated (SIGTERM)")


def test_an_organization_cut_short_while_its_reports_are_written_keeps_its_results(
    emulators: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while an organization's report.pdf is rendered: its evaluation had finished,
    so its reports keep every result (marked incomplete, no SARIF), not an empty report."""
    import os
    import signal
    import threading

    release = threading.Event()

    def cancelled(*_args: Any, **_kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGTERM)  # the main thread ends the run
        release.wait(60)  # the worker stays in the "rendering" until the test has looked
        raise OSError("rendering stopped by the test")

    monkeypatch.setattr("auditor.report._write_pdf", cancelled)
    orgs = _orgs_file(tmp_path, emulators, ["GOOD"] * 3)
    env = {"GOOD": TOKEN, "AUDITOR_STATE": str(tmp_path / "state.db")}
    argv = ["run", "--orgs", str(orgs), "--out", str(tmp_path / "r"), "--workers", "1"]
    try:
        code, _, err = _run([*argv, "-o", "html,md,json,sarif,junit,pdf"], env, tmp_path)
        assert code == 143, err
        acme = json.loads((tmp_path / "r" / "acme" / "findings.json").read_text())
        assert acme["complete"] is False and acme["findings"]
        assert any("interrupted while the reports were written" in r for r in acme["output_notes"])
        assert not (tmp_path / "r" / "acme" / "findings.sarif").exists()
    finally:
        release.set()
        for thread in threading.enumerate():
            if thread.name.startswith("auditor-org-"):
                thread.join(timeout=30)


def test_an_unusable_report_folder_stops_before_any_organization(tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("file-token-123456\n")
    path = tmp_path / "orgs.toml"
    path.write_text('[[org]]\nname = "a"\nbase_url = "http://127.0.0.1:9/"\ntoken_file = "tok"\n')
    (tmp_path / "afile").write_text("not a folder")
    code, _, err = _run(["run", "--orgs", str(path), "--out", "afile"], {}, tmp_path)
    assert code == 2 and "Traceback" not in err
    assert err.rstrip().splitlines()[-1].startswith("auditor: error: cannot use ")
    assert "it is a file" in err and "[a]" not in err  # no organization was started


@pytest.mark.parametrize("n", ["0", "-1", "99"])
def test_demo_orgs_out_of_range_is_a_usage_error(tmp_path: Path, n: str) -> None:
    code, _, err = _run(["demo", "--orgs", n, "--out", "r"], {}, tmp_path)
    assert code == 2 and "--orgs must be between 1 and" in err
    assert not (tmp_path / "r").exists()  # refused before any emulator or run


@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_an_organizations_unexpected_error_shows_its_traceback_only_with_debug(
    debug: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import auditor.cli.cmd_run

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("a bug in one organization")

    monkeypatch.setattr(auditor.cli.cmd_run, "_run_one", broken)
    orgs = tmp_path / "orgs.toml"
    orgs.write_text('[[org]]\nname = "acme"\nbase_url = "https://x.test"\ntoken_env = "T"\n')
    env = {"T": TOKEN, "AUDITOR_STATE": str(tmp_path / "state.db")}
    argv = [*debug, "run", "--orgs", str(orgs), "--out", str(tmp_path / "r")]
    code, _, err = _run(argv, env, tmp_path)
    assert code == 2, err
    assert "unexpected RuntimeError: a bug in one organization" in err
    if debug:  # asked for: the traceback, and no advice to ask for it
        assert "Traceback" in err and "rerun with --debug" not in err
    else:
        assert "Traceback" not in err and "rerun with --debug" in err


@pytest.mark.parametrize("raised", [KeyboardInterrupt(), SystemExit(3), GeneratorExit()])
def test_an_organization_whose_audit_raises_any_exception_ends_as_its_error(
    raised: BaseException,
) -> None:
    """A worker whose organization's audit raised a KeyboardInterrupt or SystemExit (not an
    `Exception`) ended without a result, and the run waited for it for ever (seen as a hung
    test when a test's patch leaked into another). It is that organization's error; the
    others are audited."""
    import threading

    def audit_one(name: str) -> OrgResult:
        if name == "bad":
            raise raised
        return OrgResult(name, 0, "clean")

    results: list[OrgResult] = []
    worker = threading.Thread(
        target=lambda: results.extend(audit_orgs(["a", "bad", "b"], audit_one, workers=2)),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=60)  # (a guard against the hang, not a speed limit: it takes ~0.2 s)
    assert not worker.is_alive(), "audit_orgs never returned"
    assert [(r.name, r.code) for r in results] == [("a", 0), ("bad", 2), ("b", 0)]
    assert results[1].reason.startswith(f"unexpected {type(raised).__name__}")
    assert overall_exit(results) == 2


def test_a_named_sarif_category_stays_one_per_organization(
    emulators: list[Any], tmp_path: Path
) -> None:
    """Code scanning keeps one analysis per category: with one category for every organization,
    each organization's upload would close the others' alerts. `--sarif-category` is followed by
    the organization's name, as the default category names it."""
    orgs = _orgs_file(tmp_path, emulators, ["GOOD"] * 3)
    env = {"GOOD": TOKEN, "AUDITOR_STATE": str(tmp_path / "state.db")}
    categories: dict[str, list[str]] = {}
    for label, flags in {"default": [], "named": ["--sarif-category", "auditor-nightly"]}.items():
        out = tmp_path / label
        argv = ["run", "--orgs", str(orgs), "--out", str(out), "--soft-fail", *flags]
        code, _, err = _run(argv, env, tmp_path)
        assert code == 0, err
        for name in ("acme", "globex", "initech"):
            sarif = json.loads((out / name / "findings.sarif").read_text())
            category, _, run_id = sarif["runs"][0]["automationDetails"]["id"].rpartition("/")
            assert run_id.startswith("20261101T120000Z")
            categories.setdefault(label, []).append(category)
    assert categories == {
        "default": ["auditor/acme/run", "auditor/globex/run", "auditor/initech/run"],
        "named": ["auditor-nightly/acme", "auditor-nightly/globex", "auditor-nightly/initech"],
    }


def test_sigterm_leaves_no_organization_with_yesterdays_reports(
    emulators: list[Any], tmp_path: Path
) -> None:
    """Every organization's earlier reports go before any starts: the one cut short gets its
    partial reports marked incomplete, the ones never started none, and no SARIF is left that
    the summary's "interrupted" would contradict."""
    import os
    import signal
    import subprocess
    import sys
    import time

    orgs = _orgs_file(tmp_path, emulators, ["GOOD"] * 3)
    env = {"GOOD": TOKEN, "AUDITOR_STATE": str(tmp_path / "state.db")}
    out = tmp_path / "r"
    assert _run(["run", "--orgs", str(orgs), "--out", str(out)], env, tmp_path)[0] == 1
    old = (out / "acme" / "findings.json").read_bytes()
    emulators[1].faults.add("history", "delay", times=0, seconds=60)  # globex never finishes
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor", "run", "--orgs", str(orgs), "--out", "r", "--workers=1"],
        env={**os.environ, **env},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60

    def acme_done() -> bool:
        try:
            return (out / "acme" / "findings.json").read_bytes() not in (old, b"")
        except OSError:
            return False

    while not acme_done():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    time.sleep(2)  # acme's run is recorded, globex's started (a loaded CI machine takes its time)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, err
    assert (out / "acme" / "findings.sarif").is_file()
    cut = json.loads((out / "globex" / "findings.json").read_text())
    assert cut["complete"] is False
    assert not (out / "globex" / "findings.sarif").exists()
    assert not [p.name for p in (out / "initech").iterdir()]  # never started: nothing stale
    summary = json.loads((out / "summary.json").read_text())
    assert [o["status"] for o in summary["organizations"]] == [
        "findings",
        "interrupted",
        "interrupted",
    ]


@pytest.mark.parametrize("flag", ["--at", "--policy"])
def test_an_organizations_token_typed_into_another_flag_is_not_echoed(
    tmp_path: Path, flag: str
) -> None:
    """`--at` and `--policy` were checked before the orgs file was read, and each
    organization's token was registered only when it started: `--at "$ACME_TOKEN"` (flags
    mixed up) printed `got 'opaque-acme-7c6b5a'`."""
    token = "opaque-acme-7c6b5a"
    (tmp_path / "orgs.toml").write_text(
        '[[org]]\nname = "acme"\nbase_url = "https://x.example"\ntoken_env = "ACME_TOKEN"\n'
    )
    argv = ["run", "--orgs", str(tmp_path / "orgs.toml"), flag, token]
    code, out, err = _run(argv, {"ACME_TOKEN": token}, tmp_path)
    assert code == 2 and "auditor: error: " in err, err
    assert token not in out + err
    assert "[token]" in err or "<not shown: looks like a secret>" in err


def test_an_audit_ending_while_another_organization_syncs_leaves_the_thresholds_as_found(
    tmp_path: Path, emulators: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # two workers, three organizations: the first audit waits until the third organization's
    # sync has started, which waits until that audit has ended (the order that left the
    # thresholds raised for the rest of the process)
    import gc
    import threading

    import auditor.cli.cmd_run as cmd_run
    import auditor.evaluate.engine as engine
    import auditor.workflows.sync as sync
    from auditor.common.collector import STARTUP_FROZEN

    third_sync, first_audit_done = threading.Event(), threading.Event()
    first: list[threading.Thread] = []
    syncs: list[int] = []
    evaluate, new_rows, run_audit = engine.evaluate, sync._NewRows, cmd_run.run_audit

    def evaluating(*args: Any, **kwargs: Any) -> Any:
        if not first:
            first.append(threading.current_thread())
            assert third_sync.wait(30)
        return evaluate(*args, **kwargs)

    def syncing(*args: Any, **kwargs: Any) -> Any:
        syncs.append(1)
        if len(syncs) == 3:
            third_sync.set()
            assert first_audit_done.wait(30)
        return new_rows(*args, **kwargs)

    def auditing(*args: Any, **kwargs: Any) -> Any:
        try:
            return run_audit(*args, **kwargs)
        finally:
            if first and first[0] is threading.current_thread():
                first_audit_done.set()

    monkeypatch.setattr(engine, "evaluate", evaluating)
    monkeypatch.setattr(sync, "_NewRows", syncing)
    monkeypatch.setattr(cmd_run, "run_audit", auditing)
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        orgs = _orgs_file(tmp_path, emulators, ["GOOD"] * 3)
        env = {"GOOD": TOKEN, "AUDITOR_STATE": str(tmp_path / "state.db")}
        argv = ["run", "--orgs", str(orgs), "--out", str(tmp_path / "r"), "--workers", "2"]
        code, _, err = _run(argv, env, tmp_path)
        assert code in (0, 1), err
        assert third_sync.is_set() and first_audit_done.is_set()
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() <= STARTUP_FROZEN  # nothing of the audits' left frozen
    finally:
        gc.set_threshold(*before)
