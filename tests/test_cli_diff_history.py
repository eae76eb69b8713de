"""`auditor diff` and `auditor history` against a state file synced from a real emulator."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

import auditor.cli
from auditor.cli import Context, main
from auditor.common.jsonutil import canonical
from auditor.diff.engine import changed_paths, diff_revisions
from auditor.emulator import start_emulator
from auditor.store.database import Store
from tests.conftest import FIXED_NOW, OWNER_TOKEN

REVISIONS = 240


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def only_these_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    # Other subcommands are built in parallel; the real `main` runs with the ones tested here.
    monkeypatch.setattr(auditor.cli, "COMMANDS", ("sync", "diff", "history"))


def _run(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    tty: bool = False,
) -> tuple[int, str, str]:
    out: io.StringIO = _Tty() if tty else io.StringIO()
    err = io.StringIO()
    ctx = Context(env=env or {}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd="/")
    return main(argv, ctx), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def synced() -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """A state file holding the emulator's default history, and that raw history."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.db"
        emu = start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, repos=2)
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(auditor.cli, "COMMANDS", ("sync",))
                code, _, err = _run(
                    [
                        "sync",
                        "--state",
                        str(state),
                        "--base-url",
                        emu.base_url,
                        "--app-url",
                        emu.app_url,
                    ],
                    env={"AUDITOR_TOKEN": OWNER_TOKEN},
                )
            assert code == 0, err
        finally:
            emu.stop()
        yield state, emu.dataset.history


def _state(synced: tuple[Path, Any]) -> list[str]:
    return ["--state", str(synced[0])]


def _step_where(history: list[dict[str, Any]], wanted: str) -> int:
    for old, new in itertools.pairwise(history):
        if any(
            wanted in (c.kind, c.path) or c.path.endswith(wanted)
            for c in diff_revisions(old["settings"], new["settings"])
        ):
            return int(new["revision"])
    raise AssertionError(f"no step with {wanted}")


def test_default_is_the_latest_step(synced: tuple[Path, list[dict[str, Any]]]) -> None:
    code, out, _ = _run(["diff", "--format", "json", *_state(synced)])
    assert code == 0
    history = synced[1]
    raw = diff_revisions(history[-2]["settings"], history[-1]["settings"])
    assert [c["path"] for c in json.loads(out)] == [c.path for c in raw]


def test_text_names_the_step_and_never_shows_a_secret(
    synced: tuple[Path, list[dict[str, Any]]],
) -> None:
    history = synced[1]
    rev = _step_where(history, "apiKey")
    code, out, _ = _run(["diff", "--to", str(rev), *_state(synced)])
    assert code == 0
    assert out.startswith(f"revision {rev - 1} → {rev} · ")
    assert "secret changed (fp:" in out
    for model in history[rev - 1]["settings"]["customModels"]:
        assert model["apiKey"] not in out
    assert "\x1b[" not in out  # not a terminal: no colour


def test_rename_step_reads_as_renamed(synced: tuple[Path, list[dict[str, Any]]]) -> None:
    rev = _step_where(synced[1], "renamed")
    code, out, _ = _run(
        ["diff", "--from", str(rev - 1), "--to", str(rev), "--format", "json", *_state(synced)]
    )
    assert code == 0
    assert [c["kind"] for c in json.loads(out)] == ["renamed"]


@pytest.mark.parametrize(
    ("env", "coloured"), [({}, True), ({"NO_COLOR": "1"}, False)], ids=["terminal", "NO_COLOR"]
)
def test_colour_only_on_a_terminal_without_no_color(
    synced: tuple[Path, Any],
    env: dict[str, str],
    coloured: bool,
) -> None:
    code, out, _ = _run(["diff", "--from", "1", "--to", "40", *_state(synced)], env=env, tty=True)
    assert code == 0
    assert ("\x1b[" in out) is coloured


def test_patch_turns_the_older_stored_revision_into_the_newer(synced: tuple[Path, Any]) -> None:
    code, out, _ = _run(
        ["diff", "--from", "10", "--to", "200", "--format", "patch", *_state(synced)]
    )
    assert code == 0
    with Store.open(synced[0], create=False) as store:
        old, new = store.get_revision(10), store.get_revision(200)
    assert old is not None and new is not None
    result = jsonpatch.apply_patch(old.settings, json.loads(out))
    assert canonical(result) == canonical(new.settings)


