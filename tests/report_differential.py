"""Every report's bytes from this tree's writers against another revision's (not a test module).

    python tests/report_differential.py 3dcb099 [--seeds 0:200] [--small 2]

Copies this tree's `auditor` and `tests`, puts `auditor/report` of the given revision in
their place (so only the writers differ), and in a child process per tree writes every report
(html, md, json, sarif, junit, oscal; the `render_*` texts and the PDF's page too) for seeded
random data: the fixture with hostile text in every field (bidi and invisible characters,
NUL, C0/C1 controls, markup, lone surrogates for the ASCII fallback), findings sharing and
not sharing evidence lists (values `True`/`1`/`1.0`/`-0.0`/NaN/containers), shared
attributions over subjects of every kind, controls shared between rules, subject keys with
NUL, non-hex fingerprints, every status and lifecycle. `--small N` sets this tree's writers'
cache limits to N (and the drill-down rows' to 1,000 characters). Prints the seeds and files
that differ; exit 1 when any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

HOSTILE = [
    "\u202e", "\u2066", "\u2069", "\u200b", "\ufeff", "\x00", "\x1b[31m", "\x85", "\x9b", "\x7f",
    "<&>\"'", "`|*_[x](y)", "@x #1", "\u2028", "\u3164", "\ufb01", "e\u0301", "\U0001f600",
    "\r\n x", "\u061c", "\u200e", "\ufffe", "", " ", "-", "a\x00b", "\u2014", "\ue000",
]  # fmt: skip
VALUES: list[Any] = [
    True, 1, 1.0, -0.0, 0.0, float("nan"), None, "1", [1], {"a": True}, "x\x00y", False, 0,
    "True", float("inf"),
]  # fmt: skip
OUTPUTS = ["html", "md", "json", "sarif", "junit", "oscal"]


def _data(seed: int) -> Any:
    from auditor.models import Attribution, Evidence, Subject
    from tests.report_fixture import NOW, build_report_data

    rnd = random.Random(seed)

    def h() -> str:
        return "".join(rnd.choice(HOSTILE) for _ in range(rnd.randint(0, 3)))

    taint = h() + ("\ud800" if rnd.random() < 0.3 else "")
    data = build_report_data(taint, review=rnd.random() < 0.3)
    base = list(data.findings)
    pool = [
        tuple(
            Evidence(
                h() + "$.p",
                rnd.choice(VALUES),
                rnd.choice(VALUES),
                rnd.choice(["==", "in", ""]),
                rnd.random() < 0.8,
                h(),
            )
            for _ in range(rnd.randint(1, 4))
        )
        for _ in range(rnd.randint(1, 6))
    ]
    who = [
        Attribution(rnd.randint(1, 9), NOW - timedelta(days=rnd.randint(0, 3)), h() + "a@b", h())
        for _ in range(4)
    ]
    kinds = ["settings", "change", "usage", "readiness"]
    controls = ["SOC2:CC6.1", "SOC2:CC6.01", "ISO27001:A.5.2", "ISO27001:A.5.15", "SOC2:cc6.1"]
    found = []
    for i in range(rnd.randint(5, 400)):
        f = rnd.choice(base)
        own = tuple(
            Evidence(h(), rnd.choice(VALUES), rnd.choice(VALUES), "==")
            for _ in range(rnd.randint(0, 2))
        )
        kw: dict[str, Any] = {
            "evidence": rnd.choice(pool) if rnd.random() < 0.6 else own,
            "since": rnd.choice([*who, None]),
            "fingerprint": rnd.choice(
                [f"{rnd.getrandbits(128):032x}", f"fp{i}" + h(), f"{i:032X}"]
            ),
            "lifecycle": rnd.choice(["new", "persisting", None, ""]),
            "message": f.message + h(),
        }
        if rnd.random() < 0.5:
            k = rnd.choice(kinds)
            if k != "settings":
                kw["subject"] = Subject(k, h() + f"k{rnd.randint(0, 5)}", h() + "label")
        if rnd.random() < 0.3:
            kw["controls"] = tuple(rnd.sample([*controls, "X:" + h()], rnd.randint(0, 4)))
        if rnd.random() < 0.2:
            kw["subject"] = Subject(rnd.choice(kinds), f"k\x00{h()}{rnd.randint(0, 30)}", h())
        if rnd.random() < 0.3:
            kw["status"] = rnd.choice(
                ["fail", "pass", "error", "unknown", "not_applicable", "waived"]
            )
        found.append(replace(f, **kw))
    return replace(data, findings=(*found, *base[: rnd.randint(0, len(base))]))


def _digests(seed: int, out: Path) -> dict[str, str] | str:
    from auditor.report.pdf import PDF_CAPS

    data = _data(seed)
    try:
        return _write(data, out, PDF_CAPS)
    except ValueError as exc:  # `urlsplit` refuses the fixture's address with `[x]` in it
        return repr(exc)[:200]


def _write(data: Any, out: Path, caps: Any) -> dict[str, str]:
    import auditor.report as report

    texts = {
        "page of report.pdf": report.render_html(data, caps),
        "render_html": report.render_html(data),
        "render_markdown": report.render_markdown(data),
        "render_json": report.render_json(data),
        "render_sarif": report.render_sarif(data),
        "render_junit": report.render_junit(data),
    }
    out_ = {k: v.encode("utf-8", "surrogatepass") for k, v in texts.items()}
    for name, path in report.write_reports(data, out, OUTPUTS).items():
        out_[name] = path.read_bytes()
    return {k: hashlib.sha256(v).hexdigest() for k, v in sorted(out_.items())}


def _child(tree: str, out: str, start: int, stop: int, small: int) -> None:
    sys.path.insert(0, tree)
    if small:
        from auditor.report import html, htmlrows, jsonout, junit, model, sarif

        for module, name in (
            (junit, "CACHE_LIMIT"), (sarif, "CACHE_LIMIT"), (jsonout, "CACHE_LIMIT"),
            (model, "ATTRIBUTION_LIMIT"), (html, "KEYS_LIMIT"), (htmlrows, "CACHE_LIMIT"),
        ):  # fmt: skip
            setattr(module, name, small)
        htmlrows.DRILL_CACHE_CHARS = 1000
    import auditor.report

    assert auditor.report.__file__.startswith(tree), auditor.report.__file__
    print(json.dumps({s: _digests(s, Path(out) / str(s)) for s in range(start, stop)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revision")
    parser.add_argument("--seeds", default="0:100")
    parser.add_argument("--small", type=int, default=0)
    args = parser.parse_args()
    start, stop = (int(x) for x in args.seeds.split(":"))
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        subprocess.run(
            f"git archive HEAD auditor tests | tar -x -C {old} && rm -r {old}/auditor/report && "
            f"git archive {args.revision} auditor/report | tar -x -C {old}",
            shell=True, check=True, cwd=here,
        )  # fmt: skip
        runs = {}
        for name, tree, small in (("old", old, 0), ("new", here, args.small)):
            env = dict(os.environ, PYTHONPATH=str(tree))
            child = (
                f"import runpy; m = runpy.run_path({__file__!r}, run_name='child'); "
                f"m['_child']({str(tree)!r}, {str(Path(tmp) / name)!r}, {start}, {stop}, {small})"
            )
            done = subprocess.run(
                [sys.executable, "-c", child], env=env, capture_output=True, text=True, cwd=tmp
            )
            if done.returncode:
                print(done.stderr[-3000:])
                return 2
            runs[name] = json.loads(done.stdout.strip().splitlines()[-1])
    differ = 0
    for seed, old_files in runs["old"].items():
        new_files = runs["new"][seed]
        if isinstance(old_files, str) or isinstance(new_files, str):
            if old_files != new_files:
                differ += 1
                print(f"seed {seed}: {old_files} | {new_files}")
            continue
        for name, digest in old_files.items():
            if new_files.get(name) != digest:
                differ += 1
                print(f"seed {seed}: {name} differs")
    print(f"{len(runs['old'])} seeds, {differ} differing outputs")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
