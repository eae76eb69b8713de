"""A secret typed as a value of `auditor review`'s command line (`--author`, `--sarif-category`)
or in the name of an input file (PROPOSED, `--against`, `--waivers`, `--policy`, `--out`)
reaches no report, no step summary, neither stdout nor stderr, in any form (raw,
JSON-escaped, URL-encoded, base64, Markdown- or HTML-escaped): the command's own token reads
`[token]`, any other value that looks like a secret `<not shown: looks like a secret>`.

Run as a user runs it: `python -m auditor` in a child process, every file it writes read back.
"""

from __future__ import annotations

import base64
import html
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW
from tests.test_report_limits import check_sarif

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TOKEN = "demo-owner-token-7Qx2"  # the command's own (AUDITOR_TOKEN): no detector takes it
GHP = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # a GitHub token's form, not the command's
NOT_SHOWN = "<not shown: looks like a secret>"


def _forms(secret: str) -> set[str]:
    """`secret` as an output could carry it: raw, JSON- and HTML-escaped, URL-encoded, and
    base64 at each of the three byte alignments (its middle, which no neighbour changes)."""
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        html.escape(secret),
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote(secret, safe="").lower(),
        urllib.parse.quote_plus(secret),
    }
    raw = secret.encode()
    for skip in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(raw[skip:]).decode()
            forms.add(text[4 if skip else 0 : -4])
    return forms


def _leaks(text: str, secrets: tuple[str, ...]) -> list[str]:
    """The forms of `secrets` in `text`, also once Markdown's and JSON's backslashes go
    (`ghp\\_…` in report.md)."""
    plain = text.replace("\\", "")
    return [f for s in secrets for f in _forms(s) if f in text or f in plain]


def _review(
    tmp_path: Path, secret: str, env: dict[str, str], category: str | None = None
) -> dict[str, str]:
    """`auditor review` with `secret` as --author and --sarif-category (or `category`) and in
    the name of a folder holding each input file and the report folder; every text it gave
    back or wrote."""
    hidden = tmp_path / "in" / secret
    (hidden / "policies").mkdir(parents=True)
    for name in ("proposed-settings.yaml", "live-settings.yaml", "waivers.yaml"):
        shutil.copy(EXAMPLES / name, hidden / name)
    shutil.copy(ROOT / "policies" / "changes.yaml", hidden / "policies" / "changes.yaml")
    shutil.copy(ROOT / "policies" / "baseline.yaml", hidden / "policies" / "baseline.yaml")
    named = tmp_path / "in" / f"{secret}.yaml"  # the secret as the file's own name
    shutil.copy(EXAMPLES / "proposed-settings.yaml", named)
    out = tmp_path / "reports" / secret
    summary = tmp_path / "step-summary.md"
    argv = [sys.executable, "-m", "auditor", "review", str(named.relative_to(tmp_path))]
    argv += ["--against", str((hidden / "live-settings.yaml").relative_to(tmp_path))]
    argv += ["--waivers", str(hidden / "waivers.yaml"), "--policy", str(hidden / "policies")]
    argv += ["--author", secret, "--sarif-category", category or secret, "--out", str(out)]
    return _outputs(argv, tmp_path, env | {"GITHUB_STEP_SUMMARY": str(summary)}, out)


def _child_env(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
            **env}  # fmt: skip


