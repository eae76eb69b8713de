"""The reports of real runs through the real validators: the Nu HTML checker, Microsoft's
`sarif-multitool validate`, the OASIS SARIF 2.1.0 schema, the JUnit XSD and a Markdown parse.

The runs are the ones users make, through the CLI against the emulator over HTTP: the demo,
an `--all-revisions` run over a longer history (more results than GitHub's cap, waivers in
force and listed with `--sarif-include-waived`), and a review of the example proposed file.
`.ci/run` installs the validators (Java from Debian, `vnu-jar` and `@microsoft/sarif-multitool`
from npm into `.ci/tools`). A missing validator fails the test when CI=true; locally it skips,
saying how to install it.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import xmlschema
from markdown_it import MarkdownIt
from markdown_it.token import Token

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from auditor.report import identity
from auditor.report.sarif import MAX_RESULTS
from tests.conftest import FIXED_NOW, OWNER_TOKEN

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = Path(__file__).parent / "schemas"
EXAMPLES = REPO / "examples"
NODE_MODULES = REPO / ".ci" / "tools" / "node_modules"
VNU_JAR = NODE_MODULES / "vnu-jar" / "build" / "dist" / "vnu.jar"
MULTITOOL = NODE_MODULES / ".bin" / "sarif-multitool"
INSTALL = (
    "install them with `apt-get install default-jre-headless` and "
    "`npm install --prefix .ci/tools vnu-jar @microsoft/sarif-multitool` (as .ci/run does)"
)
#: Revisions the emulator serves for the --all-revisions run: enough for more than
#: MAX_RESULTS results (about 15 per revision), so the cap is exercised on a real run.
ALL_REVISIONS_HISTORY = 400
#: A waiver of a rule the emulator's settings fail, so the run has a waived finding.
WAIVER = """waivers:
  - rule: BASE-CMD-001
    subject: settings
    reason: Recursive deletion is blocked by the sandbox image until the block list migrates.
    owner: platform-security@example.com
    expires: 2027-06-30
    ticket: SEC-2001
"""
#: The same waiver, expired before the run: the finding it waived counts again.
EXPIRED_WAIVER = WAIVER.replace("expires: 2027-06-30", "expires: 2026-10-15")
RUNS = ("demo", "all-revisions", "waived", "expired", "review")


@dataclass(frozen=True)
class Outputs:
    """Report folders of the runs, by name, and what each command exited with."""

    folders: dict[str, Path]
    codes: dict[str, int]


def _cli(argv: list[str], env: dict[str, str], cwd: Path, minutes: int) -> int:
    now = FIXED_NOW + timedelta(minutes=minutes)  # each run its own run id
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: now, cwd=str(cwd))
    code = main(argv, ctx)
    assert code in (0, 1), f"auditor {' '.join(argv)} exited {code}: {err.getvalue()}"
    return code


@pytest.fixture(scope="session")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outputs]:
    """The demo; over a longer history an --all-revisions run (over the SARIF cap) and a run
    with waivers listed in SARIF; a review of the example proposed file. Each through the CLI."""
    root = tmp_path_factory.mktemp("validated")
    folders = {name: root / name for name in RUNS}
    codes = {"demo": _cli(["demo", "--out", str(folders["demo"])], {}, root, 0)}
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=ALL_REVISIONS_HISTORY
    ) as emu:
        env = {
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_APP_URL": emu.app_url,
            "AUDITOR_TOKEN": OWNER_TOKEN,
            "AUDITOR_STATE": str(root / "state.db"),
        }
        argv = ["run", "--all-revisions", "--waivers", str(EXAMPLES / "waivers.yaml")]
        argv += ["--sarif-include-waived", "--out", str(folders["all-revisions"])]
        codes["all-revisions"] = _cli(argv, env, root, 1)
        waivers = root / "waivers.yaml"
        waivers.write_text(WAIVER, encoding="utf-8")
        argv = ["run", "--offline", "--waivers", str(waivers), "--sarif-include-waived"]
        argv += ["--out", str(folders["waived"])]
        codes["waived"] = _cli(argv, env, root, 2)
        expired = root / "expired.yaml"
        expired.write_text(EXPIRED_WAIVER, encoding="utf-8")
        argv = ["run", "--offline", "--waivers", str(expired), "--out", str(folders["expired"])]
        codes["expired"] = _cli(argv, env, root, 4)
    argv = ["review", str(EXAMPLES / "proposed-settings.yaml")]
    argv += ["--against", str(EXAMPLES / "live-settings.yaml"), "--out", str(folders["review"])]
    codes["review"] = _cli(argv, {"AUDITOR_STATE": str(root / "review.db")}, root, 3)
    yield Outputs(folders, codes)


def _need(path: Path | None, what: str) -> str:
    """The validator's path; a loud failure in CI when it is missing, a skip locally."""
    if path is not None and path.exists():
        return str(path)
    message = f"{what} is not installed: {INSTALL}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"VALIDATOR MISSING IN CI: {message}")
    pytest.skip(message)


