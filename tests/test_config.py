"""Configuration precedence, file validation and token handling."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from auditor.config import Config, load_config
from auditor.errors import ConfigError


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _load(
    tmp_path: Path,
    flags: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    config_file: Path | None = None,
) -> Config:
    return load_config(flags=flags or {}, env=env or {}, cwd=tmp_path, config_file=config_file)


# Each row: which sources set base_url, and which one must win.
PRECEDENCE = [
    pytest.param({"flag", "env", "file", "pyproject"}, "flag", id="flag-beats-all"),
    pytest.param({"env", "file", "pyproject"}, "env", id="env-beats-files"),
    pytest.param({"file", "pyproject"}, "file", id="config-file-beats-pyproject"),
    pytest.param({"pyproject"}, "pyproject", id="pyproject-beats-default"),
    pytest.param(set(), None, id="default"),
]


@pytest.mark.parametrize(("sources", "winner"), PRECEDENCE)
def test_precedence(tmp_path: Path, sources: set[str], winner: str | None) -> None:
    url = {s: f"https://{s}.example" for s in ("flag", "env", "file", "pyproject")}
    if "pyproject" in sources:
        _write(tmp_path / "pyproject.toml", f'[tool.auditor]\nbase_url = "{url["pyproject"]}"\n')
    config_file = None
    if "file" in sources:
        config_file = _write(tmp_path / "auditor.toml", f'base-url = "{url["file"]}"\n')
    env = {"AUDITOR_BASE_URL": url["env"]} if "env" in sources else {}
    flags = {"base_url": url["flag"]} if "flag" in sources else {}
    config = _load(tmp_path, flags, env, config_file)
    assert config.base_url == (url[winner] if winner else None)


def test_defaults(tmp_path: Path) -> None:
    config = _load(tmp_path)
    assert config.state_path == tmp_path / ".auditor" / "state.db"
    assert (config.org, config.fail_on, config.page_size, config.token) == (
        "default",
        "low",
        100,
        None,
    )


def test_config_file_values_and_relative_paths(tmp_path: Path) -> None:
    sub = tmp_path / "conf"
    sub.mkdir()
    cfg = _write(
        sub / "a.toml",
        'state = "st/state.db"\npolicies = ["p1.yaml", "p2.yaml"]\nfail-on = "high"\n'
        'timeout = 5\npage_size = 50\n[diff_keys]\nsets = ["$.x"]\n',
    )
    config = _load(tmp_path, config_file=Path("conf/a.toml"))
    assert config.state_path == sub / "st" / "state.db"
    assert config.policies == (sub / "p1.yaml", sub / "p2.yaml")
    assert (config.fail_on, config.timeout, config.page_size) == ("high", 5.0, 50)
    assert config.diff_keys == {"sets": ["$.x"]}
    assert cfg.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            'bse_url = "https://x"\n',
            "unknown key 'bse_url' (did you mean 'base_url'?)",
            id="typo-did-you-mean",
        ),
        pytest.param('token = "abc"\n', "never read from a config file", id="token-in-file"),
        pytest.param('base_url = "ftp://x"\n', "expected an http:// or https:// URL", id="bad-url"),
        pytest.param(
            'base_url = "http://[::1"\n', "base_url: not a valid URL (unbalanced [ ]", id="ipv6"
        ),
        pytest.param(
            'app_url = "http://h:99999"\n',
            "app_url: not a valid URL (the port is not a number from 0 to 65535",
            id="port",
        ),
        pytest.param('base_url = "http://h:x"\n', "base_url: not a valid URL (", id="port-text"),
        pytest.param("page_size = 500\n", "at most 100", id="page-size"),
        pytest.param('fail_on = "severe"\n', "expected one of critical", id="fail-on"),
        pytest.param("timeout = -1\n", "positive number", id="timeout"),
        pytest.param("base_url = \n", "invalid TOML", id="bad-toml"),
    ],
)
def test_bad_config_file(tmp_path: Path, text: str, message: str) -> None:
    cfg = _write(tmp_path / "bad.toml", text)
    with pytest.raises(ConfigError, match=r"bad\.toml") as info:
        _load(tmp_path, config_file=cfg)
    assert message in str(info.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        _load(tmp_path, config_file=Path("nope.toml"))


def test_pyproject_error_names_the_line_in_the_section(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n\n[tool.auditor]\norgg = "x"\n')
    with pytest.raises(ConfigError, match=r"pyproject\.toml:5:1: unknown key 'orgg'"):
        _load(tmp_path)


def test_token_precedence_and_repr(tmp_path: Path) -> None:
    secret = "tok-distinctive-abcdef123456"
    token_file = _write(tmp_path / "token.txt", "file-token-999999\n")
    assert _load(tmp_path, env={"AUDITOR_TOKEN": secret}).token == secret
    both = _load(tmp_path, {"token_file": token_file}, {"AUDITOR_TOKEN": secret})
    assert both.token == "file-token-999999"
    assert secret not in repr(_load(tmp_path, env={"AUDITOR_TOKEN": secret}))


def test_token_file_from_config_file_ranks_below_env(tmp_path: Path) -> None:
    _write(tmp_path / "t.txt", "from-config-file-1234")
    cfg = _write(tmp_path / "a.toml", 'token_file = "t.txt"\n')
    assert _load(tmp_path, config_file=cfg).token == "from-config-file-1234"
    assert _load(tmp_path, env={"AUDITOR_TOKEN": "env-token-123456"}, config_file=cfg).token == (
        "env-token-123456"
    )


def test_token_flag_value_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="never taken from a flag"):
        _load(tmp_path, {"token": "abc"})


def test_a_byte_order_mark_is_read_past_in_the_config_and_token_files(tmp_path: Path) -> None:
    """What PowerShell's `Set-Content -Encoding UTF8` writes: the config was 'invalid TOML …
    (at line 1, column 1)' and the token 'must be one line of printable ASCII characters'."""
    (tmp_path / "t.txt").write_bytes(b"\xef\xbb\xbffrom-bom-file-123456\r\n")
    cfg = tmp_path / "a.toml"
    cfg.write_bytes(b'\xef\xbb\xbftoken_file = "t.txt"\r\ntimeout = 7\r\n')
    config = _load(tmp_path, config_file=cfg)
    assert (config.token, config.timeout) == ("from-bom-file-123456", 7)


