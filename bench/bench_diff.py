"""Benchmark the settings diff: parse floor vs our engine vs plain DeepDiff on whole documents.

Run: `.venv/bin/python bench/bench_diff.py [--revisions 10000] [--baseline-pairs 200]`, after
`pip install -e '.[bench]'` (DeepDiff, the baseline, is not a dependency of auditor).
Prints figures; it is not a timed test. Target: diffing every consecutive pair costs at most
the time to parse the history pages (design §10).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from deepdiff import DeepDiff

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import result, row, timed

from auditor.diff.engine import diff_revisions, to_json_patch

PAGE = 100


def _emulator_history(revisions: int) -> list[dict[str, Any]] | None:
    try:
        from auditor.emulator.data import generate_dataset
    except ImportError:
        return None
    history: list[dict[str, Any]] = generate_dataset(seed=7, revisions=revisions, repos=0).history
    return history


def _local_settings(rng: random.Random) -> dict[str, Any]:
    """A ~12 KB settings object shaped like the service's (fallback when no emulator)."""
    words = [f"cmd-{i}" for i in range(80)]
    return {
        "sessionDefaultSettings": {
            "model": "m-1",
            "reasoningEffort": "low",
            "autonomyLevel": "low",
        },
        "commandAllowlist": rng.sample(words, 40),
        "commandDenylist": rng.sample(words, 20),
        "customModels": [
            {
                "id": f"custom:m{i}",
                "model": f"m{i}",
                "baseUrl": f"https://llm{i}.example/v1",
                "apiKey": f"[secret fp:{i:08x} len:40]",
                "maxOutputTokens": 4096,
                "extraHeaders": {"X-Team": f"[secret fp:{i + 9:08x} len:12]"},
            }
            for i in range(12)
        ],
        "modelPolicy": {
            "allowedModelIds": [f"model-{i}" for i in range(30)],
            "allowCustomModels": True,
        },
        "sandbox": {
            "enabled": True,
            "network": {"allowedDomains": [f"d{i}.example" for i in range(40)]},
        },
        "hooks": {
            ev: [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": f"audit {ev}", "timeout": 30}],
                }
            ]
            for ev in ("PreToolUse", "PostToolUse", "Stop", "SessionStart")
        },
        **{f"flag{i}": bool(i % 2) for i in range(40)},
    }


def _local_history(revisions: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(7)
    settings = _local_settings(rng)
    for n in range(1, revisions + 1):
        settings = dict(settings)
        pick = rng.randrange(3)
        if pick == 0:
            key = f"flag{rng.randrange(40)}"
            settings[key] = not settings[key]
        elif pick == 1:
            settings["commandAllowlist"] = [f"new-{n}", *settings["commandAllowlist"][:-1]]
        else:
            models = list(settings["customModels"])
            i = rng.randrange(len(models))
            models[i] = {**models[i], "baseUrl": f"https://llm{n}.example/v1"}
            settings["customModels"] = models
        yield {
            "revision": n,
            "settings": settings,
            "updatedAt": "2026-01-01T00:00:00Z",
            "user": {"id": "u1", "email": "a@acme.example", "name": "A"},
        }


def _pages(source: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    page: list[dict[str, Any]] = []
    for change in source:
        page.append(change)
        if len(page) == PAGE:
            yield orjson.dumps({"changes": page})
            page = []
    if page:
        yield orjson.dumps({"changes": page})


def measure(revisions: int, baseline_pairs: int) -> None:
    """Stream the pages: time parsing, our diff of every pair, and DeepDiff on a sample."""
    history = _emulator_history(revisions)
    label = "emulator generate_dataset" if history is not None else "local generator"
    source = history if history is not None else _local_history(revisions)
    parse_s = json_s = diff_s = deep_s = 0.0
    pairs = deep_pairs = changes = 0
    prev: Any = None
    for page in _pages(source):
        t0 = time.perf_counter()
        json.loads(page)
        json_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        parsed = orjson.loads(page)["changes"]
        parse_s += time.perf_counter() - t0
        for change in parsed:
            settings = change["settings"]
            if prev is not None:
                t0 = time.perf_counter()
                changes += len(diff_revisions(prev, settings))
                diff_s += time.perf_counter() - t0
                pairs += 1
                if deep_pairs < baseline_pairs:
                    t0 = time.perf_counter()
                    DeepDiff(prev, settings)
                    deep_s += time.perf_counter() - t0
                    deep_pairs += 1
            prev = settings
    deep_scaled = deep_s * pairs / max(deep_pairs, 1)
    print(f"{revisions} revisions ({label}), {pairs} pairs, {changes} changes found")
    print(row("json.loads of every page, one at a time", json_s))
    print(row("orjson.loads of every page, one at a time (baseline)", parse_s))
    print(row("diff_revisions on every consecutive pair", diff_s, parse_s))
    print(row(f"DeepDiff on whole documents ({deep_pairs} pairs, scaled)", deep_scaled, parse_s))
    result(
        f"diff_revisions on {pairs:,} pairs vs orjson.loads of the pages",
        f"{diff_s / parse_s:.2f}x (json: {diff_s / json_s:.2f}x)",
        "<= 1x",
        diff_s <= parse_s,
    )


def hook_lists(entries: int) -> None:
    """`diff_revisions` and the JSON Patch of a hook list of `entries` entries, one matcher
    repeated (so the list is matched by content), reordered or cut in several ways; printed
    beside `orjson.loads` of the two documents. Figures only: no target (a guard that none of
    them grows quadratic: 20,000 entries reversed took 4.7 s of patch before the move budget)."""

    def hook(i: int, command: str) -> dict[str, Any]:
        return {"matcher": f"m{i}", "hooks": [{"type": "command", "command": command}]}

    base = [hook(i, f"/opt/h{i}.sh") for i in range(entries)]
    base[5] = hook(4, "/opt/h5.sh")  # one matcher repeated
    same = [{"matcher": "", "hooks": [{"type": "command", "command": "/opt/x.sh"}]}] * entries
    shapes = {
        "1 edited": (base, [*base[:100], hook(100, "/opt/edited.sh"), *base[101:]]),
        "reversed": (base, base[::-1]),
        "shuffled": (base, random.Random(1).sample(base, entries)),
        "1st moved to end": (base, [*base[1:], base[0]]),
        "all equal, 1 removed": (same, same[1:]),
        "all equal, 1 edited": (same, [*same[:100], hook(0, "/opt/y.sh"), *same[101:]]),
    }
    print(f"hook list of {entries:,} entries, one matcher repeated")
    for name, (a, b) in shapes.items():
        before, after = {"hooks": {"Stop": a}}, {"hooks": {"Stop": b}}
        pages = [orjson.dumps(before), orjson.dumps(after)]
        parse_s, _ = timed(lambda: [orjson.loads(p) for p in pages])  # noqa: B023
        diff_s, _ = timed(lambda: diff_revisions(before, after))  # noqa: B023
        patch_s, _ = timed(lambda: to_json_patch(before, after))  # noqa: B023
        print(row(f"  {name}: orjson.loads x2 (baseline)", parse_s))
        print(row(f"  {name}: diff_revisions", diff_s, parse_s))
        print(row(f"  {name}: to_json_patch", patch_s, parse_s))


def main(argv: list[str] | None = None) -> None:
    """Parse arguments and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--baseline-pairs", type=int, default=200)
    parser.add_argument("--hook-entries", type=int, default=20_000)
    args = parser.parse_args(argv)
    measure(args.revisions, args.baseline_pairs)
    hook_lists(args.hook_entries)


if __name__ == "__main__":
    main()
