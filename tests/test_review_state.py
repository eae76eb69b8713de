"""`auditor review` against the stored state reads the evaluation state `auditor run` left.

A review attributes "violating since" for the live and the proposed settings. It used to walk
every stored revision twice to do that (28 s at 100,000 revisions). Now it resumes from the
evaluation state an earlier run left, when that state fits the stored history. These tests hold
it to a review of the same state file with its evaluation state emptied: over randomized
histories and proposals (a run made at the latest revision, or revisions synced since, offline
and online), a policy edit and a changed stored history, the reports (findings, messages,
evidence, attributions, new / fixed / no-longer-applies marks) and the exit code are the same.
A second check shows that the review did less work, so the equality is not the trivial one. A
review never writes the state.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import shutil
import sqlite3
import zlib
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import auditor.evaluate.memo as evaluate_memo
import auditor.evaluate.rule as evaluate_rule
from auditor.cli import Context, main
from auditor.emulator import Emulator, start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN

SHIPPED = Path(__file__).resolve().parents[1] / "policies"
PERSON = "priya.raman@acme.example"


class Reviewer:
    """One state file, `auditor run` on it, and reviews with and without its state."""

    def __init__(self, emu: Emulator, tmp: Path, calls: list[int]) -> None:
        self.emu, self.tmp, self.calls = emu, tmp, calls
        self.state = tmp / "state.db"
        self.policies = tmp / "policies"
        self.policies.mkdir()
        for name in ("baseline.yaml", "changes.yaml"):
            shutil.copy(SHIPPED / name, self.policies / name)
        self.count = 0

    def cli(self, argv: list[str], state: Path) -> int:
        env = {
            "AUDITOR_BASE_URL": self.emu.base_url,
            "AUDITOR_APP_URL": self.emu.app_url,
            "AUDITOR_TOKEN": OWNER_TOKEN,
            "AUDITOR_STATE": str(state),
        }
        out, err = io.StringIO(), io.StringIO()
        ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(self.tmp))
        code = main(argv, ctx)
        assert code in (0, 1), err.getvalue()
        return code

    def run(self) -> None:
        self.cli(
            ["run", "--offline", "--soft-fail", "-q", "--out", str(self.tmp / "run")], self.state
        )

    def review(self, proposed: dict[str, Any], *, offline: bool = True) -> tuple[Any, ...]:
        """The review with the state and the review of a copy without it: (exit code, reports,
        rules run) of each; the state file's evaluation state is checked untouched."""
        self.count += 1
        path = self.tmp / f"proposed-{self.count}.json"
        path.write_text(json.dumps(proposed, indent=2))
        scratch = self.tmp / f"scratch-{self.count}.db"
        shutil.copy(self.state, scratch)
        with (
            closing(sqlite3.connect(scratch)) as db,
            db,
        ):  # the same history and runs, no evaluation state
            db.execute("DELETE FROM eval_state")
        kept = eval_state(self.state)
        with_state = self._review(path, self.state, "with", offline)
        assert eval_state(self.state) == kept, "a review wrote the evaluation state"
        without = self._review(path, scratch, "without", offline)
        return with_state, without

    def _review(self, path: Path, state: Path, name: str, offline: bool) -> tuple[Any, ...]:
        out = self.tmp / f"{name}-{self.count}"
        argv = ["review", str(path), "--policy", str(self.policies), "--author", PERSON]
        argv += ["--out", str(out), "-q", *(["--offline"] if offline else [])]
        before = self.calls[0]
        code = self.cli(argv, state)
        calls = self.calls[0] - before
        findings = json.loads((out / "findings.json").read_text())
        findings.pop("run")
        markdown = (out / "report.md").read_text().replace(out.name, "OUT")
        markdown = "\n".join(line for line in markdown.splitlines() if "· run review-" not in line)
        return code, findings, markdown, calls


def eval_state(state: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(state)) as db, db:
        return db.execute("SELECT * FROM eval_state ORDER BY rule_key").fetchall()