def test_empty_token_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="token file is empty"):
        _load(tmp_path, {"token_file": _write(tmp_path / "t", "\n")})


def test_fingerprint_key_from_env(tmp_path: Path) -> None:
    config = _load(tmp_path, env={"AUDITOR_FINGERPRINT_KEY": "k" * 20})
    assert config.fingerprint_key == b"k" * 20
    assert "kkkk" not in repr(config)
    with pytest.raises(ConfigError, match="at least 16"):
        _load(tmp_path, env={"AUDITOR_FINGERPRINT_KEY": "short"})


def test_env_state_relative_to_cwd(tmp_path: Path) -> None:
    config = _load(tmp_path, env={"AUDITOR_STATE": "x/s.db", "AUDITOR_ORG": "acme"})
    assert (config.state_path, config.org) == (tmp_path / "x" / "s.db", "acme")


PASSWORD = "hunter2-Zq9distinctive"


@pytest.mark.parametrize(
    "url",
    [
        pytest.param(f"https://admin:{PASSWORD}@svc.example", id="user-and-password"),
        pytest.param(f"https://{PASSWORD}@svc.example", id="user-only"),
        pytest.param(f"https://svc.example/api?key={PASSWORD}", id="query"),
        pytest.param(f"https://svc.example/api#{PASSWORD}", id="fragment"),
    ],
)
@pytest.mark.parametrize("source", ["flag", "env", "file"])
def test_url_with_credentials_is_refused_without_echoing_them(
    tmp_path: Path, url: str, source: str
) -> None:
    cfg = _write(tmp_path / "a.toml", f'app_url = "{url}"\n') if source == "file" else None
    flags = {"app_url": url} if source == "flag" else {}
    env = {"AUDITOR_APP_URL": url} if source == "env" else {}
    with pytest.raises(
        ConfigError, match="must not carry user-info, a query or a fragment"
    ) as info:
        _load(tmp_path, flags, env, cfg)
    assert PASSWORD not in str(info.value)
    named = "AUDITOR_APP_URL" if source == "env" else "app_url"  # the variable, as set
    assert named in str(info.value) and "svc.example" in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://ci:S3cr3t/Passw0rd@api.example.com", id="slash"),
        pytest.param("https://ci:S3cr3t?Passw0rd@api.example.com", id="question-mark"),
        pytest.param("https://ci:S3cr3t#Passw0rd@api.example.com", id="hash"),
        pytest.param("https://ci:123/S3cr3t@api.example.com", id="digits-then-slash"),
        pytest.param("https://ci:p@S3cr3t@api.example.com", id="at"),
    ],
)
@pytest.mark.parametrize(("key", "var"), [("base_url", "AUDITOR_BASE_URL"), ("app_url", "")])
@pytest.mark.parametrize("source", ["flag", "env", "file"])
def test_url_password_with_a_url_delimiter_is_refused_without_echoing_it(
    tmp_path: Path, url: str, key: str, var: str, source: str
) -> None:
    """A password holding `/`, `?` or `#` makes the URL parser read part of it as the port
    (`Port could not be cast to integer value as 'S3cr3t'`) or the path: never shown."""
    var = var or "AUDITOR_APP_URL"
    cfg = _write(tmp_path / "a.toml", f'{key} = "{url}"\n') if source == "file" else None
    flags = {key: url} if source == "flag" else {}
    env = {var: url} if source == "env" else {}
    with pytest.raises(ConfigError, match="must be percent-encoded") as info:
        _load(tmp_path, flags, env, cfg)
    assert "S3cr3t" not in str(info.value) and "Passw0rd" not in str(info.value)
    assert (var if source == "env" else key) in str(info.value)  # the variable, as set