def _java() -> str:
    found = shutil.which("java")
    return _need(Path(found) if found else None, "Java (for the Nu HTML checker)")


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_run_wrote_all_five_reports(outputs: Outputs) -> None:
    expected = {"report.html", "report.md", "findings.json", "findings.sarif", "junit.xml"}
    for name, folder in outputs.folders.items():
        assert {p.name for p in folder.iterdir()} == expected, name
    assert outputs.codes["all-revisions"] == 1  # the history has failures: a real run


def test_html_passes_the_nu_html_checker(outputs: Outputs) -> None:
    java, jar = _java(), _need(VNU_JAR, "vnu-jar (the Nu HTML checker)")
    pages = [str(outputs.folders[name] / "report.html") for name in RUNS]
    done = subprocess.run(
        [java, "-jar", jar, "--errors-only", *pages],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def _multitool_problems(sarif: Path, work: Path) -> list[str]:
    """`sarif-multitool validate` errors and warnings (it exits 0 even when it finds some)."""
    out = work / f"{sarif.parent.name}-validation.sarif"
    tool = _need(MULTITOOL, "@microsoft/sarif-multitool")
    done = subprocess.run(
        [tool, "validate", "--output", str(out), str(sarif)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1"},
    )
    assert done.returncode == 0 and out.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    run = _load(out)["runs"][0]
    rules = run["tool"]["driver"].get("rules", [])
    problems = []
    for r in run["results"]:
        rule = rules[r["ruleIndex"]] if "ruleIndex" in r else {}
        level = r.get("level", rule.get("defaultConfiguration", {}).get("level", "warning"))
        if level in ("error", "warning"):
            where = r["locations"][0]["physicalLocation"]["region"]["startLine"]
            problems.append(f"{level} {r['ruleId']} line {where}: {r['message']}")
    return problems


@pytest.mark.parametrize("name", RUNS)
def test_sarif_passes_sarif_multitool_validate(outputs: Outputs, name: str, tmp_path: Path) -> None:
    problems = _multitool_problems(outputs.folders[name] / "findings.sarif", tmp_path)
    if identity.project_home() is None:
        # The one recommendation left while pyproject.toml declares no home page: SARIF makes
        # `informationUri` optional, and a made-up address would be worse than none.
        problems = [p for p in problems if not _NO_INFORMATION_URI.match(p)]
    assert problems == []


_NO_INFORMATION_URI = re.compile(r"warning SARIF2005 line \d+: .*Warning_ProvideToolnformationUri")


def test_multitool_check_catches_what_github_rejected(outputs: Outputs, tmp_path: Path) -> None:
    # the demo's SARIF as it was: a tag listed twice, a rule's name equal to its id
    log = _load(outputs.folders["demo"] / "findings.sarif")
    rule = log["runs"][0]["tool"]["driver"]["rules"][0]
    rule["name"] = rule["id"]
    rule["properties"]["tags"].append("security")
    broken = tmp_path / "broken" / "findings.sarif"
    broken.parent.mkdir()
    broken.write_text(json.dumps(log, indent=2), encoding="utf-8")
    problems = _multitool_problems(broken, tmp_path)
    assert any(p.startswith("error JSON1020") for p in problems), problems  # not unique
    assert any(p.startswith("warning SARIF1001") for p in problems), problems  # name == id


@pytest.mark.parametrize("name", RUNS)
def test_sarif_validates_against_the_oasis_schema(outputs: Outputs, name: str) -> None:
    schema = _load(SCHEMAS / "sarif-schema-2.1.0.json")
    log = _load(outputs.folders[name] / "findings.sarif")
    errors = [e.message for e in jsonschema.Draft4Validator(schema).iter_errors(log)]
    assert errors == []
    assert log["runs"][0]["results"], "a run with results, so the check checks something"


def test_all_revisions_sarif_is_capped_and_says_where_the_rest_are(outputs: Outputs) -> None:
    folder = outputs.folders["all-revisions"]
    run = _load(folder / "findings.sarif")["runs"][0]
    findings = _load(folder / "findings.json")["findings"]
    tracked = [f for f in findings if f["status"] in ("fail", "error", "unknown", "waived")]
    assert len(tracked) > MAX_RESULTS  # the real history is over the cap
    assert len(run["results"]) == MAX_RESULTS
    left_out = len(tracked) - MAX_RESULTS
    note = run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
    assert f"lists {MAX_RESULTS:,} of {len(tracked):,} results" in note
    assert f"{left_out:,} of lowest severity were left out" in note and "findings.json" in note
    kept = {r["properties"]["severity"] for r in run["results"]}
    assert "low" not in kept  # the worst are kept: medium findings fill the last places


def test_waived_findings_are_suppressed_results_only_when_asked(outputs: Outputs) -> None:
    run = _load(outputs.folders["waived"] / "findings.sarif")["runs"][0]
    waived = [r for r in run["results"] if r["properties"]["status"] == "waived"]
    assert [r["ruleId"] for r in waived] == ["BASE-CMD-001"]
    assert "SEC-2001" in waived[0]["suppressions"][0]["justification"]
    demo = _load(outputs.folders["demo"] / "findings.sarif")["runs"][0]["results"]
    assert "BASE-CMD-001" in {r["ruleId"] for r in demo}  # not waived there: an open result
    assert all(r["properties"]["status"] == "waived" for r in run["results"] if "suppressions" in r)


def test_a_finding_whose_waiver_expired_says_so_in_sarif_and_junit(outputs: Outputs) -> None:
    """It counts again: the SARIF result has a `waiverExpired` property and says why in its
    message, and the JUnit failure's message starts with it (report.html and report.md list
    the expired waiver too); the other results say nothing of it."""
    folder = outputs.folders["expired"]
    results = _load(folder / "findings.sarif")["runs"][0]["results"]
    expired = [r for r in results if "waiverExpired" in r["properties"]]
    assert [r["ruleId"] for r in expired] == ["BASE-CMD-001"]
    assert expired[0]["properties"]["waiverExpired"] == "2026-10-15"
    assert expired[0]["properties"]["status"] == "fail"
    said = re.escape("Waiver expired on 2026-10-15 (owner platform-security@example.com, SEC-2001)")
    assert re.search(said, expired[0]["message"]["text"])
    assert sum("Waiver expired" in r["message"]["text"] for r in results) == 1
    junit = xmlschema.XMLResource(str(folder / "junit.xml")).root
    failures = junit.findall(".//testcase[@classname='BASE-CMD-001']/failure")
    assert failures and all(re.match(said, f.get("message")) for f in failures)
    assert all(re.search(said, f.text or "") for f in failures)
    others = junit.findall(".//testcase/failure")
    assert sum("Waiver expired" in (f.get("message") or "") for f in others) == len(failures)
    assert "expired (no longer waiving)" in (folder / "report.md").read_text()


def test_demo_sarif_leaves_waived_out_and_names_rules_readably(outputs: Outputs) -> None:
    run = _load(outputs.folders["demo"] / "findings.sarif")["runs"][0]
    assert run["automationDetails"]["id"].startswith("auditor/127.0.0.1/run/")
    assert not any(r.get("suppressions") for r in run["results"])
    for rule in run["tool"]["driver"]["rules"]:
        assert rule["name"] != rule["id"]
        assert len(rule["properties"]["tags"]) == len(set(rule["properties"]["tags"]))


@pytest.mark.parametrize("name", RUNS)
def test_junit_validates_against_the_xsd(outputs: Outputs, name: str) -> None:
    xsd = xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))
    errors = [str(e) for e in xsd.iter_errors(str(outputs.folders[name] / "junit.xml"))]
    assert errors == []


