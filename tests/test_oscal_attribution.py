"""findings.oscal.json says who and when, as every other report does (tester T81 #2).

report.md, report.html, findings.json (`since`), SARIF and JUnit give each attributed result
its line, `violating since rev 21 (2026-…) by a@b.c` (a review's: `violating in the proposed
file PATH by a@b.c`); the OSCAL observation of the same result had its rule, status, evidence
and subject, and nothing about the revision or the author. Its description now ends with that
line and its `attribution-revision` and `attribution-author` props give the two apart, an
author the redactor hides hidden there as in the other reports.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli
from test_report_oscal import problems

from auditor.common.escape import md_inline

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: A service account's random id, which the value detectors take for a token (as in
#: test_hidden_author): the redactor hides it wherever the author is named.
HIDDEN = "ZX8qLmN4pR7sT2vW9yB3cD6fG1hJ5kM0@acme.example"


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    """The emulator's 20 revisions, then a 21st by the hidden author that raises the autonomy
    ceiling to `high` (a settings rule fails from it on, and a change rule on its step)."""
    from auditor.emulator import generate_dataset, start_emulator

    data = generate_dataset(revisions=20, repos=2, now=FIXED_NOW)
    last = data.history[-1]
    settings = copy.deepcopy(last["settings"])
    settings["maxAutonomyLevel"] = "high"
    user = {"id": "usr_svc", "email": HIDDEN, "name": "svc"}
    data.history.append(
        {**last, "revision": last["revision"] + 1, "settings": settings, "user": user}
    )
    with start_emulator(dataset=data, tokens={OWNER_TOKEN: "owner"}) as e:
        yield e


def _outputs(folder: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], str]:
    """findings.json's findings, the OSCAL observations by fingerprint (the OSCAL document
    validated) and report.md."""
    doc = json.loads((folder / "findings.oscal.json").read_text(encoding="utf-8"))
    assert problems(doc) == []
    observations = {
        _props(o)["fingerprint"]: o for o in doc["assessment-results"]["results"][0]["observations"]
    }
    findings = json.loads((folder / "findings.json").read_text(encoding="utf-8"))["findings"]
    return findings, observations, (folder / "report.md").read_text(encoding="utf-8")


def _props(observation: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in observation["props"]}


def _check_attributions(folder: Path) -> list[dict[str, Any]]:
    """Every attributed result's observation says what findings.json's `since` says: its
    description ends with the line, its props give the revision (a stored one) and author.
    The failing ones, whose line report.md gives too."""
    findings, observations, md = _outputs(folder)
    failing = []
    for f in findings:
        since, observation = f["since"], observations[f["fingerprint"]]
        props = _props(observation)
        if since is None:
            assert not any(name.startswith("attribution") for name in props), f["rule_id"]
            continue
        assert observation["description"] == f"{f['message']}. {since['text']}"
        assert props.get("attribution-author") == (
            since["author_email"] or since["author_name"] or None
        )
        if " rev " in since["text"]:
            assert props["attribution-revision"] == str(since["revision"])
        else:  # a review's proposal or --against file: no stored revision to name
            assert "attribution-revision" not in props
        if f["status"] == "fail":
            assert f"- {md_inline(since['text'])}\n" in md
            failing.append(f)
    assert failing
    return failing


def test_a_run_s_oscal_says_who_and_when(emu: Any, tmp_path: Path) -> None:
    env = emulator_env(emu, tmp_path / "state.db")
    code, _out, err = run_cli(["run", "--out", "r", "-o", "json,md,oscal"], env, tmp_path)
    assert code == 1, err
    failing = _check_attributions(tmp_path / "r")
    texts = {f["since"]["text"] for f in failing}
    assert any(t.startswith("violating since rev ") and " by " in t for t in texts), texts
    # the 21st revision's author, hidden as in every other report
    assert any(t.startswith("violating since rev 21 ") for t in texts), texts
    assert any(t.startswith("changed in rev 21 ") for t in texts), texts
    for name in ("findings.oscal.json", "findings.json", "report.md"):
        assert HIDDEN not in (tmp_path / "r" / name).read_text(encoding="utf-8")
        assert HIDDEN.split("@")[0] not in (tmp_path / "r" / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("author", ["a@b.c", HIDDEN], ids=["person", "hidden"])
def test_a_review_s_oscal_names_the_proposed_file_and_its_author(
    author: str, tmp_path: Path
) -> None:
    argv = ["review", str(EXAMPLES / "proposed-settings.yaml"), "--against"]
    argv += [str(EXAMPLES / "live-settings.yaml"), "--author", author, "--out", "rv"]
    code, _out, err = run_cli([*argv, "-o", "json,md,oscal", "-q"], {}, tmp_path)
    assert code == 1, err
    failing = _check_attributions(tmp_path / "rv")
    proposed = [
        f
        for f in failing
        if f["subject"]["kind"] == "settings" and "proposed" in f["since"]["text"]
    ]
    assert proposed
    (line,) = {f["since"]["text"] for f in proposed}
    assert line.startswith("violating in the proposed file ")
    assert "proposed-settings.yaml by " in line
    assert line.endswith(f" by {author}") == (author == "a@b.c")
    oscal = (tmp_path / "rv" / "findings.oscal.json").read_text(encoding="utf-8")
    assert line in oscal
    assert HIDDEN.split("@")[0] not in oscal


def test_an_author_email_of_blanks_gives_way_to_the_name_in_every_report() -> None:
    """A service may send an author's email as blanks (the store keeps what it was sent):
    the name is the author then, in the line every report gives and in the OSCAL prop, which
    read `attribution-author: -` and `… by` with nothing after it (review R50 #1)."""
    from dataclasses import replace

    from report_fixture import build_report_data

    from auditor.findings.finding import attribution_text
    from auditor.report.markdown import render_markdown
    from auditor.report.oscal import render_oscal

    data = build_report_data()
    f = next(f for f in data.findings if f.since is not None and f.status == "fail")
    assert f.since is not None
    since = replace(f.since, author_email="   ", author_name="Bob Builder")
    blank = replace(f, since=since)
    one = replace(data, findings=(blank,), resolved=())
    line = attribution_text(blank)
    assert line.endswith(" by Bob Builder"), line
    assert md_inline(line) in render_markdown(one)
    doc = json.loads(render_oscal(one))
    assert problems(doc) == []
    (observation,) = doc["assessment-results"]["results"][0]["observations"]
    props = {p["name"]: p["value"] for p in observation["props"]}
    assert props["attribution-author"] == "Bob Builder"
    assert observation["description"].endswith(line)
    nobody = replace(blank, since=replace(since, author_name=" "))
    line = attribution_text(nobody)
    assert not line.endswith(" by") and " by " not in line, line
    doc = json.loads(render_oscal(replace(one, findings=(nobody,))))
    (observation,) = doc["assessment-results"]["results"][0]["observations"]
    assert "attribution-author" not in {p["name"] for p in observation["props"]}


def test_sync_history_and_diff_name_the_author_when_the_email_is_blanks(tmp_path: Path) -> None:
    """The sync's summary, `history` and `diff` took an email of blanks for the author too
    (`latest rev 21 at … by    ;`): the name, as in every report (review R55 #2)."""
    from auditor.emulator import generate_dataset, start_emulator

    data = generate_dataset(revisions=6, repos=1, now=FIXED_NOW)
    last = data.history[-1]
    data.history[-1] = {**last, "user": {**last["user"], "email": "   ", "name": "Bob Builder"}}
    with start_emulator(dataset=data, tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW) as e:
        env = emulator_env(e, tmp_path / "state.db")
        code, out, err = run_cli(["sync", "--no-usage"], env, tmp_path)
        assert code == 0, err
        assert "latest rev 6 at" in out and " by Bob Builder;" in out, out
        code, out, err = run_cli(["history"], env, tmp_path)
        assert code == 0, err
        assert "Bob Builder" in out, out
        code, out, err = run_cli(["diff", "--from", "5", "--to", "6"], env, tmp_path)
        assert code == 0, err
        assert out.splitlines()[0].endswith(" · Bob Builder"), out
