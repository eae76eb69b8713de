"""T52 #1: what a policy file makes the reports write for each result is bounded at load.

`defaults: controls:` is added to every rule, and each report writes a rule's controls with
every result: a 400 KB file of 40,000 default controls made `review` write a 4 GB report.html
and exit 0. A rule's tags and controls (defaults added), each tag and control, and its id,
title, description and remediation now have a limit; beyond it the file is refused at the
`file:line:col` of the list or text (exit 2), as for the file limits (bytes, values)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli


def _rule(i: int, extra: str = "") -> str:
    return (
        f"  - {{id: R-{i}, title: t, severity: low, target: settings{extra}, "
        f"assert: {{path: nope{i}, equals: true}}}}\n"
    )


def _controls(prefix: str, n: int) -> str:
    return "[" + ", ".join(f'"{prefix}:{i}"' for i in range(n)) + "]"


def test_review_refuses_defaults_controls_beyond_the_limit_and_writes_no_report(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "ctl.yaml"
    policy.write_text(
        f"defaults:\n  controls: {_controls('X', 2_000)}\nrules:\n"
        + "".join(_rule(i) for i in range(20))
    )
    (tmp_path / "a.yaml").write_text("sandbox:\n  enabled: true\n")
    (tmp_path / "b.yaml").write_text("sandbox:\n  enabled: true\n")
    out = tmp_path / "out"
    argv = [str(tmp_path / "b.yaml"), "--against", str(tmp_path / "a.yaml")]
    code, _, err = run_cli(
        ["review", *argv, "--policy", str(policy), "--out", str(out), "-q"], {}, tmp_path
    )
    assert code == 2, err
    assert (
        f"{policy}:2:13: error: $.defaults.controls: 2000 controls, more than 100, "
        "the limit for one rule"
    ) in err
    assert err.count("error: $") == 1, err  # said once, at `defaults:`, not for each rule
    assert not (out / "report.html").exists()


def test_lint_names_each_list_and_text_beyond_its_limit(tmp_path: Path) -> None:
    long_tag = "b" * 101
    title = "t" * 301
    remedy = "r" * 5_001
    many_tags = "[" + ", ".join(f"t{j}" for j in range(101)) + "]"
    policy = tmp_path / "p.yaml"
    policy.write_text(
        f"defaults:\n  controls: {_controls('X', 60)}\n  tags: [a, {long_tag}]\nrules:\n"
        + _rule(0, f", controls: {_controls('Y', 50)}")
        + _rule(1, f", controls: {_controls('X', 50)}")  # the same 50 as defaults: 60 in all
        + f"  - id: R-2\n    title: {title}\n    severity: low\n    target: settings\n"
        f"    tags: {many_tags}\n    remediation: {remedy}\n"
        "    assert: {path: nope, equals: true}\n"
    )
    code, out, err = run_cli(["policy", "lint", str(policy)], {}, tmp_path)
    assert code == 2, out + err
    lines = [x.split(" (")[0] for x in (out + err).splitlines() if ": error: " in x]
    assert lines == [
        f"{policy}:3:13: error: $.defaults.tags[1]: a tag of 101 characters, more than 100, "
        "the limit for one tag",
        f"{policy}:5:68: error: $.rules[0].controls: 110 controls once those of `defaults:` "
        "are added, more than 100, the limit for one rule",
        f"{policy}:8:12: error: $.rules[2].title: a title of 301 characters, more than 300, "
        "the limit for a rule's title",
        f"{policy}:11:11: error: $.rules[2].tags: 101 tags, more than 100, the limit for one rule",
        f"{policy}:12:18: error: $.rules[2].remediation: a remediation of 5001 characters, "
        "more than 5000, the limit for a rule's remediation",
    ]


def test_the_limits_leave_room_above_the_shipped_packs(tmp_path: Path) -> None:
    from auditor.policy import SHIPPED_POLICY_DIR, load_policies
    from auditor.policy.loader import MAX_LABEL_CHARS, MAX_LABELS, MAX_TEXT_CHARS

    rules = load_policies([SHIPPED_POLICY_DIR]).rules
    assert max(len(r.tags) for r in rules) * 10 <= MAX_LABELS
    assert max(len(r.controls) for r in rules) * 10 <= MAX_LABELS
    assert max(len(x) for r in rules for x in (*r.tags, *r.controls)) * 5 <= MAX_LABEL_CHARS
    for key, limit in MAX_TEXT_CHARS.items():
        assert max(len(getattr(r, key)) for r in rules) * 4 <= limit, key


def test_defaults_make_no_more_labels_than_a_file_could_write_out(tmp_path: Path) -> None:
    """100 default tags and 100 default controls, within the limit for one rule, added to
    each of 600 rules are 120,000: more than a file may hold values (a 40 KB file wrote a
    30 MB report.html)."""
    tags = "[" + ", ".join(f"t{i}" for i in range(100)) + "]"
    policy = tmp_path / "p.yaml"
    policy.write_text(
        f"defaults:\n  controls: {_controls('X', 100)}\n  tags: {tags}\nrules:\n"
        + "".join(_rule(i) for i in range(600))
    )
    code, out, err = run_cli(["policy", "lint", str(policy)], {}, tmp_path)
    assert code == 2, out + err
    assert (
        f"{policy}:1:1: error: $.defaults: 120000 tags and controls in the file's rules once "
        "`defaults:` are added to each, more than 100000, the limit for one file"
    ) in out + err
    policy.write_text(
        f"defaults:\n  controls: {_controls('X', 100)}\n  tags: {tags}\nrules:\n"
        + "".join(_rule(i) for i in range(400))
    )
    code, out, err = run_cli(["policy", "lint", str(policy)], {}, tmp_path)
    assert code == 0, out + err


def test_markers_count_as_what_they_hide_and_cannot_slip_a_long_title_through(
    tmp_path: Path,
) -> None:
    """A marker counts as the text it stands for (an evidence bundle's copy holds them where
    its file held a secret), but as 6 characters at least: 60 markers are a 360-character
    title, beyond the 300 a title may have."""
    policy = tmp_path / "p.yaml"
    title = "[secret fp:0123abcd len:0]" * 60
    policy.write_text(
        f"rules:\n  - {{id: R-1, title: '{title}', severity: low, target: settings, "
        "assert: {path: x, equals: true}}\n"
    )
    code, out, err = run_cli(["policy", "lint", str(policy)], {}, tmp_path)
    assert code == 2, out + err
    assert "a title of 360 characters, more than 300" in out + err
