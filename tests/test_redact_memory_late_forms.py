"""Secrets by memory in forms a tester found shown (t71): written with escapes no encoder
writes (`%2D`, every character `%XX` or `\\u00XX`) in a string redacted before the secret was
learned; base64 URL-encoded (`UGE1NXdvcmQ%2BMjAyNiE%3D`, base64 in a query string); the
base64 of a secret of 6 to 8 characters (`U3VtbWVyMjY=`)."""

from __future__ import annotations

import base64
import copy
import json
import re
import urllib.parse
from pathlib import Path

import pytest

from auditor.redact import Redactor
from tests.conftest import FIXED_NOW, emulator_env, run_cli

KEY = b"k" * 32
TOKEN = "tok-0123456789abcdef0123456789abcdef"
LONG = "orange-leaked-battery-424242-staple"
B64_SECRETS = ["Pa55word>2026!", "Tr0ub4dor&3?Horse~"]  # their base64 holds a `+` or a `/`
SHORT = ["Xq7#kP", "Zr8!mQ2", "Zr8!mQ2w", "Summer26"]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _pct_all(text: str) -> str:
    return "".join(f"%{b:02X}" for b in text.encode())


def _u_all(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


ESCAPED = {
    "%2D": lambda s: "curl https://h.example/?s=" + s.replace("-", "%2D"),
    "%XX": _pct_all,
    "\\u": _u_all,
}


def _hidden(out: str, shown: str) -> bool:
    return shown not in out and "[secret fp:" in out


# -- escaped forms in a string redacted before the secret was learned -------------------------


@pytest.mark.parametrize("form", ESCAPED)
def test_an_escaped_form_before_the_key_in_the_same_item_is_hidden(form: str) -> None:
    written = ESCAPED[form](LONG)
    r = Redactor(KEY)
    out = r.redact_json({"commandAllowlist": [written], "customModels": [{"apiKey": LONG}]})
    assert _hidden(out["commandAllowlist"][0], written), out


@pytest.mark.parametrize("form", ESCAPED)
def test_an_escaped_form_in_an_earlier_document_is_hidden_in_the_next(form: str) -> None:
    written = ESCAPED[form](LONG)
    r = Redactor(KEY)
    first = {"commandAllowlist": [written]}
    assert r.redact_json(first, "settings") == first  # not a secret yet
    out = r.redact_json({**first, "customModels": [{"apiKey": LONG}]}, "settings")
    assert _hidden(out["commandAllowlist"][0], written), out
    assert LONG in r.stale_secrets()  # the first copy, maybe stored, is scrubbed


@pytest.mark.parametrize("before", [" ", "x ", "key: "])
def test_base64_of_a_late_secret_not_at_its_first_byte_is_hidden(before: str) -> None:
    written = "echo " + _b64(before + "Vq3nT8pLwZ") + " | base64 -d"
    r = Redactor(KEY)
    out = r.redact_json({"commandAllowlist": [written], "customModels": [{"apiKey": "Vq3nT8pLwZ"}]})
    assert _hidden(out["commandAllowlist"][0], _b64(before + "Vq3nT8pLwZ").rstrip("=")), out


# -- base64 behind a JSON escape (`\/` as PHP writes it, `\u002B` as .NET does) -------------


def _b64_json(secret: str) -> list[str]:
    b64 = _b64(secret)
    return [
        "curl -d {k:" + b64.replace("/", "\\/") + "}",
        "curl -d {k:" + b64.replace("+", "\\u002b").replace("/", "\\u002F") + "}",
    ]


@pytest.mark.parametrize("secret", B64_SECRETS)
def test_json_escaped_base64_before_the_key_or_in_an_earlier_document_is_hidden(
    secret: str,
) -> None:
    """Review R44 #1: the late check reads the item's JSON, where the string's own escapes
    are escaped once more, and the base64 run stayed broken: kept in clear."""
    for written in _b64_json(secret):
        r = Redactor(KEY)
        out = r.redact_json({"commandAllowlist": [written], "customModels": [{"apiKey": secret}]})
        assert _hidden(out["commandAllowlist"][0], written), (written, out)
        r = Redactor(KEY)
        assert r.redact_json({"commandAllowlist": [written]}) == {"commandAllowlist": [written]}
        out = r.redact_json({"commandAllowlist": [written], "customModels": [{"apiKey": secret}]})
        assert _hidden(out["commandAllowlist"][0], written), (written, out)


# -- base64, then URL-encoded ------------------------------------------------------------------


def _b64_urls(secret: str) -> list[str]:
    b64 = _b64(secret)
    return [
        "https://sso.acme.example/cb?state=" + urllib.parse.quote(b64, safe=""),
        "see " + urllib.parse.quote(b64, safe=""),
        "https://sso.acme.example/cb/" + urllib.parse.quote(b64) + "?x=1",
        "state=" + re.sub("%..", lambda m: m[0].lower(), urllib.parse.quote(b64, safe="")),
        "next=" + urllib.parse.quote("https://x.example/?s=" + b64, safe=""),  # `%252B`
    ]


@pytest.mark.parametrize("secret", B64_SECRETS)
def test_url_encoded_base64_of_a_secret_is_hidden(secret: str) -> None:
    r = Redactor(KEY)
    r.redact_json({"customModels": [{"apiKey": secret}]})
    for written in _b64_urls(secret):
        out = r.redact_json({"commandAllowlist": [written]})["commandAllowlist"][0]
        assert "MjAy" not in out and "SG9yc2" not in out, (written, out)
        assert "[secret fp:" in out, (written, out)


@pytest.mark.parametrize("secret", B64_SECRETS)
def test_url_encoded_base64_is_hidden_by_a_fingerprint_from_the_state_file(secret: str) -> None:
    first = Redactor(KEY)
    first.redact_json({"customModels": [{"apiKey": secret}]})
    later = Redactor(KEY)
    later.memory.recall(first.memory.drain())
    for written in _b64_urls(secret):
        out = later.redact_json({"commandAllowlist": [written]})["commandAllowlist"][0]
        assert "MjAy" not in out and "SG9yc2" not in out, (written, out)


def test_url_encoded_base64_is_hidden_in_a_shown_text() -> None:
    r = Redactor(KEY)
    r.redact_json({"customModels": [{"apiKey": B64_SECRETS[0]}]})
    written = "waived by ops " + urllib.parse.quote(_b64(B64_SECRETS[0]), safe="")
    assert "MjAy" not in r.redact_text(written)
    assert "MjAy" not in r.redact_shown(written)


# -- the base64 of a short secret ---------------------------------------------------------------


def _short_b64s(secret: str) -> list[str]:
    """The base64 of `secret` from its first byte and from the 2nd and 3rd, padded or not,
    standard or URL-safe."""
    found = []
    for before in ("", " ", "x:"):
        data = (before + secret).encode()
        found += [base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode()]
    return found + [f.rstrip("=") for f in found]


@pytest.mark.parametrize("secret", SHORT)
def test_base64_of_a_short_secret_is_hidden_in_the_item_that_teaches_it(secret: str) -> None:
    for written in _short_b64s(secret):
        r = Redactor(KEY)
        doc = {"customModels": [{"apiKey": secret}], "commandAllowlist": ["echo " + written]}
        out = r.redact_json(doc)["commandAllowlist"][0]
        assert written not in out and "[secret fp:" in out, (written, out)


@pytest.mark.parametrize("secret", SHORT)
def test_base64_of_a_short_secret_before_its_key_is_hidden(secret: str) -> None:
    for written in _short_b64s(secret):
        r = Redactor(KEY)
        doc = {"commandAllowlist": ["echo " + written], "customModels": [{"apiKey": secret}]}
        out = r.redact_json(doc)["commandAllowlist"][0]
        assert written not in out and "[secret fp:" in out, (written, out)


@pytest.mark.parametrize("secret", SHORT)
def test_base64_of_a_short_secret_is_hidden_by_a_fingerprint(secret: str) -> None:
    first = Redactor(KEY)
    first.redact_json({"customModels": [{"apiKey": secret}]})
    later = Redactor(KEY)
    later.memory.recall(first.memory.drain())
    written = _b64(secret)
    out = later.redact_json({"commandAllowlist": [f"kubectl -p {written}"]})
    assert written not in out["commandAllowlist"][0], out


def test_words_stay_as_they_are_while_a_short_secret_is_remembered() -> None:
    r = Redactor(KEY)
    r.redact_json({"customModels": [{"apiKey": "Summer26"}]})
    text = "password kubernetes Dockerfile abcdefgh U3VtbWVy deployment-staging ABCDEFGHIJK"
    assert r.redact_json({"commandAllowlist": [text]})["commandAllowlist"][0] == text


# -- end to end --------------------------------------------------------------------------------


def _written(secret: str) -> list[str]:
    """The forms of `secret` the tester found shown."""
    forms = [_pct_all(secret), _u_all(secret)]
    if len(secret) < 9:
        forms.append(_b64(secret))
    else:
        forms.append(urllib.parse.quote(_b64(secret), safe=""))
    return forms


E2E_SECRETS = ["Kx9>>>?mQ2vLp??4Rt~~", "Pa55word>2026!", "Zr8!mQ2w"]


@pytest.mark.e2e
def test_review_writes_no_escaped_form_of_a_key_the_item_holds(tmp_path: Path) -> None:
    live = {"commandAllowlist": ["ls"], "customModels": []}
    commands = ["ls"] + [f"curl https://x.example/?k={f}" for s in E2E_SECRETS for f in _written(s)]
    proposed = {
        "commandAllowlist": commands,  # before the keys: redacted before they are learned
        "customModels": [
            {"id": f"custom:m{i}", "model": "gpt-4.1", "provider": "openai", "apiKey": secret}
            for i, secret in enumerate(E2E_SECRETS)
        ],
    }
    (tmp_path / "live.json").write_text(json.dumps(live))
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    out = tmp_path / "out"
    env = {"AUDITOR_FINGERPRINT_KEY": "0123456789abcdef01"}
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += [
        "--offline",
        "--state",
        str(tmp_path / "s.db"),
        "--out",
        str(out),
        "-o",
        "html,md,json,sarif,junit",
    ]
    code, _stdout, stderr = run_cli(argv, env, tmp_path)
    # (2: a rule that reads the commands meets the markers, `matches cannot be decided`)
    assert code in (1, 2), stderr
    written = sorted(out.iterdir())
    assert len(written) == 5
    for path in written:
        _absent(path.read_text(errors="replace"))


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A state file one sync filled from an emulator whose revision N holds the forms of
    `E2E_SECRETS` in commands and N+1 the secrets themselves as keys; and `history --format
    json` of it."""
    from auditor.emulator import start_emulator

    folder = tmp_path_factory.mktemp("lateforms")
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, folder / "state.db", TOKEN)
        history = emu.dataset.history
        settings = copy.deepcopy(history[-1]["settings"])
        settings["commandAllowlist"] = [
            *settings.get("commandAllowlist", []),
            *(f"curl 'https://x.example/?k={f}'" for s in E2E_SECRETS for f in _written(s)),
        ]
        for step in (0, 1):  # the forms first; the keys in the next revision
            if step:
                settings = copy.deepcopy(settings)
                settings["customModels"] = [
                    *settings.get("customModels", []),
                    *(
                        {"id": f"custom:late{i}", "model": "gpt-4.1", "apiKey": secret}
                        for i, secret in enumerate(E2E_SECRETS)
                    ),
                ]
            last = history[-1]
            history.append({**last, "revision": last["revision"] + 1, "settings": settings})
        code, _out, err = run_cli(["sync"], env, folder)
        assert code == 0, err
        code, shown, err = run_cli(["history", "--format", "json"], env, folder)
        assert code == 0, err
    return folder / "state.db", shown


def _absent(text: str) -> None:
    for secret in E2E_SECRETS:
        for form in _written(secret):
            assert form not in text and form.replace("\\", "\\\\") not in text, form


@pytest.mark.e2e
def test_sync_stores_no_form_of_a_key_a_later_revision_holds(synced: tuple[Path, str]) -> None:
    state, shown = synced
    assert "[secret fp:" in shown
    _absent(shown)
    _absent(state.read_bytes().decode("utf-8", "replace"))


@pytest.mark.e2e
def test_policy_lint_quotes_no_form_of_a_remembered_secret(
    synced: tuple[Path, str], tmp_path: Path
) -> None:
    state, _shown = synced
    forms = [f for s in E2E_SECRETS for f in _written(s)]
    rules = "".join(
        f"""  - id: L-{i}
    title: t
    severity: high
    target: settings
    assert: {{path: commandAllowlist, matches: '(unclosed {form}'}}
"""
        for i, form in enumerate(forms)
    )
    (tmp_path / "bad.yaml").write_text("rules:\n" + rules)
    argv = ["policy", "lint", str(tmp_path / "bad.yaml"), "--state", str(state)]
    code, out, err = run_cli(argv, {}, tmp_path)
    assert code == 2, err
    assert out.count("<not shown: looks like a secret>") >= len(forms), out
    _absent(out + err)
    # each line keeps its place and words: a form no stretch was found for (`\u`-escaped)
    # made the whole line the marker (review R44 #2)
    lines = out.splitlines()
    assert len(lines) == len(forms), out
    assert all(
        re.match(rf".*bad\.yaml:\d+:\d+: error: \$\.rules\[{i}\]\.", line)
        for i, line in enumerate(lines)
    ), out


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("secret", "written"),
    [
        (B64_SECRETS[0], urllib.parse.quote(_b64(B64_SECRETS[0]), safe="")),
        (LONG, LONG.replace("-", "%2D")),
        (LONG, _pct_all(LONG)),
        (LONG, _u_all(LONG)),
        ("Zr8!mQ2w", _b64(" Zr8!mQ2w")),
        # its hex and reversed (tester T97 #3b: both stayed in the state file)
        (LONG, LONG.encode().hex()),
        (LONG, LONG.encode().hex().upper()),
        (LONG, LONG[::-1]),
    ],
)
def test_rows_an_earlier_sync_stored_lose_a_form_of_a_secret_learned_later(
    tmp_path: Path, secret: str, written: str
) -> None:
    """Sync 1 stores the form (no secret to any detector alone) two revisions before its
    newest; sync 2 learns the key 5 revisions later, in pages of 2 that never hold the form's
    revision again: only the search of the stored rows for the new secret can find it."""
    from auditor.emulator import start_emulator

    config = tmp_path / "auditor.toml"
    config.write_text("page_size = 2\n")
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, tmp_path / "state.db", TOKEN)
        sync = ["sync", "--no-usage", "--config", str(config)]
        history = emu.dataset.history
        settings = copy.deepcopy(history[-1]["settings"])
        settings["commandAllowlist"] = [
            *settings["commandAllowlist"],
            f"curl https://sso.acme.example/cb?state={written}",
        ]
        for step in range(8):  # the form, 2 revisions without it; 5 more, the last the key
            if step == 1:
                settings = copy.deepcopy(settings)
                settings["commandAllowlist"] = settings["commandAllowlist"][:-1]
            if step == 7:
                settings = copy.deepcopy(settings)
                settings["customModels"][0]["apiKey"] = secret
            last = history[-1]
            history.append({**last, "revision": last["revision"] + 1, "settings": settings})
            if step == 2:
                assert run_cli(sync, env, tmp_path)[0] == 0
        before = (tmp_path / "state.db").read_bytes().decode("utf-8", "replace")
        assert written in before or written.replace("\\", "\\\\") in before
        assert run_cli(sync, env, tmp_path)[0] == 0
        code, shown, _err = run_cli(["history", "--format", "json"], env, tmp_path)
    assert code == 0
    stored = (tmp_path / "state.db").read_bytes().decode("utf-8", "replace")
    for text in (stored, shown):
        assert written not in text and written.replace("\\", "\\\\") not in text


# -- hex and reversed (tester T97 #3) -----------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    [
        "detail apikey2hex=" + LONG.encode().hex(),
        "detail " + LONG.encode().hex().upper(),
        "glued a" + LONG.encode().hex() + "b",  # after another hex digit: an odd start
    ],
)
def test_the_hex_of_a_secret_is_hidden_also_by_a_fingerprint_from_the_state_file(
    written: str,
) -> None:
    """A server's error quoting a stored key's hex reached stderr and every report (T97 #3a):
    hidden by the process that learned the key and by a later one that knows it only by its
    fingerprint."""
    first = Redactor(KEY)
    first.redact_json({"customModels": [{"apiKey": LONG}]})
    later = Redactor(KEY)
    later.memory.recall(first.memory.drain())
    for redactor in (first, later):
        out = redactor.redact_text(written)
        assert LONG.encode().hex() not in out.lower() and "[secret fp:" in out, out


def test_a_secret_written_reversed_is_hidden_by_the_process_that_learned_it() -> None:
    r = Redactor(KEY)
    r.redact_json({"customModels": [{"apiKey": LONG}]})
    out = r.redact_text(f"note {LONG[::-1]} end")
    assert LONG[::-1] not in out and out.startswith("note [secret fp:"), out


def test_ordinary_hex_stays_as_it_is_while_secrets_are_remembered() -> None:
    r = Redactor(KEY)
    r.redact_json({"customModels": [{"apiKey": LONG}]})
    text = "sha256 " + "ab" * 32 + " uuid 123e4567-e89b-12d3-a456-426614174000 deadbeefcafe"
    assert r.redact_text(text) == text


def test_a_memoised_text_is_redacted_again_for_the_hex_or_reverse_of_a_later_secret() -> None:
    """A text redacted (and memoised) before the secret was learned showed its hex, mixed
    case too, or the secret reversed, once 5 other secrets were learned with it; and
    `stale_secrets` missed it, so a stored row was not rewritten (reviewer R90 #1)."""
    hexed = LONG.encode().hex()
    for written in ("detail " + hexed, "x " + hexed[:30].upper() + hexed[30:], "r " + LONG[::-1]):
        r = Redactor(KEY)
        assert r.redact_text(written) == written
        others = [{"apiKey": f"other-secret-value-{i}-xyzzy"} for i in range(4)]
        r.redact_json({"customModels": [{"apiKey": LONG}, *others]})
        out = r.redact_text(written)
        assert "[secret fp:" in out and hexed not in out.lower() and LONG[::-1] not in out
        assert LONG in r.stale_secrets()


@pytest.mark.parametrize("glued", ["41{h}", "{h}41", "00{h}ff"])
def test_hex_glued_to_more_hex_is_hidden_by_a_fingerprint(glued: str) -> None:
    """A later run knowing the secret by its fingerprint alone missed its hex glued to more
    hex at an even place: the byte before it is no word boundary (reviewer R90 #2)."""
    first = Redactor(KEY)
    first.redact_json({"customModels": [{"apiKey": LONG}]})
    later = Redactor(KEY)
    later.memory.recall(first.memory.drain())
    out = later.redact_text("buf " + glued.format(h=LONG.encode().hex()))
    assert LONG.encode().hex() not in out and "[secret fp:" in out, out


def test_the_callers_token_glued_in_hex_still_reads_token() -> None:
    """`err 41<hex of the token>` read `err [secret fp:…]`, the run's marker, where it read
    `err 41[token]` (reviewer R90 #4)."""
    from auditor.redact.shown import markers_named

    token = "tok_4625b059281d06138c9bb22f"
    r = Redactor(KEY)
    r.register(token)
    for written, shown in (("err 41{h}", "err 41[token]"), ("err {h}", "err [token]")):
        text = r.redact_text(written.format(h=token.encode().hex()))
        assert markers_named(text, r, [token]) == shown


def test_long_hex_runs_are_not_kept_in_the_cache() -> None:
    """8,192 runs of any length were kept with their decodings (reviewer R90 #5)."""
    from auditor.redact.memory import _hex_run

    r = Redactor(KEY)
    r.redact_json({"customModels": [{"apiKey": LONG}]})
    before = _hex_run.cache_info().currsize
    for i in range(20):
        r.redact_text(f"blob {i:02x}" + "ab" * 5000)
    assert _hex_run.cache_info().currsize == before