def _outputs(argv: list[str], tmp_path: Path, env: dict[str, str], out: Path) -> dict[str, str]:
    """`argv` run in a child process in `tmp_path` (exit 1: findings); stdout, stderr, the
    step summary when one is written, and every report in `out`."""
    done = subprocess.run(
        argv,
        cwd=tmp_path,
        env=_child_env(tmp_path, env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr  # the example change introduces findings
    check_sarif(out / "findings.sarif")  # still valid SARIF 2.1.0
    texts = {"stdout": done.stdout, "stderr": done.stderr}
    summary = Path(env.get("GITHUB_STEP_SUMMARY", tmp_path / "no-summary"))
    if summary.exists():
        texts["summary"] = summary.read_text(encoding="utf-8")
    written = sorted(p.name for p in out.iterdir())
    assert written == ["findings.json", "findings.sarif", "junit.xml", "report.html", "report.md"]
    texts |= {name: (out / name).read_text(encoding="utf-8") for name in written}
    return texts


@pytest.mark.parametrize(
    ("secret", "shown"),
    [(TOKEN, "[token]"), (GHP, NOT_SHOWN)],
    ids=["the-command-token", "a-github-token"],
)
def test_a_secret_typed_on_the_command_line_reaches_no_output(
    tmp_path: Path, secret: str, shown: str
) -> None:
    texts = _review(tmp_path, secret, {"AUDITOR_TOKEN": TOKEN})
    leaks = {name: found for name, text in texts.items() if (found := _leaks(text, (secret,)))}
    assert not leaks
    # every format says the same thing in its place
    assert f"proposed by {shown} (--author)" in texts["stdout"]
    assert f"reports: {tmp_path}/reports/{shown}/report.html" in texts["stdout"]
    review = json.loads(texts["findings.json"])["review"]
    assert review["proposed_file"] == f"in/{shown}.yaml"
    assert review["against"] == f"in/{shown}/live-settings.yaml"
    sarif = json.loads(texts["findings.sarif"])["runs"][0]
    assert sarif["automationDetails"]["id"].startswith("not-shown/review-")  # a category's words
    since = [f["since"] for f in json.loads(texts["findings.json"])["findings"] if f["since"]]
    assert {s["author_email"] for s in since if s["revision"] == 1} == {shown}
    # a token is no person's address: the author rule still fails on it
    author_rule = [f for f in json.loads(texts["findings.json"])["findings"]
                   if f["rule_id"] == "CHG-ATH-001"]  # fmt: skip
    assert [f["status"] for f in author_rule] == ["fail"]


def test_ordinary_values_stay_as_written(tmp_path: Path) -> None:
    texts = _review(
        tmp_path, "dev.lead@example.com", {"AUDITOR_TOKEN": TOKEN}, "auditor/acme/review-ci"
    )
    assert "proposed by dev.lead@example.com (--author)" in texts["stdout"]
    review = json.loads(texts["findings.json"])["review"]
    assert review["proposed_file"] == "in/dev.lead@example.com.yaml"
    sarif = json.loads(texts["findings.sarif"])["runs"][0]
    assert sarif["automationDetails"]["id"].startswith("auditor/acme/review-ci/review-")
    assert NOT_SHOWN not in texts["report.md"] and "[token]" not in texts["findings.json"]


def test_the_nightly_run_names_no_secret_it_was_given(tmp_path: Path) -> None:
    """`auditor run` with the command's token in the name of the --policy folder and as
    --sarif-category, and a GitHub token in the names of the --waivers and --out folders;
    then `auditor export` of the same inputs (its parameters, copies and reports)."""
    policies = tmp_path / TOKEN
    policies.mkdir()
    for name in ("baseline.yaml", "changes.yaml"):
        shutil.copy(ROOT / "policies" / name, policies / name)
    (tmp_path / GHP).mkdir()
    shutil.copy(EXAMPLES / "waivers.yaml", tmp_path / GHP / "waivers.yaml")
    out = tmp_path / "reports" / GHP
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=20, repos=2) as emu:
        env: dict[str, str] = {
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_APP_URL": emu.app_url,
            "AUDITOR_TOKEN": TOKEN,
            "AUDITOR_STATE": str(tmp_path / "state.db"),
        }
        argv = [sys.executable, "-m", "auditor", "run", "--no-usage", "--policy", TOKEN]
        argv += ["--waivers", f"{GHP}/waivers.yaml", "--sarif-category", TOKEN]
        texts = _outputs([*argv, "--out", str(out)], tmp_path, env, out)
        bundle = tmp_path / "bundle"
        export = [sys.executable, "-m", "auditor", "export", "--policy", TOKEN, "--waivers"]
        export += [f"{GHP}/waivers.yaml", "--out", str(bundle)]
        done = subprocess.run(export, cwd=tmp_path, env=_child_env(tmp_path, env),
                              capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    texts |= {"export stdout": done.stdout, "export stderr": done.stderr}
    texts |= {
        str(p.relative_to(bundle)): p.read_text(encoding="utf-8", errors="replace")
        for p in bundle.rglob("*")
        if p.is_file()
    }
    leaks = {name: found for name, text in texts.items() if (found := _leaks(text, (TOKEN, GHP)))}
    assert not leaks
    assert f"reports: {tmp_path}/reports/{NOT_SHOWN}/report.html" in texts["stdout"]
    doc = json.loads(texts["findings.json"])
    assert {p["path"] for p in doc["policy_files"]} == {
        "[token]/baseline.yaml",
        "[token]/changes.yaml",
    }
    sarif = json.loads(texts["findings.sarif"])["runs"][0]
    assert sarif["automationDetails"]["id"].startswith("not-shown/")


@pytest.mark.parametrize(
    ("secret", "shown"),
    [(TOKEN, "[token]"), (GHP, NOT_SHOWN)],
    ids=["the-command-token", "a-github-token"],
)
def test_policy_test_names_no_secret_in_a_file_name(
    tmp_path: Path, secret: str, shown: str
) -> None:
    """`auditor policy test` prints one line per case with its test file's name."""
    (tmp_path / secret).mkdir()
    for name in ("changes.yaml", "changes.tests.yaml"):
        shutil.copy(ROOT / "policies" / name, tmp_path / secret / name)
    argv = [sys.executable, "-m", "auditor", "policy", "test", secret]
    done = subprocess.run(argv, cwd=tmp_path, env=_child_env(tmp_path, {"AUDITOR_TOKEN": TOKEN}),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not _leaks(done.stdout + done.stderr, (secret,))
    assert f"PASS {shown}/changes.tests.yaml: " in done.stdout


REMEMBERED = "orange-old-battery-7710-staple"  # an apiKey: caught by its place, not its looks


def test_a_secret_the_state_file_remembers_is_not_quoted_back_from_an_input_file(
    tmp_path: Path,
) -> None:
    """A leaked key a rule checks for, written into a policy with a typo (or into a waiver, a
    proposed file, `--author`), was printed as written in the problem line and the review's
    reports (tester T20), though the state file remembers it as a secret and a valid run's
    reports show its marker: the detectors judge such a line by its looks only, and a key
    caught by its place (an `apiKey`) does not look like one."""
    from auditor.emulator import generate_dataset
    from auditor.emulator.data import USERS

    dataset = generate_dataset(revisions=20, repos=2, now=FIXED_NOW)
    settings = dict(dataset.history[-1]["settings"])
    settings["customModels"] = [
        {"id": "custom:gw", "model": "gpt-4.1", "provider": "openai", "index": 0,
         "baseUrl": "https://llm.acme.example/v1", "apiKey": REMEMBERED, "displayName": "gw"}
    ]  # fmt: skip
    dataset._append(settings, USERS["priya.raman"], dataset._next_time())
    (tmp_path / "policy.yaml").write_text(
        "rules:\n  - id: LEAK-001\n    title: the leaked key is not in use\n    severity: high\n"
        "    target: settings\n    assert: {each: customModels, assert: {path: apiKey, matches:"
        f' "^({REMEMBERED}|other-leaked-key$"}}}}\n'
    )
    (tmp_path / "waivers.yaml").write_text(
        "waivers:\n- rule: BASE-SBX-001\n  subject: settings\n  reason: r\n  owner: o\n"
        f"  expires: {REMEMBERED}\n"
    )
    (tmp_path / "proposed.json").write_text(f'{{"env": {{"{REMEMBERED}": 1, "{REMEMBERED}": 2}}}}')
    with start_emulator(dataset=dataset, tokens={TOKEN: "owner"}, now=FIXED_NOW) as emu:
        env = {"AUDITOR_BASE_URL": emu.base_url, "AUDITOR_TOKEN": TOKEN,
               "AUDITOR_STATE": str(tmp_path / "state.db")}  # fmt: skip
        py = [sys.executable, "-m", "auditor"]

        def run(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*py, *argv], cwd=tmp_path, env=_child_env(tmp_path, env),
                                  capture_output=True, text=True, timeout=300)  # fmt: skip

        assert run("sync", "--no-usage").returncode == 0
        failed = [
            run("run", "--offline", "--policy", "policy.yaml", "--out", "o1"),
            run("run", "--offline", "--waivers", "waivers.yaml", "--out", "o2"),
            run("review", "proposed.json", "--offline", "--out", "o3"),
        ]
        authored = run("review", str(EXAMPLES / "proposed-settings.yaml"), "--offline",
                       "--author", REMEMBERED, "--out", "o4")  # fmt: skip
    for done in failed:
        assert done.returncode == 2, done.stderr
        assert NOT_SHOWN in done.stderr and "Traceback" not in done.stderr
        assert not _leaks(done.stdout + done.stderr, (REMEMBERED,)), done.stderr
    assert authored.returncode == 1, authored.stderr
    texts = [authored.stdout, authored.stderr]
    texts += [p.read_text(encoding="utf-8") for p in (tmp_path / "o4").iterdir()]
    assert not [t for t in texts if _leaks(t, (REMEMBERED,))]
    assert "proposed by [secret fp:" in authored.stdout


@pytest.mark.parametrize("where", ["config", "environment"])
def test_a_config_value_equal_to_the_proxy_password_is_not_quoted(
    tmp_path: Path, where: str
) -> None:
    """A config problem quoting a value equal to the proxy's password printed it (tester
    T32 #5), where the API token in the same place reads `[token]`: the problem is worded
    before the proxy is taken, whether its URL comes from the same file or AUDITOR_PROXY."""
    from tests.conftest import run_cli

    password = "Wd4Rt8Lm2Qz9Xp3V"
    proxy = f"http://ci:{password}@127.0.0.1:9"
    env = {"AUDITOR_TOKEN": TOKEN, "AUDITOR_BASE_URL": "http://127.0.0.1:9",
           "AUDITOR_STATE": str(tmp_path / "s.db")}  # fmt: skip
    lines = [f'timeout = "{password}"']
    if where == "config":
        lines.insert(0, f'proxy = "{proxy}"')
    else:
        env["AUDITOR_PROXY"] = proxy
    (tmp_path / "a.toml").write_text("\n".join(lines) + "\n")
    code, out, err = run_cli(["sync", "--config", "a.toml"], env=env, cwd=tmp_path)
    assert code == 2
    assert "timeout: expected a number, got '[token]'" in err, err
    assert not _leaks(out + err, (password,)), err


@pytest.mark.parametrize(
    ("proxy", "files", "shown"),
    [
        ("http://auditor:S3cr3tPw9x@127.0.0.1:9", {"pyproject.toml": "[tool]\nauditor = 1\n"},
         "pyproject.toml [tool.auditor]: expected a table"),
        ("http://u:expected@127.0.0.1:9", {"a.toml": 'timeout = "abc"\n'},
         "timeout: expected a number, got 'abc'"),
    ],
)  # fmt: skip
def test_a_proxy_credential_that_is_a_plain_word_leaves_the_wording_whole(
    tmp_path: Path, proxy: str, files: dict[str, str], shown: str
) -> None:
    """Reviewer R20 #5: every config problem was scrubbed of the proxy's user name and
    password whatever they were, so a user `auditor` read `[tool.[token]]` and a password
    `expected` read `timeout: [token] a number`: auditor's own words changed, which tells the
    word. A plain word is not looked for (as a proxy password that is a word is not kept as a
    secret)."""
    from tests.conftest import run_cli

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    env = {"AUDITOR_TOKEN": TOKEN, "AUDITOR_BASE_URL": "http://127.0.0.1:9",
           "AUDITOR_STATE": str(tmp_path / "s.db"), "AUDITOR_PROXY": proxy}  # fmt: skip
    argv = ["sync", *(["--config", "a.toml"] if "a.toml" in files else [])]
    code, _, err = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 2
    assert shown in err, err
    assert "[token]" not in err
