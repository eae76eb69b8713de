"""Incremental evaluation = evaluation from scratch (issue 13).

Over randomized histories served by the emulator over HTTP, a chain of nightly `auditor run`s
that read back the evaluation state earlier runs left (new revisions, new analytics days, a
policy edit of settings, change, usage and readiness rules that also adds rules, a waiver, a
readiness model change, more revisions) writes the very same findings.json as a run of the same
state file with its evaluation state emptied: same findings, messages, evidence, "since"
attributions, new / persisting / resolved marks and failing counts. A second check makes sure
the nightly really did less work, so the equality is not the trivial one.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import shutil
import sqlite3
import zlib
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import auditor.evaluate.change as evaluate_change
import auditor.evaluate.incremental as evaluate_incremental
import auditor.evaluate.memo as evaluate_memo
import auditor.evaluate.rule as evaluate_rule
from auditor.cli import Context, main
from auditor.emulator import Emulator, start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "policies"
MODEL = REPO / "auditor" / "data" / "readiness-criteria.yaml"

EXTRA_RULES = """\
rules:
  - id: EXT-SET-001
    title: Default reasoning effort is modest
    severity: low
    target: settings
    assert: {path: sessionDefaultSettings.reasoningEffort, in: [low, medium]}
  - id: EXT-CHG-001
    title: Session autonomy ceiling left alone
    severity: low
    target: change
    assert:
      not: {path: maxAutonomyLevel, changed: true}
"""

WAIVER = """\
waivers:
  - rule: BASE-SBX-001
    subject: settings
    reason: test waiver added between two nightly runs
    owner: someone@example.com
    expires: 2027-01-31
  - rule: CHG-SBX-002
    subject: change
    reason: test waiver on change steps
    owner: someone@example.com
    expires: 2027-01-31
