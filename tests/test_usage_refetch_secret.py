"""A secret a sync learns leaves no copy in the analytics days that sync fetches again.

Every sync fetches the window's newest days again and keeps what the answer holds less of
than the stored copy (`kept_evidence`). Night 1 stores a model name `custom:<V>` in `tokens`
(V a random text no detector flags); night 2 a new revision makes V a custom model's `apiKey`,
and the sync learns it. The days fetched again then name the model `custom:[secret …]`, which
the stored copy, compared as it was stored, did not: the stored entry was kept as "left out"
and written back with V in clear under this sync, whose own rows the scrub of a secret older
rows hold does not search; no later sync repaired it, and every report showed V (tester T95
#1). The stored copy is now compared under every secret known.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import endpoints_analytics, start_emulator
from tests.conftest import FIXED_NOW, emulator_env, run_cli

TOKEN = "tok-0123456789abcdef0123456789abcdef"
V = "Qm7vLp2XzR9kT4wN8bY3"  # no detector sees it by its form: only what names it does


def _name_v_an_api_key(emu: Any) -> None:
    """A new revision whose custom model's `apiKey` is V: the next sync learns it."""
    last = emu.dataset.history[-1]
    settings = copy.deepcopy(last["settings"])
    settings.setdefault("customModels", []).append(
        {"id": "custom:x", "model": "x", "provider": "openai", "apiKey": V}
    )
    emu.dataset.history.append({**last, "revision": last["revision"] + 1, "settings": settings})


@pytest.mark.e2e
def test_a_secret_learned_leaves_no_copy_in_the_days_fetched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row_fn, *rest = endpoints_analytics.SERIES["tokens"]

    def tokens_row(facts: Any) -> Any:
        row = row_fn(facts)
        entry = {"model": f"custom:{V}", "input_tokens": 10, "output_tokens": 5}
        return {**row, "by_model": [*row["by_model"], {**entry, "billable_tokens": 6}]}

    monkeypatch.setitem(endpoints_analytics.SERIES, "tokens", (tokens_row, *rest))
    state = tmp_path / "state.db"
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, state, TOKEN)
        code, out, err = run_cli(["sync"], env, tmp_path)
        assert code == 0, err
        assert V.encode() in state.read_bytes()  # stored as sent: nothing named it a secret
        _name_v_an_api_key(emu)
        code, out, err = run_cli(["sync"], env, tmp_path)
        assert code == 0, err
        assert "2 fetched again" in out
        assert "sent less" not in out + err  # the same figures, the same entries
        assert V.encode() not in state.read_bytes()
        code, out2, err2 = run_cli(["sync"], env, tmp_path)
        assert code == 0 and V.encode() not in state.read_bytes(), err2
        code, out3, err3 = run_cli(
            ["run", "--offline", "--out", str(tmp_path / "out")], env, tmp_path
        )
    assert code in (0, 1), err3
    for text in (out, err, out2, err2, out3, err3):
        assert V not in text
    for report in (tmp_path / "out").iterdir():
        assert V not in report.read_text(errors="replace"), report.name


@pytest.mark.e2e
def test_a_secret_the_analytics_teach_after_a_day_kept_a_stored_copy_is_scrubbed_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Night 2's answer leaves out the `custom:<V>` entry a stored day holds, so the stored
    entry is kept; a later series of the same sync then names V a secret (a hook command's
    `--api-key V`). The kept copy went through this sync's redactor before V was known, so
    the scrub searches every row for V, this sync's too."""
    tokens_fn, *tokens_rest = endpoints_analytics.SERIES["tokens"]
    tools_fn, *tools_rest = endpoints_analytics.SERIES["tools"]
    night = {"n": 1}

    def tokens_row(facts: Any) -> Any:
        row = tokens_fn(facts)
        if night["n"] > 1:  # left out: the stored entry is kept
            return row
        entry = {"model": f"custom:{V}", "input_tokens": 10, "output_tokens": 5}
        return {**row, "by_model": [*row["by_model"], {**entry, "billable_tokens": 6}]}

    def tools_row(facts: Any) -> Any:
        row = tools_fn(facts)
        if night["n"] == 1:
            return row
        hook = {"event": "PreToolUse", "matcher": "Bash", "count": 3}
        hooks = [*row["hooks_by_event"], {**hook, "command": f"guard --api-key {V}"}]
        return {**row, "hooks_by_event": hooks}

    monkeypatch.setitem(endpoints_analytics.SERIES, "tokens", (tokens_row, *tokens_rest))
    monkeypatch.setitem(endpoints_analytics.SERIES, "tools", (tools_row, *tools_rest))
    state = tmp_path / "state.db"
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, state, TOKEN)
        code, out, err = run_cli(["sync"], env, tmp_path)
        assert code == 0 and V.encode() in state.read_bytes(), err
        night["n"] = 2
        code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert "sent less" in out + err  # the entry left out is kept, and said so
    assert V.encode() not in state.read_bytes()
    assert V not in out + err


@pytest.mark.e2e
@pytest.mark.parametrize(("form", "rules"), [("raw", 8), ("hex", 9)])
def test_a_state_file_left_with_such_a_copy_is_repaired_on_the_next_sync(
    tmp_path: Path, form: str, rules: int
) -> None:
    """A state file an earlier build left with a remembered secret in clear in an analytics
    day (as the re-fetch above wrote it; or its hex, which rules 9 did not hide: T97 #3) is
    redacted again once, under this build's rules (`RULES_VERSION` 10), by the next sync: the
    row is found by the secret's fingerprint."""
    import sqlite3

    from auditor import __version__

    state = tmp_path / "state.db"
    left = V if form == "raw" else V.encode().hex()
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, state, TOKEN)
        _name_v_an_api_key(emu)
        code, _, err = run_cli(["sync"], env, tmp_path)
        assert code == 0 and V.encode() not in state.read_bytes(), err
        with sqlite3.connect(state) as db:  # as the earlier build left it
            (day,) = db.execute(
                "SELECT MIN(day) FROM analytics_days"
            ).fetchone()  # not fetched again
            db.execute(
                "UPDATE analytics_days SET data = ? WHERE day = ? AND series = 'tokens'",
                (f'{{"by_model":[{{"model":"custom:{left}","billable_tokens":6}}]}}'.encode(), day),
            )
            db.execute(
                "UPDATE meta SET value = ? WHERE key = 'redaction'",
                (f"{__version__}/{rules}",),  # the rules of the builds that wrote it
            )
        assert left.encode() in state.read_bytes()
        code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert left.encode() not in state.read_bytes()
    assert left not in out + err
