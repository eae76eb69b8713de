"""A rule's secret literal (a leaked key it compares with an `env` value) written again in the
same rule, inside a longer scalar (a pattern around it, `"old:<key>"`) or as a tag or a
control, reaches no file of `run`'s out folder or of the bundle, in any form (reviewer R28 #2
and #6: the bundle's copy and every bundle report showed it); a result the copy's pattern
judges otherwise is named in `notReproduced`. A selector holding a credential the state file
remembers (`customModels[apiKey=…]`) is copied as the path grammar's quoted selector, so
`export` loads its own copy (R28 #4: exit 2, no bundle) and judges as `run` did. `run
--offline`, `export` and `verify` end to end, against the emulator."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import secret_forms
from tests.test_bundle_fidelity import _run_export_verify as run_export_verify

LEAKED = "orange-leaked-battery-424242-staple"
ROTATED = "fresh-rotated-key-99887766-zebra"
FORMATS = "html,md,json,sarif,junit,oscal"


def _html_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _leaks(tmp_path: Path, secret: str, *streams: str) -> list[str]:
    """Every file of `run`'s out folder and of the bundle, and every stream, holding `secret`
    raw, JSON-escaped, HTML-escaped, URL-encoded or in base64 (`secret_forms`)."""
    forms = {*secret_forms(secret), _html_escaped(secret)}
    texts = {
        str(p): p.read_bytes().decode("utf-8", "replace")
        for folder in ("run", "ev")
        for p in sorted((tmp_path / folder).rglob("*"))
        if p.is_file()
    }
    texts.update({f"stream {n}": s for n, s in enumerate(streams)})
    return [name for name, text in texts.items() if any(form in text for form in forms)]


def _run_export_verify(
    tmp_path: Path, policy: str, edit: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """`test_bundle_fidelity`'s, with `run` writing every format and `export` exiting 0."""
    got = run_export_verify(tmp_path, policy, edit, formats=FORMATS)
    assert got["export"][0] == 0, got["export"]
    return got


def _rotated(settings: dict[str, Any]) -> None:
    settings.setdefault("env", {})["DEPLOY_KEY"] = ROTATED
    settings["sessionDefaultSettings"] = {"model": "claude-sonnet-4-5"}


LONGER = f"""rules:
  - id: DEPLOY-KEY-GONE
    title: the leaked deploy key is nowhere
    severity: high
    target: settings
    assert:
      all:
        - {{path: env.DEPLOY_KEY, not_equals: {LEAKED}}}
        - {{path: sessionDefaultSettings.model, matches: "^({LEAKED}|x)+$"}}
        - {{path: sessionDefaultSettings.model, not_equals: "old:{LEAKED}"}}
        - {{path: sessionDefaultSettings.model, not_matches: '(?i)^(?:{re.escape(LEAKED)})+'}}
"""


def test_a_leaked_key_inside_a_longer_pattern_or_text_of_its_rule_is_nowhere_in_the_bundle(
    tmp_path: Path,
) -> None:
    """R28 #2: `run` hid the key (`expected to match /^([secret fp:… len:35]|x)+$/`), the
    copy kept the pattern and `"old:<key>"` in clear, and all six bundle reports showed it."""
    got = _run_export_verify(tmp_path, LONGER, _rotated)
    assert got["run"][0] == 1, got["run"]  # the model matches no pattern of the key
    assert _leaks(tmp_path, LEAKED, *got["streams"]) == []
    marker = r"\[secret fp:[0-9a-f]{8} len:35\]"
    escaped = r"\\\\\[secret\\\\ fp:[0-9a-f]{8}\\\\ len:35\\\\\]"  # as the YAML string writes it
    assert re.search(rf'matches: "\^\({escaped}\|x\)\+\$"', got["copy"]), got["copy"]
    assert re.search(rf'not_equals: "old:{marker}"', got["copy"]), got["copy"]
    assert re.search(rf'not_matches: "\(\?i\)\^\(\?:{escaped}\)\+"', got["copy"]), got["copy"]
    message = got["bundled_json"]["findings"][0]["message"]
    assert re.search(r"expected to match /\^\(\\\[secret\\ fp:", message), message
    assert got["ran"] == got["bundled"] == {"DEPLOY-KEY-GONE": "fail"}
    assert got["listed"] is None
    assert got["verify"][0] == 0, got["verify"]