_CELL_SEP = re.compile(r"(?<!\\)\|")


def _table_problems(tokens: list[Token], lines: list[str]) -> list[str]:
    """Pipe lines that did not parse as a table row, and rows whose cell count differs."""
    in_tables: set[int] = set()
    problems = []
    for tok in tokens:
        if tok.type != "table_open" or tok.map is None:
            continue
        rows = range(*tok.map)
        in_tables.update(rows)
        # markdown-it pads or drops cells to the header's count; GFM readers differ: count them
        widths = {len(_CELL_SEP.findall(lines[n].strip().strip("|"))) + 1 for n in rows}
        if len(widths) != 1:
            problems.append(f"table at line {tok.map[0] + 1}: rows of {sorted(widths)} cells")
    fenced = _fenced_lines(tokens)
    for n, line in enumerate(lines):
        if line.startswith("|") and n not in in_tables and n not in fenced:
            problems.append(f"line {n + 1} looks like a table row but is not in a table")
    return problems


def _fenced_lines(tokens: list[Token]) -> set[int]:
    return {n for t in tokens if t.type in ("fence", "code_block") and t.map for n in range(*t.map)}


_TAG = re.compile(r"<(/?)(details|summary)\b[^>]*>", re.IGNORECASE)


def _details_problems(tokens: list[Token]) -> list[str]:
    """`<details>` blocks balanced, each opening with a `<summary>`, and no Markdown swallowed
    into a raw HTML block (CommonMark ends an HTML block only at a blank line)."""
    problems, stack = [], []
    for tok in tokens:
        if tok.type != "html_block":
            continue
        where = f"line {tok.map[0] + 1}" if tok.map else "?"
        for m in _TAG.finditer(tok.content):
            closing, tag = m.group(1) == "/", m.group(2).lower()
            if not closing:
                stack.append(tag)
            elif not stack or stack.pop() != tag:
                problems.append(f"{where}: </{tag}> closes nothing open")
        if re.search(r"<details\b[^>]*>(?!\s*<summary)", tok.content, re.IGNORECASE):
            problems.append(f"{where}: <details> without a <summary> first")
        if not _TAG.search(tok.content):
            continue  # a comment or other HTML: not a details block
        rest = re.sub(r"<summary\b.*?</summary>", "", tok.content, flags=re.I | re.S)
        if _TAG.sub("", rest).strip():
            problems.append(f"{where}: Markdown inside a raw HTML block: {rest.strip()[:80]!r}")
    return problems + [f"<{tag}> never closed" for tag in stack]


@pytest.mark.parametrize("name", RUNS)
def test_markdown_tables_and_details_blocks_are_well_formed(outputs: Outputs, name: str) -> None:
    text = (outputs.folders[name] / "report.md").read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(text)
    assert any(t.type == "table_open" for t in tokens)
    assert any(t.type == "html_block" and "<details" in t.content for t in tokens)
    lines = text.splitlines()
    assert _table_problems(tokens, lines) + _details_problems(tokens) == []


@pytest.mark.parametrize(
    ("markdown", "problem"),
    [
        ("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", "rows of"),
        ("text\n| a | b |\n", "not in a table"),
        ("<details><summary>x</summary>\n- swallowed\n\n</details>\n", "Markdown inside"),
        ("<details><summary>x</summary>\n\nbody\n", "never closed"),
        ("<details>\n\nbody\n\n</details>\n", "without a <summary>"),
    ],
    ids=["ragged-row", "stray-pipe-line", "no-blank-line", "unclosed", "no-summary"],
)
def test_markdown_checks_catch_malformed_reports(markdown: str, problem: str) -> None:
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(markdown)
    found = _table_problems(tokens, markdown.splitlines()) + _details_problems(tokens)
    assert any(problem in p for p in found), found
