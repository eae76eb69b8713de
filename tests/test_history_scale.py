"""`auditor history` on a long history: `--format json` is written entry by entry (what was
read is on stdout when a damaged revision stops the walk), `--since`/`--until` read only the
revisions in the window and the one before each, and every output stays byte for byte what
the whole-history walk and the one-piece JSON array gave."""

from __future__ import annotations

import io
import json
import random
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

import auditor.cli
import auditor.store.database
from auditor.cli import Context, cmd_history, main
from auditor.common.jsonutil import dumps_pretty
from auditor.fetch.decode import to_revision
from auditor.models import Revision, User
from auditor.store.database import Store
from tests.conftest import FIXED_NOW

T0 = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
USERS = [
    {"id": "u1", "email": "priya@acme.example", "name": "Priya"},
    {"id": "u2", "email": "marcus@acme.example", "name": None},
    {"id": "u3", "email": None, "name": "Zoë Ångström"},
]


@pytest.fixture(autouse=True)
def only_history(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auditor.cli, "COMMANDS", ("history",))


def _settings(rng: random.Random) -> dict[str, Any]:
    """Settings that differ a little from one revision to the next: set lists, keyed lists,
    nested objects, text that is not ASCII (escaped on an ASCII stdout)."""
    words = ["git status", "npm test", "ls", "echo é→ü", "make ☃", "cat 𝄞.txt", "rm -rf /tmp/x"]
    settings: dict[str, Any] = {
        "commandAllowlist": rng.sample(words, rng.randrange(len(words))),
        "sandbox": {
            "enabled": rng.random() < 0.5,
            "mode": rng.choice(["container", "per-session"]),
        },
        "maxAutonomyLevel": rng.choice(["low", "medium", "high"]),
    }
    if rng.random() < 0.7:
        settings["customModels"] = [
            {"id": f"custom:{i}", "model": rng.choice(["m1", "m2", "modèle"])}
            for i in range(rng.randrange(3))
        ]
    return settings


def _history(path: Path, seed: int, count: int) -> dict[int, datetime]:
    """A state file of `count` revisions (numbers with gaps, times out of order now and
    then, some on the same microsecond); gives each revision's time."""
    rng = random.Random(seed)
    numbers = sorted(rng.sample(range(1, count * 3), count))
    times: dict[int, datetime] = {}
    when = T0
    with Store.open(path) as store, store.transaction():
        for n in numbers:
            when += timedelta(hours=rng.randrange(0, 30), microseconds=rng.choice([0, 0, 1, 600]))
            at = when - timedelta(days=rng.randrange(1, 9)) if rng.random() < 0.15 else when
            times[n] = at
            raw = {
                "revision": n,
                "settings": _settings(rng),
                "user": rng.choice(USERS),
                "updatedAt": at.isoformat().replace("+00:00", "Z"),
            }
            rev = to_revision(raw, store.ingest_redactor(), "default", "$")
            store.ingest_revision(replace(rev, updated_at=at), 1, T0)
    return times


def _run(argv: list[str], encoding: str = "utf-8") -> tuple[int, bytes, str]:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding=encoding, write_through=False)
    err = io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd="/")
    code = main(argv, ctx)
    out.flush()
    return code, raw.getvalue(), err.getvalue()


def _whole_list(out: Any, entries: Iterator[cmd_history.Entry]) -> None:
    """How 0.3.0 before this change wrote `--format json`: the whole array in one write."""
    out.write(dumps_pretty([cmd_history._as_json(e) for e in entries]))


def _every_row(
    store: Store, since: datetime | None = None, until: datetime | None = None
) -> Iterator[Any]:
    """How `history` read the store before: every revision from the first."""
    return store.iter_revisions()


def _as_before(monkeypatch: pytest.MonkeyPatch, argv: list[str], encoding: str) -> Any:
    with monkeypatch.context() as mp:
        mp.setattr(cmd_history, "_write_json", _whole_list)
        mp.setattr(Store, "iter_revisions_in_window", _every_row)
        return _run(argv, encoding)