DOTTED = "orange.leaked.battery.424242.staple"
FLIPS = f"""rules:
  - id: MODEL-NOT-KEY
    title: the model is not the leaked key
    severity: high
    target: settings
    assert:
      all:
        - {{path: env.DEPLOY_KEY, not_equals: {DOTTED}}}
        - {{path: sessionDefaultSettings.model, not_matches: "^({DOTTED}|x)+$"}}
"""


def test_a_pattern_the_copy_hides_the_key_in_and_that_judges_otherwise_is_named(
    tmp_path: Path,
) -> None:
    """The copy's pattern is the key's marker escaped, which matches only the marker's text:
    its `.` that matched any character in `run` match themselves no more, so the bundle
    passes what `run` fails, and `export` names it (a copy that hides anything is compared)."""

    def edit(settings: dict[str, Any]) -> None:
        _rotated(settings)
        settings["sessionDefaultSettings"] = {"model": DOTTED.replace(".", "-")}

    got = _run_export_verify(tmp_path, FLIPS, edit)
    assert _leaks(tmp_path, DOTTED, *got["streams"]) == []
    assert got["ran"] == {"MODEL-NOT-KEY": "fail"}
    assert got["bundled"] == {"MODEL-NOT-KEY": "pass"}
    assert got["listed"] == [
        {"rule": "MODEL-NOT-KEY", "subject": "settings", "run": "fail", "bundle": "pass"}
    ]
    said = "MODEL-NOT-KEY on settings: fail in the run, pass in the bundle"
    assert said in got["export"][2]
    noted = "MODEL-NOT-KEY on settings: pass in the bundle, fail in the run as manifest.json states"
    assert noted in got["verify"][2]
    assert got["verify"][0] == 0, got["verify"]


LABELS = f"""rules:
  - id: DEPLOY-KEY-ROTATED
    title: the leaked deploy key is gone
    severity: high
    target: settings
    tags: [{LEAKED}, keys]
    controls: ["ACME:{LEAKED}", "SOC2:CC6.1"]
    assert: {{path: env.DEPLOY_KEY, not_equals: {LEAKED}}}
"""


def test_a_leaked_key_written_again_as_its_rules_tag_or_control_is_nowhere(
    tmp_path: Path,
) -> None:
    """R28 #6: the tag and the control kept the key in `run`'s findings.json, in the copy and
    in the bundle's reports (the key rotated: no stored value teaches it as a secret)."""
    got = _run_export_verify(tmp_path, LABELS, _rotated)
    assert got["run"][0] == 0, got["run"]
    assert _leaks(tmp_path, LEAKED, *got["streams"]) == []
    rule = got["ran_json"]["rules"][0]
    assert re.fullmatch(r"\[secret fp:[0-9a-f]{8} len:35\]", rule["tags"][0]), rule
    assert rule["tags"][1] == "keys"
    assert sorted(rule["controls"])[0].startswith("ACME:[secret fp:"), rule
    assert re.search(r'tags: \["\[secret fp:[0-9a-f]{8} len:35\]", keys\]', got["copy"])
    assert re.search(r'"ACME:\[secret_fp:[0-9a-f]{8}_len:35\]", "SOC2:CC6.1"', got["copy"])
    bundled = got["bundled_json"]["rules"][0]
    assert "SOC2:CC6.1" in bundled["controls"], bundled
    assert got["ran"] == got["bundled"] == {"DEPLOY-KEY-ROTATED": "pass"}
    assert got["verify"][0] == 0, got["verify"]


GATEWAY_KEY = "sk-proj-VRhgnIhCZhadyCTrwmdQtXSoJwZ8vhMkDMo6DRhfVYGGPLmA"
SELECTOR = f"""rules:
  - id: GPT-BY-KEY
    title: the model with the known key is the gateway one
    severity: high
    target: settings
    assert: {{path: "customModels[apiKey={GATEWAY_KEY}].id", equals: "custom:acme-gpt"}}
  - id: GPT-BY-QUOTED-KEY
    title: the same, its selector quoted
    severity: high
    target: settings
    assert: {{path: "customModels[apiKey=\\"{GATEWAY_KEY}\\"].baseUrl", starts_with: "https://"}}
"""


