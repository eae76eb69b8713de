"""The README's policy-language example and its test-case examples, run as a user would (each
block saved under the name its first line gives, `auditor policy test` as the README says):
tester T23 found BASE-SBX-001's `when: managedComputersEnabled` made the `sandbox off is
caught` case `not_applicable`, not `fail`; tester T91 that the change and readiness cases
ran nowhere (unknown rule ids beside the example, the example's `when` case failing among
the shipped packs), as only this test put the packs beside the example.
And the README's way to write a rule that passes on an absent array does (T23: it said `none:`
over an absent array passes, which follows `on_missing`)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.test_policy_cli import run

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
FLAT = " ".join(README.split())  # (a quoted output may be wrapped across lines)


def _block(after: str) -> str:
    """The first ```yaml block after the line `after` of the README."""
    start = README.index(after)
    found = re.compile(r"^```yaml\n(.*?)^```$", re.S | re.M).search(README, start)
    assert found is not None
    return found[1]


def _printed(out: str) -> list[str]:
    """The lines of `policy test`'s output the README quotes (`PASS …`, `2 passed, …`)."""
    return [line for line in out.splitlines() if line.startswith(("PASS", "FAIL"))]


def test_the_language_example_passes_its_test_case_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`example.yaml` and `example.tests.yaml` alone in a folder, as the README has them."""
    monkeypatch.chdir(tmp_path)  # (files named as typed)
    rule = _block("## The policy language")
    cases = _block("The cases of the example rule above")
    assert "id: BASE-SBX-001" in rule and "BASE-SBX-001:" in cases
    first = cases.splitlines()[0]
    assert first == "# example.tests.yaml, beside example.yaml", first
    (tmp_path / "example.yaml").write_text(rule)
    (tmp_path / "example.tests.yaml").write_text(cases)
    code, out, err = run(tmp_path, "test", "example.yaml")
    assert code == 0, out + err
    assert len(_printed(out)) == cases.count("- name:") == 2
    for line in [*_printed(out), out.splitlines()[-1]]:  # the lines the README quotes
        assert f"`{line}`" in FLAT, line
    assert "`auditor policy test example.yaml` prints" in FLAT


def test_the_change_and_readiness_cases_pass_in_a_copy_of_the_shipped_packs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cases = _block("so the cases of a change rule and a")
    first = cases.splitlines()[0]
    assert first == "# more.tests.yaml, in a copy of the shipped packs: cp -r policies my-policies"
    shutil.copytree(ROOT / "policies", tmp_path / "my-policies")
    (tmp_path / "my-policies" / "more.tests.yaml").write_text(cases)
    code, out, err = run(tmp_path, "test", "my-policies")
    assert code == 0, out + err
    mine = [line for line in _printed(out) if "more.tests.yaml" in line]
    assert len(mine) == cases.count("- name:") == 2
    assert f"`{mine[0]}" in FLAT  # `PASS my-policies/more.tests.yaml: autonomy raised`, …
    assert "`auditor policy test my-policies` runs them" in FLAT


def test_the_readme_way_to_pass_on_an_absent_array_passes(tmp_path: Path) -> None:
    idiom = "any: [{path: hooks.PreCompact, exists: false}, {none: hooks.PreCompact, assert: …}]"
    assert idiom in " ".join(README.split()), "the README's idiom has changed"
    inner = "{some: hooks, assert: {path: command, matches: curl}}"
    (tmp_path / "p.yaml").write_text(
        "defaults: {on_missing: fail, severity: high, target: settings}\n"
        "rules:\n"
        f"  - {{id: N-1, title: t, assert: {{none: hooks.PreCompact, assert: {inner}}}}}\n"
        f"  - {{id: N-2, title: t, assert: {{{idiom.replace('…', inner)}}}}}\n"
        "  - id: N-3\n    title: t\n    when: {path: hooks.PreCompact, exists: true}\n"
        f"    assert: {{none: hooks.PreCompact, assert: {inner}}}\n"
    )
    (tmp_path / "p.tests.yaml").write_text(
        "tests:\n"
        "  - {name: absent, settings: {hooks: {Stop: []}},"
        " expect: {N-1: fail, N-2: pass, N-3: not_applicable}}\n"
        "  - {name: caught, settings: {hooks: {PreCompact: [{hooks: [{command: curl x}]}]}},"
        " expect: {N-1: fail, N-2: fail, N-3: fail}}\n"
        "  - {name: clean, settings: {hooks: {PreCompact: [{hooks: [{command: ls}]}]}},"
        " expect: {N-1: pass, N-2: pass, N-3: pass}}\n"
    )
    code, out, err = run(tmp_path, "test", str(tmp_path / "p.yaml"))
    assert code == 0, out + err
