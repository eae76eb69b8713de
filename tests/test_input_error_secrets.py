"""A problem of an input file quotes no secret that the same file reveals by its place or by
its looks, though no detector sees it in the problem's line and no state file knows it yet (a
pull request adding a key is the usual case).

- `review` refused a proposed file holding auditor's marker at a JSON path whose key was the
  file's own Bearer credential: `$.mcpAutonomyOverrides.<credential>: holds auditor's marker …`.
- The strict JSON (or YAML) read's `duplicate key `<key>`` quoted a key that is the file's own
  `env` value.
- A waiver's `expires` error quoted its value, the Bearer credential of the same waiver's
  `reason` (or the first 40 characters of a longer one), in `run`, `review` and `export`.

The file's secrets are learned from it (a lenient read where the strict one refused it: each
value of a key written twice kept) and read `<not shown: looks like a secret>`; the problem's
`file:line:col` and wording stay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import emulator_env, run_cli, secret_forms

CREDENTIAL = "Yh6Tr3Kw9Bm2Qx7Lp4Vz"
LONG_CREDENTIAL = CREDENTIAL * 3  # its first 40 characters look like no secret to a detector
NOT_SHOWN = "<not shown: looks like a secret>"
MARKER = "[secret fp:1a2b3c4d len:8]"
LIVE = '{"sandbox": {"enabled": true}}\n'


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files are named as a user types them, from the current folder (`dup.json:1:101:`)."""
    monkeypatch.chdir(tmp_path)


def _leaks(secret: str, *texts: str) -> list[str]:
    return [form for form in secret_forms(secret) for text in texts if form in text]


def _review(tmp_path: Path, proposed: str, text: str, *extra: str) -> tuple[int, str, str]:
    (tmp_path / proposed).write_text(text, encoding="utf-8")
    (tmp_path / "live.json").write_text(LIVE, encoding="utf-8")
    argv = ["review", proposed, "--against", "live.json", "--out", "out", *extra]
    return run_cli(argv, {}, tmp_path)


def _bearer_with_marker_key() -> str:
    settings = {
        "customModels": [{"id": "m", "extraHeaders": {"Authorization": f"Bearer {CREDENTIAL}"}}],
        "mcpAutonomyOverrides": {CREDENTIAL: MARKER},
    }
    return json.dumps(settings) + "\n"


def test_a_marker_refusal_does_not_quote_a_key_that_is_the_files_bearer_credential(
    tmp_path: Path,
) -> None:
    code, out, err = _review(tmp_path, "marker.json", _bearer_with_marker_key())
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert (
        f"marker.json:1:148: error: $.mcpAutonomyOverrides.{NOT_SHOWN}: holds auditor's "
        "marker for a hidden value"
    ) in err


def test_the_same_file_given_as_against_is_refused_without_the_credential(
    tmp_path: Path,
) -> None:
    (tmp_path / "base.json").write_text(_bearer_with_marker_key(), encoding="utf-8")
    (tmp_path / "proposed.json").write_text(LIVE, encoding="utf-8")
    argv = ["review", "proposed.json", "--against", "base.json", "--out", "out"]
    code, out, err = run_cli(argv, {}, tmp_path)
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert f"base.json:1:148: error: $.mcpAutonomyOverrides.{NOT_SHOWN}: holds" in err


@pytest.mark.parametrize(
    ("settings", "where"),
    [
        ({"env": {"GW_KEY": CREDENTIAL}}, "1:101"),
        ({"apiKey": CREDENTIAL}, "1:92"),
    ],
    ids=["env-value", "apiKey"],
)
def test_a_duplicate_json_key_that_is_the_files_secret_is_not_quoted(
    tmp_path: Path, settings: dict[str, Any], where: str
) -> None:
    body = json.dumps(settings)[:-1]
    text = f'{body}, "mcpAutonomyOverrides": {{"{CREDENTIAL}": "low", "{CREDENTIAL}": "high"}}}}\n'
    code, out, err = _review(tmp_path, "dup.json", text)
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert f"dup.json:{where}: error: duplicate key `{NOT_SHOWN}`" in err


def test_a_duplicate_yaml_key_that_is_an_env_value_is_not_quoted(tmp_path: Path) -> None:
    text = f"env:\n  GW_KEY: {CREDENTIAL}\nmcpAutonomyOverrides:\n  {CREDENTIAL}: low\n"
    text += f"  {CREDENTIAL}: high\n"
    code, out, err = _review(tmp_path, "dup.yaml", text)
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert f"dup.yaml:5:3: error: duplicate key `{NOT_SHOWN}`" in err