def test_a_selector_holding_a_remembered_key_is_copied_quoted_and_export_succeeds(
    tmp_path: Path,
) -> None:
    """R28 #4: the marker (spaces, `]`) written into the selector made the copy an invalid
    path: `export` refused its own copy (exit 2, no bundle) of a policy `run` passes."""

    def edit(settings: dict[str, Any]) -> None:
        settings["customModels"] = [
            {
                "id": "custom:acme-gpt",
                "model": "acme-gpt",
                "provider": "openai",
                "baseUrl": "https://gw.acme.example/v1",
                "apiKey": GATEWAY_KEY,
            }
        ]

    got = _run_export_verify(tmp_path, SELECTOR, edit)
    assert got["run"][0] == 0, got["run"]
    assert _leaks(tmp_path, GATEWAY_KEY, *got["streams"]) == []
    marker = r"\[secret fp:[0-9a-f]{8} len:56\]"
    assert re.search(rf"customModels\[apiKey='{marker}'\]\.id", got["copy"]), got["copy"]
    assert re.search(rf'customModels\[apiKey=\\"{marker}\\"\]\.baseUrl', got["copy"])
    assert got["ran"] == got["bundled"]
    assert got["bundled"] == {"GPT-BY-KEY": "pass", "GPT-BY-QUOTED-KEY": "pass"}
    assert got["listed"] is None
    assert got["verify"][0] == 0, got["verify"]


# -- the copy itself (`redacted_source`), without a run ------------------------------------

KEY = "Zq8hVd2LmX0pRt7Yw3NsKb4T"  # a secret the state file remembers, in no detector's form
KEY_MARKER = f"[secret fp:0badc0de len:{len(KEY)}]"
LEAKED_MARKER = f"[secret fp:1eafc0de len:{len(LEAKED)}]"


def _copy(text: str, tmp_path: Path, rules: dict[str, tuple[str, ...]]) -> tuple[str, Any]:
    """The copy of `text` with `KEY` remembered and each rule's literals (`rules`) hidden,
    and the copy loaded as a policy (a `PolicyError` when it cannot be)."""
    from auditor.policy.loader import load_policies
    from auditor.policy.redacted import redacted_source

    def redact(text: str) -> str:
        return text.replace(KEY, KEY_MARKER)

    def hide(text: str) -> str:
        return text.replace(LEAKED, LEAKED_MARKER)

    copy = redacted_source(text, "p.yaml", redact, {r: (lits, hide) for r, lits in rules.items()})
    (tmp_path / "copy.yaml").write_text(copy)
    return copy, load_policies([tmp_path / "copy.yaml"])


SELECTORS = f"""defaults:
  tags: [{LEAKED}]
  controls: ["ACME:{LEAKED}"]
rules:
  - id: R1
    title: t
    severity: low
    target: settings
    assert:
      all:
        - {{path: env.DEPLOY_KEY, not_equals: {LEAKED}}}
        - {{path: env.OBJECT, equals: {{path: "{LEAKED}"}}, default: "x-{LEAKED}"}}
        - {{path: "customModels[apiKey={KEY}].id", equals: x}}
        - {{path: ["customModels[id='{KEY}'].id", "env.{KEY}"], exists: true}}
        - {{path: env.X, equals: {{ref: "customModels[baseUrl=\\"{KEY}\\"].id"}}}}
        - each: "customModels[apiKey={KEY}].extraHeaders[*]"
          assert: {{path: "@", exists: true}}
  - id: R2
    title: another rule, {LEAKED} as written  # {LEAKED}
    severity: low
    target: settings
    assert: {{path: model, equals: "{LEAKED}"}}
"""