"""


class Chain:
    """One state file audited nightly, and a from-scratch twin audited alongside each night."""

    def __init__(self, emu: Emulator, tmp: Path) -> None:
        self.emu, self.tmp = emu, tmp
        self.state = tmp / "state.db"
        self.policies = tmp / "policies"
        self.policies.mkdir()
        for name in ("baseline.yaml", "changes.yaml", "readiness.yaml", "usage.yaml"):
            shutil.copy(SHIPPED / name, self.policies / name)
        self.extra: list[str] = []
        self.night = 0
        self.now = FIXED_NOW  # moved on a day or more: new analytics days, older reports

    def env(self, state: Path) -> dict[str, str]:
        return {
            "AUDITOR_BASE_URL": self.emu.base_url,
            "AUDITOR_APP_URL": self.emu.app_url,
            "AUDITOR_TOKEN": OWNER_TOKEN,
            "AUDITOR_STATE": str(state),
        }

    def cli(self, argv: list[str], state: Path) -> int:
        out, err = io.StringIO(), io.StringIO()
        ctx = Context(
            env=self.env(state), stdout=out, stderr=err, clock=lambda: self.now, cwd=str(self.tmp)
        )
        code = main(argv, ctx)
        assert code in (0, 1), err.getvalue()
        return code

    def sync(self) -> None:
        self.cli(["sync"], self.state)

    def nightly(
        self, counter: Callable[[], int]
    ) -> tuple[dict[str, Any], dict[str, Any], int, int]:
        """Run the incremental chain and its from-scratch twin; their findings.json and how
        many times a rule was run in each."""
        self.night += 1
        scratch = self.tmp / f"scratch-{self.night}.db"
        shutil.copy(self.state, scratch)
        with (
            closing(sqlite3.connect(scratch)) as db,
            db,
        ):  # the same history and runs, no evaluation state
            db.execute("DELETE FROM eval_state")
        before = counter()
        inc = self.run(self.state, f"inc-{self.night}")
        middle = counter()
        full = self.run(scratch, f"full-{self.night}")
        return inc, full, middle - before, counter() - middle

    def run(self, state: Path, name: str) -> dict[str, Any]:
        out = self.tmp / name
        argv = [
            "run",
            "--offline",
            "--soft-fail",
            "-o",
            "json",  # (what is compared: the other four are written from the same findings)
            "--out",
            str(out),
            "--policy",
            str(self.policies),
        ]
        self.cli([*argv, *self.extra], state)
        data: dict[str, Any] = json.loads((out / "findings.json").read_text())
        return data


def counted(real: Callable[..., Any], calls: list[int]) -> Callable[..., Any]:
    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    return counting


def comparable(data: dict[str, Any]) -> dict[str, Any]:
    """Everything a report says except which run it was (its id and output folder)."""
    return {k: v for k, v in data.items() if k != "run"}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path.name} no longer holds {old!r}"
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_nightly_chain_matches_a_run_from_scratch(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    calls = [0]  # rules run, worded or status only
    for module, name in ((evaluate_rule, "run_rule"), (evaluate_memo, "rule_status")):
        monkeypatch.setattr(module, name, counted(getattr(module, name), calls))
    revisions = rng.randint(40, 90)
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, seed=seed, revisions=revisions, repos=6
    ) as emu:
        chain = Chain(emu, tmp_path)
        chain.sync()

        def night(what: str) -> None:
            inc, full, inc_calls, full_calls = chain.nightly(lambda: calls[0])
            assert comparable(inc) == comparable(full), f"seed {seed}, {what}"
            assert inc["findings"], "the policies find nothing: the comparison would be empty"
            judged = {f["rule_id"][:3] for f in inc["findings"] if f["status"] != "unknown"}
            assert {"USE", "RDY"} <= judged, "usage or readiness rules judged nothing"
            if what != "first":
                assert inc_calls < full_calls, f"seed {seed}, {what}: nothing was read back"

        night("first")
        emu.add_revisions(rng.randint(1, 12))
        chain.sync()
        night("new revisions")
        night("nothing new")
        chain.now += timedelta(days=rng.randint(1, 3))
        chain.sync()
        night("new analytics days")
        sandbox = "{path: sandbox.enabled, "
        edit(
            chain.policies / "baseline.yaml", sandbox + "equals: true}", sandbox + "equals: false}"
        )
        edit(chain.policies / "changes.yaml", sandbox + "from: true}", sandbox + "to: true}")
        edit(
            chain.policies / "usage.yaml",
            "{path: billable_tokens, gt: 0}",
            "{path: billable_tokens, gt: 5000}",
        )
        edit(chain.policies / "readiness.yaml", "{path: $level, gte: 2}", "{path: $level, gte: 3}")
        (chain.policies / "extra.yaml").write_text(EXTRA_RULES)
        night("policy edit and two new rules")
        emu.add_revisions(rng.randint(1, 12))
        chain.sync()
        night("new revisions after the edit")
        (tmp_path / "waivers.yaml").write_text(WAIVER)
        chain.extra = ["--waivers", str(tmp_path / "waivers.yaml")]
        night("waiver added")
        model = tmp_path / "model.yaml"
        model.write_text(
            MODEL.read_text().replace("unlock_threshold: 0.8", "unlock_threshold: 0.5")
        )
        chain.extra += ["--readiness-model", str(model)]
        emu.add_revisions(rng.randint(1, 12))
        chain.sync()
        night("readiness model change and new revisions")
        chain.now += timedelta(days=1)
        emu.add_revisions(rng.randint(0, 3))
        chain.sync()
        night("a day later")


def test_state_is_read_by_at_runs_and_dropped_when_the_history_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = [0]
    for module, name in ((evaluate_rule, "run_rule"), (evaluate_memo, "rule_status")):
        monkeypatch.setattr(module, name, counted(getattr(module, name), calls))
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, seed=17, revisions=70, repos=4
    ) as emu:
        chain = Chain(emu, tmp_path)
        (chain.policies / "usage.yaml").unlink()  # `--at` a day before the stored analytics
        chain.sync()
        with (
            closing(sqlite3.connect(chain.state)) as db,
            db,
        ):  # a state file from before the table existed
            db.execute("DROP TABLE IF EXISTS eval_state")
            db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        chain.run(chain.state, "first")
        with closing(sqlite3.connect(chain.state)) as db, db:
            stored = db.execute("SELECT COUNT(*), MAX(revision) FROM eval_state").fetchone()
            middle = db.execute("SELECT updated_at FROM revisions WHERE revision = 35").fetchone()
        assert stored[0] > 0 and stored[1] == 70  # every settings and change rule, at rev 70

        # `--at` a day in the middle reads the state (computed up to 70) but leaves it alone.
        chain.extra = ["--at", middle[0][:10]]
        inc, full, inc_calls, full_calls = chain.nightly(lambda: calls[0])
        assert comparable(inc) == comparable(full)
        assert inc["inputs"]["settings_revision"] < 70
        assert inc_calls < full_calls
        with closing(sqlite3.connect(chain.state)) as db, db:
            assert db.execute("SELECT MAX(revision) FROM eval_state").fetchone() == (70,)

        # A stored revision no longer what the state was computed over: the state is not used.
        chain.extra = []
        # (Stored again as other bytes of the same JSON with their own hash, as a re-redaction
        # stores a row: a hash changed alone is damage, refused when the row is read.)
        with closing(sqlite3.connect(chain.state)) as db, db:
            (body,) = db.execute("SELECT settings FROM revisions WHERE revision = 9").fetchone()
            again = json.dumps(json.loads(body), indent=1).encode()
            db.execute(
                "UPDATE revisions SET settings = ?, content_hash = ? WHERE revision = 9",
                (again, hashlib.sha256(again).hexdigest()),
            )
        inc, full, inc_calls, full_calls = chain.nightly(lambda: calls[0])
        assert comparable(inc) == comparable(full)
        assert inc_calls == full_calls  # everything evaluated afresh, as from an empty state


@contextmanager
def _after_a_first_run(tmp_path: Path) -> Iterator[Chain]:
    """A small history synced and run once (its evaluation state stored), the emulator up."""
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, seed=5, revisions=40, repos=3
    ) as emu:
        chain = Chain(emu, tmp_path)
        chain.sync()
        chain.run(chain.state, "first")
        yield chain


def test_a_damaged_evaluation_state_is_evaluated_afresh(tmp_path: Path) -> None:
    """The evaluation state is only a cache: a row the state file holds damaged (not zlib, zlib
    of something that is not JSON, JSON of another shape) makes its rule be evaluated afresh,
    with the same reports as a run from an empty state, never a failed run."""
    with _after_a_first_run(tmp_path) as chain:
        with closing(sqlite3.connect(chain.state)) as db, db:
            keys = [k for (k,) in db.execute("SELECT rule_key FROM eval_state ORDER BY 1")]
            tally = b'{"steps": 1, "counts": %s, "first": 1, "last": %s, "open": %s}'
            step = b'[["change", "k", "k", 2, null], "bogus", "m", [], null]'
            damage = [
                b"xnot zlib",
                zlib.compress(b"{not json"),
                zlib.compress(b'{"a": 1}'),
                b"[",
                zlib.compress(tally % (b"[1]", b"2", b"[]")),
                zlib.compress(tally % (b"{}", b'"x"', b"[]")),
                zlib.compress(tally % (b"{}", b"2", b"[" + step + b"]")),
                zlib.compress(b'{"last": 3, "failing": true, "spans": [[[1, "", "a", "b"], "x"]]}'),
            ]
            for key, data in zip(keys, damage * len(keys), strict=False):
                db.execute("UPDATE eval_state SET data = ? WHERE rule_key = ?", (data, key))
        assert len(keys) >= len(damage)
        inc, full, _, _ = chain.nightly(lambda: 0)
        assert comparable(inc) == comparable(full)


def test_kept_verdicts_with_evidence_of_the_wrong_types_are_worked_out_again(
    tmp_path: Path,
) -> None:
    """A kept usage or readiness verdict whose evidence holds a value of the wrong type (a
    path or an operator that is a number: a damaged row) makes its rule be evaluated afresh,
    with the same reports as a run from an empty state, not a report writer's error."""
    with _after_a_first_run(tmp_path) as chain:
        bad = 0
        with closing(sqlite3.connect(chain.state)) as db, db:
            for key, data in db.execute(
                "SELECT rule_key, data FROM eval_state WHERE rule_key LIKE 'verdicts:%'"
            ).fetchall():
                kept = json.loads(zlib.decompress(data))
                for n, verdict in enumerate(kept["verdicts"]):
                    for evidence in verdict[3]:
                        evidence[0 if n % 2 else 3] = 5
                        bad += 1
                db.execute(
                    "UPDATE eval_state SET data = ? WHERE rule_key = ?",
                    (zlib.compress(json.dumps(kept).encode()), key),
                )
        assert bad
        inc, full, _, _ = chain.nightly(lambda: 0)
        assert comparable(inc) == comparable(full)