def test_each_value_of_an_env_key_written_twice_is_learned(tmp_path: Path) -> None:
    first, second = CREDENTIAL, LONG_CREDENTIAL[::-1][:24]
    text = f"env:\n  GW_KEY: {first}\n  GW_KEY: {second}\nm:\n"
    text += f"  {first}: 1\n  {first}: 2\n  {second}: 1\n  {second}: 2\n"
    code, out, err = _review(tmp_path, "dup.yaml", text)
    assert code == 2
    assert not _leaks(first, out, err) and not _leaks(second, out, err), err
    assert "dup.yaml:3:3: error: duplicate key `GW_KEY`" in err
    assert f"dup.yaml:6:3: error: duplicate key `{NOT_SHOWN}`" in err
    assert f"dup.yaml:8:3: error: duplicate key `{NOT_SHOWN}`" in err


def test_a_duplicate_key_before_a_syntax_error_is_not_quoted(tmp_path: Path) -> None:
    # no parser reads the file to its end: what it read before the mistake is learned from
    text = f"env:\n  GW_KEY: {CREDENTIAL}\nm:\n  {CREDENTIAL}: 1\n  {CREDENTIAL}: 2\nx: [\n"
    code, out, err = _review(tmp_path, "syntax.yaml", text)
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert f"syntax.yaml:5:3: error: duplicate key `{NOT_SHOWN}`" in err
    assert "syntax.yaml:7:1: error: invalid YAML: while parsing a flow node" in err


def _waivers(expires: str, credential: str = CREDENTIAL) -> str:
    return (
        "waivers:\n"
        "  - rule: BASE-MOD-003\n"
        "    subject: settings\n"
        f"    reason: \"curl -H 'Authorization: Bearer {credential}' was rotated\"\n"
        "    owner: sec@acme.example\n"
        "    ticket: T-1\n"
        f'    expires: "{expires}"\n'
    )


def _expires_error(file: str, got: str) -> str:
    return (
        f"{file}:7:14: error: $.waivers[0].expires: `expires` must be a calendar date "
        f"YYYY-MM-DD, got '{got}'"
    )


def test_review_does_not_quote_a_waivers_bearer_credential_pasted_as_its_expiry(
    tmp_path: Path,
) -> None:
    (tmp_path / "w.yaml").write_text(_waivers(CREDENTIAL), encoding="utf-8")
    code, out, err = _review(tmp_path, "proposed.json", LIVE, "--waivers", "w.yaml")
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert _expires_error("w.yaml", NOT_SHOWN) in err


def test_run_does_not_quote_the_first_40_characters_of_a_longer_credential(
    tmp_path: Path,
) -> None:
    # cut at 40 characters, no later screen saw the secret whole: its start was shown
    (tmp_path / "w.yaml").write_text(_waivers(LONG_CREDENTIAL, LONG_CREDENTIAL), encoding="utf-8")
    env = {"AUDITOR_STATE": str(tmp_path / "state.db")}
    code, out, err = run_cli(["run", "--offline", "--waivers", "w.yaml"], env, tmp_path)
    assert code == 2
    assert not _leaks(LONG_CREDENTIAL[:40], out, err), err
    assert _expires_error("w.yaml", NOT_SHOWN) in err


def test_a_duplicate_waiver_key_that_is_the_reasons_credential_is_not_quoted(
    tmp_path: Path,
) -> None:
    text = _waivers("2099-01-01") + f"    {CREDENTIAL}: a\n    {CREDENTIAL}: b\n"
    (tmp_path / "w.yaml").write_text(text, encoding="utf-8")
    code, out, err = _review(tmp_path, "proposed.json", LIVE, "--waivers", "w.yaml")
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert f"w.yaml:9:5: error: duplicate key `{NOT_SHOWN}`" in err