def test_a_path_or_selector_holding_a_secret_is_copied_in_the_quoted_form(
    tmp_path: Path,
) -> None:
    """Each key or `[field=value]` selector value holding a remembered secret is quoted
    (`['<marker>']`, `[apiKey='<marker>']`), in a leaf's path, a list of paths, a `{ref: …}`
    and a quantifier's array alike: the copy loads, and its paths select by the marker."""
    from auditor.policy.pathexpr import Select

    copy, policy = _copy(SELECTORS, tmp_path, {"R1": (LEAKED,)})
    assert KEY not in copy
    assert f"customModels[apiKey='{KEY_MARKER}'].id" in copy
    assert f"customModels[id='{KEY_MARKER}'].id" in copy
    assert f"env['{KEY_MARKER}']" in copy
    assert f'customModels[baseUrl=\\"{KEY_MARKER}\\"].id' in copy
    assert f"customModels[apiKey='{KEY_MARKER}'].extraHeaders[*]" in copy
    leaves = policy.rules[0].condition.children  # type: ignore[attr-defined]
    step = leaves[2].paths[0].steps[1]
    assert step == Select("apiKey", KEY_MARKER, None), step


def test_the_rules_literal_is_hidden_in_defaults_and_comments_and_its_own_rule_alone(
    tmp_path: Path,
) -> None:
    """`defaults:` tags and controls reach every rule's reports, so every rule's literal is
    hidden there (a control as `ACME:[secret_fp:…_len:35]`, which the loader takes), and in
    each comment; another rule's texts and conditions stay as written (`run` shows them as
    written: the literal is learned by nothing)."""
    text = "".join(
        line for line in SELECTORS.splitlines(True) if KEY not in line and '"@"' not in line
    )
    copy, policy = _copy(text, tmp_path, {"R1": (LEAKED,)})
    assert f'tags: ["{LEAKED_MARKER}"]' in copy
    assert 'controls: ["ACME:[secret_fp:1eafc0de_len:35]"]' in copy
    assert f"# {LEAKED_MARKER}" in copy
    # an object literal's `path` is a text of the argument, no path: hidden as the rest
    assert f'equals: {{path: "{LEAKED_MARKER}"}}, default: "x-{LEAKED_MARKER}"' in copy
    assert f"title: another rule, {LEAKED} as written" in copy
    assert f'assert: {{path: model, equals: "{LEAKED}"}}' in copy
    assert policy.rules[1].tags == (LEAKED_MARKER,)


def test_a_title_near_its_limit_naming_a_short_secret_still_makes_a_bundle(
    tmp_path: Path,
) -> None:
    """R29a #3: a 297-character title naming the rule's 6-character leaked PIN (within the
    300 a title may have) became 317 characters in the copy, its marker being 26, and
    `export` refused its own copy (exit 2, no bundle). A marker counts as what it hides."""
    title = ("The short leaked deploy PIN xk7Q2z is no longer configured " + "x" * 300)[:297]
    policy = f"""rules:
  - id: T-TITLE
    title: "{title}"
    severity: high
    target: settings
    assert: {{path: env.DEPLOY_KEY, not_equals: xk7Q2z}}
"""
    got = _run_export_verify(tmp_path, policy, _rotated)
    assert got["run"][0] == 0, got["run"]
    assert "[secret fp:" in got["copy"] and "xk7Q2z" not in got["copy"]
    assert got["ran"] == got["bundled"] == {"T-TITLE": "pass"}
    assert got["verify"][0] == 0, got["verify"]


def test_an_unquoted_time_compared_with_a_secret_place_is_hidden_and_the_bundle_verifies(
    tmp_path: Path,
) -> None:
    """R29a #1: `equals: 2026-01-01T10:00:00Z` (unquoted, as the README shows a time) compared
    with an `env` value: the copy left the literal in clear (it rewrote text scalars alone)
    and the bundle's evaluation hid it under a key of its own, so `verify` failed, always."""
    policy = """rules:
  - id: TOKEN-EXPIRES
    title: the token expires at the start of 2026
    severity: low
    target: settings
    assert: {path: env.TOKEN_EXPIRES, equals: 2026-01-01T10:00:00Z}
"""

    def planted(settings: dict[str, Any]) -> None:
        settings.setdefault("env", {})["TOKEN_EXPIRES"] = "2027-06-30T00:00:00Z"

    got = _run_export_verify(tmp_path, policy, planted)
    assert got["run"][0] == 1, got["run"]
    assert "2026-01-01T10:00:00Z" not in got["copy"]
    assert re.search(r'equals: "\[secret fp:[0-9a-f]{8} len:20\]"', got["copy"]), got["copy"]
    assert _leaks(tmp_path, "2026-01-01T10:00:00Z", *got["streams"]) == []
    assert got["ran"] == got["bundled"] == {"TOKEN-EXPIRES": "fail"}
    assert got["verify"][0] == 0, got["verify"]