def test_a_nightly_resumes_change_rules_from_their_stored_tallies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nightly after 2 new revisions walks only those 2 change steps: the change rules'
    tallies an earlier run stored are read back, not silently left unread (every other kind of
    rule reads its state back too, so a count over all rules did not see it; review R39), and a
    resumed tally writes the results it was given back as they were stored."""
    walked = [0]
    resumed = [0]
    push, dump = evaluate_change.ChangeRun.push, evaluate_incremental.dump_tally

    def counted_push(self: Any, before: Any, after: Any) -> Any:
        walked[0] += 1
        return push(self, before, after)

    def counted_dump(tally: Any, rule: Any) -> Any:
        resumed[0] += tally.stored is not None
        return dump(tally, rule)

    monkeypatch.setattr(evaluate_change.ChangeRun, "push", counted_push)
    monkeypatch.setattr(evaluate_incremental, "dump_tally", counted_dump)
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, seed=11, revisions=50, repos=3
    ) as emu:
        chain = Chain(emu, tmp_path)
        chain.sync()
        first = chain.run(chain.state, "one")
        assert walked[0] >= 40  # the first run walks every step of the history
        emu.add_revisions(2)
        chain.sync()
        walked[0] = resumed[0] = 0
        second = chain.run(chain.state, "two")
    assert walked[0] == 2, f"{walked[0]} change steps walked by the nightly, 2 of them new"
    assert resumed[0] > 0, "no change rule's tally was resumed from the state file"
    assert first["findings"] and second["findings"]