def test_an_ordinary_value_is_still_quoted(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(_waivers("end of next quarter"), encoding="utf-8")
    code, _, err = _review(tmp_path, "proposed.json", LIVE, "--waivers", "w.yaml")
    assert code == 2
    assert _expires_error("w.yaml", "end of next quarter") in err
    text = '{"env": {"GW_KEY": "x"}, "a": 1, "a": 2}\n'
    code, _, err = _review(tmp_path, "dup.json", text)
    assert code == 2
    assert "dup.json:1:34: error: duplicate key `a`" in err


def test_a_word_at_a_secret_place_leaves_auditors_wording_whole(tmp_path: Path) -> None:
    # R20 #4: the file's `env` value `auditor` (or `duplicate`) blanked auditor's own words
    # (`holds <not shown: …>'s marker`), which told the value
    text = '{"env": {"GIT_COMMITTER_NAME": "auditor"}, "mcpAutonomyOverrides": {"%s": "low"}}\n'
    code, _, err = _review(tmp_path, "prop.json", text % MARKER)
    assert code == 2
    assert NOT_SHOWN not in err, err
    assert "prop.json:1:69: error: $.mcpAutonomyOverrides['[secret fp:… len:…]']: holds " in err
    assert "holds auditor's marker for a hidden value (`[secret fp:… len:…]`, as reports" in err
    text = '{"env": {"GW_MODE": "duplicate"}, "sandbox": 1, "sandbox": 2}\n'
    code, _, err = _review(tmp_path, "dup.json", text)
    assert code == 2
    assert "dup.json:1:49: error: duplicate key `sandbox`" in err, err


def test_only_what_may_be_a_credential_is_hidden_where_the_line_quotes_the_file(
    tmp_path: Path,
) -> None:
    # a word at a secret place (`NODE_ENV: production`) is quoted as written; a credential
    # is hidden in the key quoted, not in auditor's words around it
    text = f"env:\n  NODE_ENV: production\n  GW_KEY: {CREDENTIAL}\nm:\n  production: 1\n"
    text += f"  production: 2\n  x-{CREDENTIAL}-y: 1\n  x-{CREDENTIAL}-y: 2\n"
    code, out, err = _review(tmp_path, "dup.yaml", text)
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert "dup.yaml:6:3: error: duplicate key `production`" in err
    assert f"dup.yaml:8:3: error: duplicate key `x-{NOT_SHOWN}-y`" in err


def test_no_detector_reads_the_rest_of_a_refused_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # R20 #7: the whole file was redacted (detectors on every value) to hide what a problem
    # quotes: a 15 MB settings file's refusal took 12x the time and memory
    import auditor.redact.redactor as redactor_module
    from auditor.errors import PolicyError
    from auditor.redact.redactor import Redactor
    from auditor.workflows.review import load_settings_file

    read: list[str] = []
    find = redactor_module._find_secrets

    def counted(text: str, shown: bool = False) -> Any:
        read.append(text)
        return find(text, shown)

    monkeypatch.setattr(redactor_module, "_find_secrets", counted)
    notes = [f"note {i}, ask https://wiki.acme.example/p/{i:05d} first" for i in range(300)]
    lines = [f"  N{i}: {note}" for i, note in enumerate(notes)]
    text = "notes:\n" + "\n".join(lines) + f"\nenv:\n  GW_KEY: {CREDENTIAL}\nm:\n"
    text += f"  {CREDENTIAL}: 1\n  {CREDENTIAL}: 2\n"
    (tmp_path / "big.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_settings_file(Path("big.yaml"), Redactor(b"k"))
    assert caught.value.problems == [f"big.yaml:306:3: error: duplicate key `{NOT_SHOWN}`"]
    assert not set(notes) & set(read), len(read)


def test_a_password_of_a_long_argv_hook_command_is_not_quoted(tmp_path: Path) -> None:
    # R22 #5: of an array of more than 64 items only the first and the two before the
    # password were kept: `login` was dropped, `-p` read as no password option, X quoted
    args = ["registry", "login", *(f"--opt{i}" for i in range(70)), "-u", "ci", "-p", CREDENTIAL]
    hook = {"type": "command", "command": ["docker", *args]}
    body = json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}})[:-1]
    text = f'{body}, "mcpAutonomyOverrides": {{"{CREDENTIAL}": "low", "{CREDENTIAL}": "high"}}}}\n'
    code, out, err = _review(tmp_path, "dup.json", text)
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert f"dup.json:1:{text.rindex(CREDENTIAL)}: error: duplicate key `{NOT_SHOWN}`" in err