def counted(real: Callable[..., Any], calls: list[int]) -> Callable[..., Any]:
    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    return counting


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a rule was run (worded or status only)."""
    counter = [0]
    for module, name in ((evaluate_rule, "run_rule"), (evaluate_memo, "rule_status")):
        monkeypatch.setattr(module, name, counted(getattr(module, name), counter))
    return counter


def proposals(live: dict[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    """The live settings unchanged, weakened, strengthened and edited at random."""
    out: list[dict[str, Any]] = [json.loads(json.dumps(live))]
    edits: list[Callable[[dict[str, Any]], None]] = [
        lambda s: s.setdefault("commandAllowlist", []).append("rm -rf /tmp/foo"),
        lambda s: s.update(commandDenylist=s.get("commandDenylist", [])[1:]),
        lambda s: s.setdefault("sandbox", {}).update(enabled=not s["sandbox"].get("enabled")),
        lambda s: s.update(
            commandDenylist=[*s.get("commandDenylist", []), "rm -rf /", "git push --force"]
        ),
        lambda s: s.pop(rng.choice(sorted(s)), None),
        lambda s: s.update(maxAutonomyLevel=rng.choice(["low", "medium", "high"])),
        lambda s: s.setdefault("env", {}).update(API_KEY="sk-live-0123456789abcdefghijkl"),
    ]
    for _ in range(4):
        settings = json.loads(json.dumps(live))
        for change in rng.sample(edits, rng.randint(1, 3)):
            change(settings)
        out.append(settings)
    return out


def same(with_state: tuple[Any, ...], without: tuple[Any, ...], what: str) -> None:
    assert with_state[:3] == without[:3], what


def emu_last(emu: Emulator) -> int:
    return int(emu.dataset.history[-1]["revision"])


def live_settings(emu: Emulator) -> dict[str, Any]:
    return json.loads(json.dumps(emu.dataset.history[-1]["settings"]))


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_a_review_reads_the_state_and_says_what_a_review_from_scratch_says(
    seed: int, tmp_path: Path, calls: list[int]
) -> None:
    rng = random.Random(seed)
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"},
        now=FIXED_NOW,
        seed=seed,
        revisions=rng.randint(40, 90),
        repos=3,
    ) as emu:
        reviewer = Reviewer(emu, tmp_path, calls)
        reviewer.cli(["sync", "-q"], reviewer.state)
        reviewer.run()
        codes, attributed = set(), 0
        for n, proposed in enumerate(proposals(live_settings(emu), rng)):
            with_state, without = reviewer.review(proposed)
            same(with_state, without, f"seed {seed}, proposal {n}")
            assert with_state[3] < without[3], f"seed {seed}, proposal {n}: state not read"
            codes.add(with_state[0])
            attributed += sum(
                1
                for f in with_state[1]["findings"]
                if f["status"] == "fail" and (f["since"] or {}).get("revision", 0) < emu_last(emu)
            )
        assert codes == {0, 1}, "the proposals do not both pass and fail the gate"
        assert attributed, "no finding is violating since a stored revision: nothing compared"

        # Revisions synced since the run: the state ends before the live revision; the walk
        # covers the revisions after it (offline after a sync, and online, which syncs them).
        emu.add_revisions(rng.randint(1, 8))
        reviewer.cli(["sync", "-q"], reviewer.state)
        for n, proposed in enumerate(proposals(live_settings(emu), rng)[:3]):
            with_state, without = reviewer.review(proposed)
            same(with_state, without, f"seed {seed}, after new revisions, proposal {n}")
            assert with_state[3] < without[3], f"seed {seed}: state not read after a sync"
        emu.add_revisions(rng.randint(1, 8))
        proposed = proposals(live_settings(emu), rng)[1]
        with_state, without = reviewer.review(proposed, offline=False)
        same(with_state, without, f"seed {seed}, online")
        assert with_state[3] < without[3], f"seed {seed}: an online review read no state"


def test_a_state_for_other_rules_or_another_history_is_not_used(
    tmp_path: Path, calls: list[int]
) -> None:
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, seed=17, revisions=70, repos=3
    ) as emu:
        reviewer = Reviewer(emu, tmp_path, calls)
        reviewer.cli(["sync", "-q"], reviewer.state)
        reviewer.run()
        proposed = proposals(live_settings(emu), random.Random(5))[1:]

        # A policy edit: the edited rule's state is filed under another key; it is evaluated
        # over the whole history again, and says what a review from scratch says.
        baseline = reviewer.policies / "baseline.yaml"
        old = "{path: sandbox.enabled, equals: true}"
        assert old in baseline.read_text()
        baseline.write_text(
            baseline.read_text().replace(old, "{path: sandbox.enabled, equals: false}", 1)
        )
        for n, settings in enumerate(proposed):
            with_state, without = reviewer.review(settings)
            same(with_state, without, f"policy edit, proposal {n}")

        # A stored revision that is no longer what the state was computed over (stored again
        # as other bytes of the same JSON, with their own hash): the state is not used at all.
        with closing(sqlite3.connect(reviewer.state)) as db, db:
            (body,) = db.execute("SELECT settings FROM revisions WHERE revision = 9").fetchone()
            again = json.dumps(json.loads(body), indent=1).encode()
            db.execute(
                "UPDATE revisions SET settings = ?, content_hash = ? WHERE revision = 9",
                (again, hashlib.sha256(again).hexdigest()),
            )
        for n, settings in enumerate(proposed):
            with_state, without = reviewer.review(settings)
            same(with_state, without, f"changed history, proposal {n}")
            assert with_state[3] == without[3], "a state over another history was read"


def test_a_state_file_never_run_or_with_a_damaged_state_is_reviewed_as_before(
    tmp_path: Path, calls: list[int]
) -> None:
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, seed=23, revisions=50, repos=3
    ) as emu:
        reviewer = Reviewer(emu, tmp_path, calls)
        reviewer.cli(["sync", "-q"], reviewer.state)
        (settings,) = proposals(live_settings(emu), random.Random(2))[1:2]
        with_state, without = reviewer.review(settings)
        same(with_state, without, "no run")
        assert eval_state(reviewer.state) == []

        # Rows the state file holds damaged (not zlib, not JSON, JSON of another shape): the
        # state is only a cache, so their rules are evaluated afresh, never a failed review.
        reviewer.run()
        damage = [
            b"xnot zlib",
            zlib.compress(b"{not json"),
            zlib.compress(b'{"a": 1}'),
            zlib.compress(b'{"last": 3, "failing": true, "spans": [[[1, "", "a", "b"], "x"]]}'),
        ]
        with closing(sqlite3.connect(reviewer.state)) as db, db:
            keys = [k for (k,) in db.execute("SELECT rule_key FROM eval_state ORDER BY 1")]
            for key, data in zip(keys, damage * len(keys), strict=False):
                db.execute("UPDATE eval_state SET data = ? WHERE rule_key = ?", (data, key))
        with_state, without = reviewer.review(settings)
        same(with_state, without, "damaged state")