@pytest.mark.parametrize(
    "url",
    ["https://host.example/api/@scope", "https://host.example/a@b", "https://[::1]/v1/@x"],
)
def test_an_at_sign_in_the_path_of_a_service_url_is_accepted(tmp_path: Path, url: str) -> None:
    """An `@` past the host with no `:` before it is the path's, not a password's: such a
    service address was refused as 'user name or password … must be percent-encoded'. (With a
    port, `https://h:8443/a@b` is refused still: it cannot be told from `user:8443/pass@host`.)"""
    config = _load(tmp_path, flags={"base_url": url})
    assert config.base_url == url


@pytest.mark.parametrize(
    ("url", "says"),
    [
        pytest.param("https://api.example.com:S3cr3t", "the port is not a number", id="port"),
        pytest.param("https://[S3cr3t]/", "is not an IPv6 address", id="brackets"),
    ],
)
def test_a_url_the_parser_refuses_is_described_not_quoted(
    tmp_path: Path, url: str, says: str
) -> None:
    with pytest.raises(ConfigError, match=says) as info:
        _load(tmp_path, flags={"base_url": url})
    assert "S3cr3t" not in str(info.value)


BAD_TOKENS = [
    pytest.param("tok-Ünïcode-123456", id="non-ascii"),
    pytest.param("tok-first-line-1234\ntok-second-line-5678", id="two-lines"),
    pytest.param("tok-with\ttab-123456", id="control-character"),
]


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_token_that_cannot_be_a_header_is_refused_from_env(tmp_path: Path, token: str) -> None:
    with pytest.raises(ConfigError, match="AUDITOR_TOKEN: the token must be one line") as info:
        _load(tmp_path, env={"AUDITOR_TOKEN": token})
    assert all(part not in str(info.value) for part in token.split())


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_token_that_cannot_be_a_header_is_refused_from_a_file(tmp_path: Path, token: str) -> None:
    path = _write(tmp_path / "token.txt", token + "\n")
    with pytest.raises(ConfigError, match=r"token\.txt: the token must be one line") as info:
        _load(tmp_path, {"token_file": path})
    assert all(part not in str(info.value) for part in token.split())


def test_a_config_file_that_is_not_utf8_names_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "auditor.toml"
    path.write_bytes(b'\xef\xbb\xbftimeout = 5\norg = "\xc3\xa9\xe9b"\n')
    with pytest.raises(ConfigError) as info:
        load_config(flags={}, env={}, cwd=tmp_path, config_file=Path("auditor.toml"))
    assert str(info.value) == (
        "auditor.toml:2:9: config file is not UTF-8 text (byte 0xe9 at offset 24)"
    ), info.value  # the file as typed


def test_token_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "token.bin"
    path.write_bytes(b"tok-\xff\xfe-latin1-\xe9-123456")
    with pytest.raises(ConfigError, match=r"token\.bin: token file is not UTF-8 text") as info:
        _load(tmp_path, {"token_file": path})
    assert "latin1" not in str(info.value)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