OBJECT_FIELDS = f"""rules:
  - id: KEY-GONE
    title: the leaked key is gone
    severity: high
    target: settings
    assert:
      all:
        - {{path: env.DEPLOY_KEY, not_equals: {LEAKED}}}
        - path: gatewayLine
          equals: {{type: command, path: x}}
          default: {{type: file, path: {LEAKED}}}
        - {{path: statusLine, equals: {{ref: {LEAKED}, type: x}}}}
        - {{path: statusLine, not_in: [{{ref: {LEAKED}}}]}}
"""


def _rotated_with_status(settings: dict[str, Any]) -> None:
    _rotated(settings)
    settings["statusLine"] = {"type": "y"}


def test_a_leaked_key_in_a_default_or_object_field_named_like_a_path_is_nowhere(
    tmp_path: Path,
) -> None:
    """R29a #2: a `default:` object's `path` field and an object literal's `ref` field were
    read as policy paths and kept as written in the copy; all six bundle reports showed the
    key `run` hides (`statusLine is {"type":"file","path":"[secret fp:…]"}`). So was a `ref`
    object in a list (R30 #1, `not_in: [{ref: <key>}]`)."""
    got = _run_export_verify(tmp_path, OBJECT_FIELDS, _rotated_with_status)
    assert got["run"][0] == 1, got["run"]
    assert _leaks(tmp_path, LEAKED, *got["streams"]) == []
    assert got["ran"] == got["bundled"] == {"KEY-GONE": "fail"}
    assert got["verify"][0] == 0, got["verify"]


def test_times_in_every_yaml_form_at_secret_places_are_hidden_and_the_bundle_verifies(
    tmp_path: Path,
) -> None:
    """R30 #1: a time YAML reads but ISO 8601 does not (`2001-12-14 21:59:43.10 -5`, which
    the loader reads in ISO form) was missed by the copy, which then refused the whole file
    (exit 2, no bundle) with an ISO time in another rule; a `!!timestamp` tag kept on the
    quoted marker made the copy unloadable."""
    policy = """rules:
  - id: T-ODD
    title: expiry, as YAML writes it
    severity: low
    target: settings
    assert: {path: env.A, equals: 2001-12-14 21:59:43.10 -5}
  - id: T-TAGGED
    title: expiry, tagged
    severity: low
    target: settings
    assert: {path: env.B, equals: !!timestamp 2026-02-02T10:00:00Z}
  - id: T-ISO
    title: expiry, ISO
    severity: low
    target: settings
    assert: {path: env.D, equals: 2026-04-04T04:04:04Z}
"""

    def planted(settings: dict[str, Any]) -> None:
        settings.setdefault("env", {}).update(
            {"A": "2027-06-30T00:00:00Z", "B": "2027-06-30T00:00:00Z", "D": "z"}
        )

    got = _run_export_verify(tmp_path, policy, planted)
    assert got["run"][0] == 1, got["run"]
    assert got["copy"].count("[secret fp:") == 3, got["copy"]
    assert "!!timestamp" not in got["copy"]
    for written in ("2001-12-14 21:59:43.10 -5", "2026-02-02T10:00:00Z", "2026-04-04T04:04:04Z"):
        assert written not in got["copy"]
    assert got["ran"] == got["bundled"] == {"T-ODD": "fail", "T-TAGGED": "fail", "T-ISO": "fail"}
    assert got["verify"][0] == 0, got["verify"]