def test_a_key_sharing_a_prefix_with_thousands_of_values_is_hidden_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # R22 #6: a `sk-live-…` key among 20,000 `sk-live-…` env values: each value was redacted
    # and learned twice (a 14 MB file's refusal: 12-22 s and 1.46 GB). Past `_KEPT_TEXTS`
    # none is: a quoted word that may be a credential reads NOT_SHOWN, a word stays
    from auditor.errors import PolicyError
    from auditor.redact.memory import SecretMemory
    from auditor.redact.redactor import Redactor
    from auditor.redact.shown import own_secrets_hidden
    from auditor.workflows.review import load_settings_file

    learned: list[str] = []
    add = SecretMemory.add

    def counted(self: SecretMemory, value: str) -> bool:
        learned.append(value)
        return add(self, value)

    key = "sk-live-Qw8Er5Ty2Ui9"
    env = {f"VAR_{i}": f"sk-live-{i:04d}{CREDENTIAL}" for i in range(1000)}
    text = json.dumps({"env": env})[:-1] + f', "{key}": 1, "{key}": 2}}\n'
    (tmp_path / "big.json").write_text(text, encoding="utf-8")
    monkeypatch.setattr(SecretMemory, "add", counted)
    with pytest.raises(PolicyError) as caught:
        load_settings_file(Path("big.json"), Redactor(b"k"))
    where = text.rindex(key)
    assert caught.value.problems == [f"big.json:1:{where}: error: duplicate key `{NOT_SHOWN}`"]
    assert learned == []
    lines = [
        f"f.json:1:1: error: `{key} production` is not a valid date/time (x)",
        f"f.json:2:1: error: $.permissions.allow[3]: must be text, got `{key}`",
        f"f.json:3:1: error: $.env.{key}: holds auditor's marker (`{MARKER}`)",
    ]
    shown = own_secrets_hidden(lines, lambda: {"env": env}, "f.json")
    assert shown == [
        f"f.json:1:1: error: `{NOT_SHOWN} production` is not a valid date/time (x)",
        f"f.json:2:1: error: $.permissions.allow[3]: must be text, got `{NOT_SHOWN}`",
        f"f.json:3:1: error: {NOT_SHOWN}: holds auditor's marker (`{MARKER}`)",
    ]
    assert learned == []


def test_each_part_a_line_quotes_of_the_file_is_screened_and_no_other() -> None:
    from auditor.redact.shown import own_secrets_hidden

    # `env` values: a credential, and words a line of auditor's own holds
    data = {"env": {"A": CREDENTIAL, "B": "secret fp", "C": "is not allowed", "D": "subject"}}
    lines = [
        f"f.yaml:1:1: error: $.m['a: {CREDENTIAL}'].b: `x` is not a valid date/time (no)",
        f"f.yaml:2:1: error: YAML anchor &{CREDENTIAL} is not allowed in auditor input files",
        f'f.yaml:3:1: error: $.w[0].expires: must be a date, got "it\'s {CREDENTIAL}"',
        f"f.yaml:4:1: error: duplicate waiver for rule R-1 and subject {CREDENTIAL} (first at x)",
        f"f.yaml:5:1: error: invalid YAML: a token https://h/{CREDENTIAL}/x here",
        "f.yaml:6:1: error: $.m['[secret fp:… len:…]']: holds auditor's marker (subject)",
    ]
    shown = own_secrets_hidden(lines, lambda: data, "f.yaml")
    assert shown == [line.replace(CREDENTIAL, NOT_SHOWN) for line in lines]
    assert shown[5] == lines[5]


@pytest.mark.e2e
def test_export_and_an_offline_review_do_not_quote_it_either(emu: Any, tmp_path: Path) -> None:
    env = emulator_env(emu, tmp_path / "state.db")
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    (tmp_path / "w.yaml").write_text(_waivers(CREDENTIAL), encoding="utf-8")
    code, out, err = run_cli(["export", "--waivers", "w.yaml", "--out", "ev"], env, tmp_path)
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert _expires_error("w.yaml", NOT_SHOWN) in err
    (tmp_path / "marker.json").write_text(_bearer_with_marker_key(), encoding="utf-8")
    argv = ["review", "marker.json", "--offline", "--out", "out"]
    code, out, err = run_cli(argv, env, tmp_path)
    assert code == 2
    assert not _leaks(CREDENTIAL, out, err), err
    assert f"marker.json:1:148: error: $.mcpAutonomyOverrides.{NOT_SHOWN}: holds" in err