@pytest.mark.parametrize("key", ["timeout", "deadline"])
def test_timeouts_must_be_finite(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{key}: expected a positive number"):
        _load(tmp_path, {key: value})
    cfg = _write(tmp_path / "a.toml", f"{key} = {value.lower()}\n")
    with pytest.raises(ConfigError, match=rf"a\.toml:1:1: {key}: expected a positive number"):
        _load(tmp_path, config_file=cfg)


def test_diff_keys_accept_everything_the_diff_table_does(tmp_path: Path) -> None:
    cfg = _write(
        tmp_path / "a.toml",
        '[diff_keys]\nsets = ["a.b"]\nordered = ["commandAllowlist"]\n'
        '[diff_keys.keyed]\n"hooks.*" = "name"\n',
    )
    config = _load(tmp_path, config_file=cfg)
    assert config.diff_keys == {
        "sets": ["a.b"],
        "ordered": ["commandAllowlist"],
        "keyed": {"hooks.*": "name"},
    }
    table = config.list_table
    assert table.mode("commandAllowlist") == ("ordered", "")
    assert table.mode("a.b") == ("set", "")
    assert table.mode("hooks.Stop") == ("keyed", "name")
    assert _load(tmp_path).list_table.mode("commandAllowlist") == ("set", "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('diff_keys = "x"\n', "diff_keys: expected a mapping", id="not-a-table"),
        pytest.param("[diff_keys]\nsorted = []\n", "unknown entry 'sorted'", id="unknown-entry"),
        pytest.param('[diff_keys]\nsets = "a.b"\n', "diff_keys.sets: expected a list", id="str"),
        pytest.param('[diff_keys]\nordered = ["a..b"]\n', "diff_keys.ordered[0]", id="empty-seg"),
        pytest.param("[diff_keys.keyed]\nx = 3\n", "diff_keys.keyed.x: identity", id="key-int"),
    ],
)
def test_bad_diff_keys_are_refused_at_load_time(tmp_path: Path, text: str, message: str) -> None:
    cfg = _write(tmp_path / "bad.toml", text)
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, config_file=cfg)
    assert str(info.value).startswith(f"{cfg}:") and message in str(info.value)
    assert re.match(rf"{re.escape(str(cfg))}:\d+:\d+: ", str(info.value)), str(info.value)


@pytest.mark.parametrize(
    ("state", "says"),
    [
        pytest.param(
            "postgresql+psycopg://auditor:Typo5ecretPW@db.internal:5432/audit",
            "postgresql+psycopg:// is not a store auditor opens",
            id="sqlalchemy-scheme",
        ),
        pytest.param("mysql://a:Typo5ecretPW@c/d", "mysql:// is not a store", id="other-db"),
        pytest.param("postgressql://u:Typo5ecretPW@h/d", "postgressql:// is not", id="typo"),
        pytest.param(
            "postgresql://postgres:Ab12/Typo5ecretPW@127.0.0.1:5432/aud",
            "must be percent-encoded",
            id="slash-in-password",
        ),
        pytest.param(
            "postgresql://postgres:p@Typo5ecretPW@127.0.0.1:5432/aud",
            "must be percent-encoded",
            id="at-in-password",
        ),
        pytest.param("postgresql://u:Typo5ecretPW@[bad/db", "not a valid", id="bad-brackets"),
    ],
)
def test_a_state_url_auditor_cannot_open_is_refused_without_its_password(
    tmp_path: Path, state: str, says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, flags={"state": state})
    assert says in str(info.value)
    assert "Typo5ecretPW" not in str(info.value)
    assert list(tmp_path.iterdir()) == []  # no file named after the URL


def test_a_state_url_scheme_in_capitals_is_read_as_postgresql(tmp_path: Path) -> None:
    config = _load(tmp_path, flags={"state": "POSTGRESQL://u@db/audit"})
    assert config.state_url == "postgresql://u@db/audit"