def _stamp(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_output_is_what_the_whole_walk_and_one_piece_array_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    path = tmp_path / "state.db"
    times = _history(path, seed, 80)
    rng = random.Random(seed)
    stored = sorted(times.values())
    one_us = timedelta(microseconds=1)
    windows: list[list[str]] = [
        [],
        ["--since", _stamp(stored[0])],
        ["--until", _stamp(stored[-1] - one_us)],
        ["--since", _stamp(stored[-1] + one_us)],  # nothing: "[]" and "(no matching revisions)"
        ["--since", _stamp(stored[30]), "--until", _stamp(stored[30])],
        ["--since", _stamp(stored[20] + one_us), "--until", _stamp(stored[50] - one_us)],
        ["--since", stored[40].date().isoformat(), "--until", stored[60].date().isoformat()],
        ["--since", stored[10].astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat()],
    ]
    for _ in range(6):
        low, high = sorted(rng.sample(stored, 2))
        windows.append(["--since", _stamp(low), "--until", _stamp(high)])
    extras: list[list[str]] = [
        [],
        ["--path", "sandbox.*"],
        ["--path", "customModels[*].model"],
        ["--author", "*ACME*"],
        ["--author", "zoë*"],
    ]
    for n, window in enumerate(windows):
        extra = extras[n % len(extras)]
        for form in (["--format", "json"], []):
            for encoding in ("utf-8", "ascii"):
                argv = ["history", "--state", str(path), *window, *extra, *form]
                now = _run(argv, encoding)
                before = _as_before(monkeypatch, argv, encoding)
                assert now == before, argv
                assert now[0] == 0, now[2]
    code, out, _ = _run(["history", "--state", str(path), "--format", "json"])
    assert code == 0 and len(json.loads(out)) == len(times)


def test_no_matching_revision_is_an_empty_array(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _history(path, 4, 5)
    argv = ["history", "--state", str(path), "--format", "json", "--author", "nobody"]
    assert _run(argv) == (0, b"[]\n", "")
    assert _run([*argv[:-2], "--since", "2099-01-01"]) == (0, b"[]\n", "")


def _damage(path: Path, number: int) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        (settings,) = db.execute(
            "SELECT settings FROM revisions WHERE revision = ?", (number,)
        ).fetchone()
        changed = orjson.dumps(orjson.loads(settings) | {"extra": True})
        db.execute("UPDATE revisions SET settings = ? WHERE revision = ?", (changed, number))


def test_a_damaged_revision_late_in_the_history_leaves_the_ones_before_it_printed(
    tmp_path: Path,
) -> None:
    """README: `history` streams, the revisions before the damaged one are already printed
    when the error comes (exit 2); in JSON the array is left open, so no JSON reader takes
    the part for the whole history. Before, `--format json` printed nothing at all."""
    path = tmp_path / "state.db"
    times = _history(path, 5, 60)
    argv = ["history", "--state", str(path), "--format", "json"]
    _, whole, _ = _run(argv)
    numbers = sorted(times)
    bad = numbers[50]
    _damage(path, bad)
    code, out, err = _run(argv)
    assert code == 2
    assert f"the settings of revision {bad} do not match their stored SHA-256" in err
    text = out.decode()
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert whole.decode().startswith(text + ",\n")  # the same bytes, up to the damaged one
    printed = json.loads(text + "\n]")
    assert [e["revision"] for e in printed] == numbers[:50]
    code, out, err = _run(argv[:-2])  # the text format too
    assert code == 2 and "do not match their stored SHA-256" in err
    assert [int(line.split()[0]) for line in out.decode().splitlines()[1:]] == numbers[:50]


def test_json_entries_reach_stdout_before_the_next_revision_is_read() -> None:
    sink = io.StringIO()
    seen: list[int] = []

    def entries() -> Iterator[cmd_history.Entry]:
        for n in range(1, 4):
            seen.append(sink.getvalue().count('"revision"'))
            rev = Revision(n, T0, User("u", "a@b.c", None), {"a": n}, "h")
            yield cmd_history.Entry(rev, (), n == 1)

    cmd_history._write_json(sink, entries())
    assert seen == [0, 1, 2]
    assert sink.getvalue() == dumps_pretty(json.loads(sink.getvalue()))


def test_a_window_reads_only_its_revisions_and_the_one_before_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`history --since yesterday` read, hash-checked and parsed every stored revision (7.8 s
    for 139 rows at 100,000 revisions); now only the window's, and the one before each."""
    path = tmp_path / "state.db"
    times = _history(path, 9, 300)
    numbers = sorted(times)
    since = sorted(times.values())[-10]
    inside = {n for n in numbers if times[n] >= since}
    wanted = inside | {numbers[numbers.index(n) - 1] for n in inside}
    parsed: list[int] = []
    real = auditor.store.database.revision_from_row

    def counting(row: Any) -> Any:
        parsed.append(int(row[0]))
        return real(row)

    monkeypatch.setattr(auditor.store.database, "revision_from_row", counting)
    code, out, err = _run(["history", "--state", str(path), "--since", _stamp(since)])
    assert code == 0, err
    assert sorted(parsed) == sorted(wanted) and len(parsed) <= 20
    shown = [int(line.split()[0]) for line in out.decode().splitlines()[1:]]
    assert shown == sorted(inside)
    # a damaged revision outside the window (and not just before it) is not read at all
    assert numbers[0] not in wanted
    _damage(path, numbers[0])
    assert _run(["history", "--state", str(path), "--since", _stamp(since)])[1] == out
