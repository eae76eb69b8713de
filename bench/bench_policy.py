"""Policy benchmark: 100 rules over a 10,000-revision history vs parsing that history.

Prints the JSON parse time of the revisions (orjson and json: the floor), the incremental
evaluation of 100 settings rules with attribution over every revision, the same without
incremental re-use (on a slice, scaled), and the load + validation time of 100- and 500-rule
policy files. Run: `.venv/bin/python bench/bench_policy.py [--revisions N]`.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from bisect import bisect_left
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import parse_baseline, result, row, timed

from auditor.common.jsonutil import content_hash
from auditor.evaluate.conditions import Env
from auditor.evaluate.engine import evaluate
from auditor.evaluate.history import HistoryRun
from auditor.evaluate.model import EvaluationInputs
from auditor.models import Revision, User
from auditor.policy import load_policies

NOW = datetime(2026, 11, 1, tzinfo=UTC)
NIGHTLY = 10  # new revisions in a nightly
FLAGS = 300
DOM = range(80)
SECRET = "[secret fp:1a2b3c4d len:40]"


def base_settings() -> dict[str, Any]:
    """A settings object of roughly 12 KB, shaped like the real one."""
    return {
        "sandbox": {"enabled": True, "network": {"allowedDomains": [f"d{i}.x.com" for i in DOM]}},
        "maxAutonomyLevel": "medium",
        "customModels": [
            {"id": f"custom:m{i}", "baseUrl": f"https://m{i}.internal/v1", "apiKey": SECRET,
             "headers": {"X-Team": f"team{i}"}}
            for i in range(30)
        ],
        "features": {f"flag{i}": i % 3 != 0 for i in range(FLAGS)},
        "mcpPolicy": {"enabled": True, "allowlist": [f"srv{i}" for i in range(15)]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "command": "audit.sh"}]},
        "cliVersion": "1.14.2",
    }  # fmt: skip


def history_texts(count: int, seed: int = 7) -> list[bytes]:
    """Serialized revisions, each changing one or two leaves of the previous one."""
    rng = random.Random(seed)
    settings = base_settings()
    out = []
    for n in range(count):
        for _ in range(rng.choice((1, 1, 2))):
            pick = rng.random()
            if pick < 0.7:
                key = f"flag{rng.randrange(FLAGS)}"
                settings["features"][key] = not settings["features"][key]
            elif pick < 0.85:
                model = settings["customModels"][rng.randrange(30)]
                model["baseUrl"] = rng.choice(("https://", "http://")) + f"m{n}.internal/v1"
            else:
                settings["maxAutonomyLevel"] = rng.choice(("low", "medium", "high"))
        out.append(orjson.dumps({"revision": n + 1, "settings": settings}))
    return out


def policy_text(count: int) -> str:
    """A policy file of `count` rules over the settings above (varied operators)."""
    rules = [
        "  - {id: SBX-001, title: sandbox on, severity: critical, target: settings,"
        " assert: {path: sandbox.enabled, equals: true}}",
        "  - {id: SBX-002, title: no wildcard, severity: high, target: settings,"
        ' assert: {path: sandbox.network.allowedDomains, excludes: "*"}}',
        "  - {id: AUT-001, title: autonomy, severity: high, target: settings,"
        " assert: {path: maxAutonomyLevel, at_most: {enum: autonomy, value: medium}}}",
        "  - {id: MOD-001, title: https models, severity: medium, target: settings,"
        ' assert: {each: customModels, assert: {path: baseUrl, matches: "^https://"}}}',
        "  - {id: MCP-001, title: mcp allowlist, severity: low, target: settings,"
        " assert: {path: mcpPolicy.allowlist, length: {lte: 50}}}",
        "  - {id: CLI-001, title: cli version, severity: low, target: settings,"
        ' assert: {path: cliVersion, version_at_least: "1.10"}}',
    ]
    for i in range(count - len(rules)):
        rules.append(
            f"  - id: FLG-{i:03d}\n    title: flag {i} is on\n    severity: low\n"
            f"    target: settings\n    controls: ['SOC2:CC6.{i % 9}']\n"
            f"    when: {{path: sandbox.enabled, exists: true}}\n"
            f"    assert: {{path: [features.flag{i}, legacy.flag{i}], equals: true,"
            " default: false}"
        )
    return "rules:\n" + "\n".join(rules) + "\n"


def to_revisions(texts: list[bytes]) -> list[Revision]:
    """Parse the serialized history into Revision records."""
    user = User("u1", "admin@example.com", "Admin")
    start = NOW - timedelta(days=len(texts))
    out = []
    for text in texts:
        doc = orjson.loads(text)
        settings = doc["settings"]
        when = start + timedelta(days=doc["revision"])
        out.append(Revision(doc["revision"], when, user, settings, content_hash(settings)))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the figures and results."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--revisions", type=int, default=10_000)
    count = parser.parse_args(argv).revisions
    texts = history_texts(count)
    size = sum(map(len, texts)) / len(texts)
    print(
        f"{count} revisions of {size / 1024:.1f} KB, 100 settings rules "
        f"(Python {sys.version.split()[0]})"
    )
    base = parse_baseline(texts)
    base.print("the serialized revisions")
    parse_orjson = base.orjson_s
    revisions = to_revisions(texts)
    with tempfile.TemporaryDirectory() as tmp:
        figures = load_figures(Path(tmp))
        policy = load_policies([Path(tmp) / "p100.yaml"])
    inputs = EvaluationInputs(NOW, revisions[-1], tuple(revisions))
    incremental, evaluation = timed(lambda: evaluate(policy, inputs), repeat=3)
    failing = sum(r.status == "fail" for r in evaluation.results)
    print(
        row(
            f"evaluate 100 rules, incremental + attribution ({failing} failing)",
            incremental,
            parse_orjson,
        )
    )
    sample = revisions[: max(1, count // 10)]
    naive, _ = timed(lambda: naive_run(policy.rules, sample), repeat=1)
    print(
        row(
            "evaluate 100 rules on every revision (no re-use, scaled)",
            naive * count / len(sample),
            parse_orjson,
        )
    )
    for label, seconds in figures:
        print(row(label, seconds))
    result(
        f"evaluate 100 rules over {count:,} revisions vs orjson.loads of them",
        f"{incremental / parse_orjson:.2f}x (json: {incremental / base.json_s:.2f}x)",
        "<= 1x",
        incremental <= parse_orjson,
    )
    nightly_s = nightly(policy, revisions)
    print(row("nightly: the same 100 rules after 10 new revisions, stored state", nightly_s))
    result(
        "evaluate 100 rules after 10 new revisions (stored state) vs a full evaluation",
        f"{nightly_s / incremental:.1%}",
        "<= 5 %",
        nightly_s <= 0.05 * incremental,
    )
    load_100 = figures[0][1]
    result("load + validate a 100-rule policy file", f"{load_100:.3f} s", "<= 0.2 s",
           load_100 <= 0.2)  # fmt: skip
    return 0


def nightly(policy: Any, revisions: list[Revision]) -> float:
    """The evaluation part of a nightly: state kept by a run over all but the last 10
    revisions, then a run over all of them reading that state back (the time of the second)."""
    numbers = [r.revision for r in revisions]

    def tail(start: int) -> list[Revision]:
        return revisions[bisect_left(numbers, start) :]

    before = revisions[:-NIGHTLY]
    first = evaluate(
        policy,
        EvaluationInputs(
            NOW, before[-1], tuple(before), tail=tail,
            revision_numbers=numbers[: len(before)], remember=True,
        ),
    )  # fmt: skip
    inputs = EvaluationInputs(
        NOW, revisions[-1], tuple(revisions), tail=tail, revision_numbers=numbers,
        prior=dict(first.state.items()), remember=True,
    )  # fmt: skip
    seconds, _ = timed(lambda: evaluate(policy, inputs), repeat=3)
    return seconds


def naive_run(rules: Any, revisions: list[Revision]) -> None:
    """Every rule on every revision: what incremental evaluation avoids."""
    from auditor.evaluate.rule import run_rule

    env = Env(NOW)
    for revision in revisions:
        for rule in rules:
            run_rule(rule, revision.settings, env)
    HistoryRun(rules, env)  # same setup cost as the incremental run


def load_figures(folder: Path) -> list[tuple[str, float]]:
    """Load + validation time of 100- and 500-rule files (best of 5)."""
    out = []
    for count in (100, 500):
        path = folder / f"p{count}.yaml"
        path.write_text(policy_text(count))
        seconds, _ = timed(lambda p=path: load_policies([p]), repeat=5)  # type: ignore[misc]
        out.append((f"load + validate a {count}-rule policy file", seconds))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