# A token pasted into the wrong field of a file of settings: never quoted back.
PASTED = "ghp_0123456789abcdefABCDEF0123456789abcd"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        pytest.param(f'timeout = "{PASTED}"\n', "timeout: expected a number, got a value", id="t"),
        pytest.param(f'max_pages = "{PASTED}"\n', "max_pages: expected a positive", id="pages"),
        pytest.param(f'fail_on = "{PASTED}"\n', "fail_on: expected one of", id="fail-on"),
        pytest.param(f"{PASTED} = 1\n", "unknown key, a name that looks like a secret", id="key"),
        pytest.param(f'[diff_keys.keyed]\n"{PASTED}" = 3\n', "diff_keys.keyed.", id="diff"),
        pytest.param(
            f'base_url = "https://u:p@api.example.com/{PASTED}"\n', "user-info", id="url-path"
        ),
        pytest.param(f'token_file = "{PASTED}"\n', "cannot read token file", id="token-file"),
    ],
)
@pytest.mark.parametrize("where", ["config", "pyproject"])
def test_a_config_value_that_looks_like_a_secret_is_not_quoted(
    tmp_path: Path, text: str, says: str, where: str
) -> None:
    if where == "pyproject":
        text = text.replace("[diff_keys", "[tool.auditor.diff_keys")
        if not text.startswith("[tool"):
            text = "[tool.auditor]\n" + text
        _write(tmp_path / "pyproject.toml", text)
        cfg = None
    else:
        cfg = _write(tmp_path / "a.toml", text)
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, config_file=cfg)
    assert says in str(info.value)
    assert PASTED not in str(info.value) and "0123456789abcdef" not in str(info.value)


@pytest.mark.parametrize("source", ["flag", "env", "file"])
def test_an_org_label_that_looks_like_a_token_is_refused_unshown(
    tmp_path: Path, source: str
) -> None:
    """The single organization's label names every report, the SARIF category and each output
    line: a token set as `--org` / `AUDITOR_ORG` / `org =` (the wrong variable) was printed
    there. An ordinary label, long or with spaces, is kept as written."""
    cfg = _write(tmp_path / "a.toml", f'org = "{PASTED}"\n') if source == "file" else None
    flags = {"org": PASTED} if source == "flag" else {}
    env = {"AUDITOR_ORG": PASTED} if source == "env" else {}
    with pytest.raises(ConfigError, match=r"(org|ORG): expected the organization's name") as info:
        _load(tmp_path, flags, env, cfg)
    assert PASTED not in str(info.value)
    for label in ("acme", "acme-platform-engineering", "Acme Corporation Europe GmbH"):
        assert _load(tmp_path, flags={"org": label}).org == label


def test_an_ordinary_config_value_is_still_quoted(tmp_path: Path) -> None:
    cfg = _write(tmp_path / "a.toml", 'timeout = "5x"\nfail_on = "hihg"\n')
    with pytest.raises(ConfigError, match="timeout: expected a number, got '5x'"):
        _load(tmp_path, config_file=cfg)
    cfg = _write(tmp_path / "a.toml", 'fail_on = "hihg"\n')
    with pytest.raises(ConfigError, match="got 'hihg'"):
        _load(tmp_path, config_file=cfg)


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        pytest.param(f'token_env = "{PASTED}"', "token_env: expected the name of", id="env"),
        pytest.param(f'token_file = "{PASTED}"', "token_file: expected the path of", id="file"),
        pytest.param('token_env = "X"\nname2 = 1', "unknown key 'name2'", id="ordinary"),
    ],
)
def test_an_orgs_entry_holding_a_token_in_the_wrong_field_is_not_quoted(
    tmp_path: Path, entry: str, says: str
) -> None:
    from auditor.config import load_orgs

    text = f'[[org]]\nname = "acme"\nbase_url = "https://api.example.com"\n{entry}\n'
    orgs = _write(tmp_path / "orgs.toml", text)
    with pytest.raises(ConfigError, match=says) as info:
        load_orgs(orgs, {"X": "tok"}, tmp_path)
    assert PASTED not in str(info.value)


def test_an_orgs_name_that_looks_like_a_token_is_refused_unshown(tmp_path: Path) -> None:
    """It would name the organization's report folder and prefix every line of its output."""
    from auditor.config import load_orgs

    text = f'[[org]]\nname = "{PASTED}"\nbase_url = "https://api.example.com"\ntoken_env = "X"\n'
    orgs = _write(tmp_path / "orgs.toml", text)
    with pytest.raises(ConfigError, match="name: expected the organization's name") as info:
        load_orgs(orgs, {"X": "tok"}, tmp_path)
    assert PASTED not in str(info.value)
