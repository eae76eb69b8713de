"""The README's policy-language example and its test-case example, used together verbatim,
agree (`auditor policy test` passes): tester T23 found BASE-SBX-001's `when:
managedComputersEnabled` made the `sandbox off is caught` case `not_applicable`, not `fail`.
And the README's way to write a rule that passes on an absent array does (T23: it said `none:`
over an absent array passes, which follows `on_missing`)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.test_policy_cli import run

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _block(after: str) -> str:
    """The first ```yaml block after the line `after` of the README."""
    start = README.index(after)
    found = re.compile(r"^```yaml\n(.*?)^```$", re.S | re.M).search(README, start)
    assert found is not None
    return found[1]


def test_the_language_example_passes_its_test_case_example(tmp_path: Path) -> None:
    rule = _block("## The policy language")
    cases = _block("Test cases live beside a policy file")
    assert "id: BASE-SBX-001" in rule and "BASE-SBX-001:" in cases
    # the test example's other cases name shipped rules: their packs beside the example
    (tmp_path / "example.yaml").write_text(rule)
    (tmp_path / "example.tests.yaml").write_text(cases)
    for pack in ("changes.yaml", "readiness.yaml"):
        shutil.copy(ROOT / "policies" / pack, tmp_path / pack)
    code, out, err = run(tmp_path, "test", str(tmp_path))
    assert code == 0, out + err
    assert out.count("PASS") == cases.count("- name:") >= 2


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