def test_markdown_is_a_table(synced: tuple[Path, Any]) -> None:
    code, out, _ = _run(["diff", "--from", "1", "--to", "30", "--format", "md", *_state(synced)])
    assert code == 0
    assert out.startswith("### Settings diff: revision 1 → 30")
    assert "| | Path | Change |" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diff", "--to", "999"], "revision 999 is not stored; stored: 1\u2013240"),
        (["diff", "--from", "0"], "revision 0 is not stored; stored: 1\u2013240"),
        (["history", "--since", "last tuesday"], "--since: expected a date such as"),
        (
            ["history", "--since", "2026-10-01", "--until", "2026-09-01"],
            "auditor: error: --since 2026-10-01 is after --until 2026-09-01: no time lies "
            "between them",
        ),
    ],
    ids=["to-missing", "from-missing", "bad-date", "since-after-until"],
)
def test_bad_arguments_exit_2_with_a_clear_message(
    synced: tuple[Path, Any],
    argv: list[str],
    message: str,
) -> None:
    code, out, err = _run([*argv, *_state(synced)])
    assert (code, out) == (2, "")
    assert message in err


@pytest.mark.parametrize("command", ["diff", "history"])
def test_missing_state_file_is_an_error(tmp_path: Path, command: str) -> None:
    code, _, err = _run([command, "--state", str(tmp_path / "none.db")])
    assert code == 2
    assert "auditor sync" in err


def test_history_lists_every_revision(synced: tuple[Path, Any]) -> None:
    code, out, _ = _run(["history", *_state(synced)])
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["REV", "TIME", "(UTC)", "AUTHOR", "CHANGES"]
    assert len(lines) == 1 + REVISIONS
    assert lines[1].split()[0] == "1" and "first stored revision" in lines[1]
    assert lines[-1].split()[0] == str(REVISIONS)


def test_history_path_glob_answers_who_touched_the_sandbox(
    synced: tuple[Path, list[dict[str, Any]]],
) -> None:
    history = synced[1]
    expected = [
        new["revision"]
        for old, new in itertools.pairwise(history)
        if "sandbox" in changed_paths(diff_revisions(old["settings"], new["settings"]))
    ]
    code, out, _ = _run(["history", "--path", "sandbox.*", "--format", "json", *_state(synced)])
    entries = json.loads(out)
    assert code == 0 and expected
    assert [e["revision"] for e in entries if not e["first"]] == expected
    for entry in entries:
        assert all(c["path"].startswith("$.sandbox") for c in entry["changes"])
        assert entry["summary"].count("sandbox") >= 1


def test_history_filters_by_author_and_dates(synced: tuple[Path, list[dict[str, Any]]]) -> None:
    history = synced[1]
    email = history[-1]["user"]["email"]
    since, until = history[100]["updatedAt"][:10], history[180]["updatedAt"][:10]
    code, out, _ = _run(
        [
            "history",
            "--author",
            email.upper(),
            "--since",
            since,
            "--until",
            until,
            "--format",
            "json",
            *_state(synced),
        ]
    )
    entries = json.loads(out)
    expected = [
        h["revision"]
        for h in history
        if h["user"]["email"] == email and since <= h["updatedAt"][:10] <= until
    ]
    assert code == 0 and expected
    assert [e["revision"] for e in entries] == expected


@pytest.mark.parametrize(
    ("numbers", "shown"),
    [
        ([], "none"),
        ([1, 2, 3], "1\u20133"),
        ([1, 2, 5, 7, 8], "1\u20132, 5, 7\u20138"),
        (list(range(1, 40, 2)), "1, 3, 5, 7, 9, 11, … (20 revisions)"),
    ],
    ids=["empty", "one-range", "gaps", "many-gaps"],
)
def test_stored_revisions_are_named_as_ranges(numbers: list[int], shown: str) -> None:
    from auditor.cli.cmd_diff import describe_stored

    assert describe_stored(numbers) == shown


@pytest.mark.parametrize(
    "command",
    [["history", "--format", "json"], ["diff", "--from", "1", "--to", "2", "--format", "json"]],
)
def test_a_store_an_older_auditor_redacted_shows_no_secret_it_missed(
    tmp_path: Path, command: list[str]
) -> None:
    """A state file from a release whose rules missed a secret (the password of a hook's
    `docker login -p`): the read-only commands show it redacted, without changing the file."""
    from tests.test_store import OLD_RULES_SECRET, _stored_by_an_older_auditor

    path = tmp_path / "state.db"
    _stored_by_an_older_auditor(path)
    before = path.read_bytes()
    code, out, err = _run([*command, "--state", str(path)])
    assert code == 0, err
    assert OLD_RULES_SECRET not in out + err
    assert "[secret fp:" in out
    assert path.read_bytes() == before
