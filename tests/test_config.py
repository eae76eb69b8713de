"""Configuration precedence, file validation and token handling."""

from __future__ import annotations

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


def test_pyproject_error_names_the_section(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.auditor]\norgg = "x"\n')
    with pytest.raises(ConfigError, match=r"\[tool.auditor\]: unknown key 'orgg'"):
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
