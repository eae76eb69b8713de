"""Configuration: merges flags, `AUDITOR_*` environment, a `--config` TOML file, `[tool.auditor]`
in ./pyproject.toml and defaults, in that order of precedence (design §9).

Takes plain mappings (the cli reads argv and the environment and passes them in), gives a frozen
`Config`. The API token comes only from `AUDITOR_TOKEN` or a token file, never from a flag value
or a config file, and never shows in `repr`; nor do the proxy's user name and password (`Proxy`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import difflib
import errno
import functools
import math
import re
import tomllib
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import SplitResult, unquote_to_bytes, urlsplit

from auditor.common.files import UnreadableFile, byte_position, read_input
from auditor.errors import ConfigError
from auditor.models import SEVERITIES

if TYPE_CHECKING:
    from auditor.diff import ListTable

# `auditor.diff` and `auditor.store.postgres` are imported where used: the parser reads
# FAIL_ON_VALUES, and `auditor --help` must not load the diff engine or the store.

DEFAULT_STATE = Path(".auditor") / "state.db"
FAIL_ON_VALUES = (*SEVERITIES, "none")
_MIN_FINGERPRINT_KEY = 16
MAX_CONFIG_BYTES = 1_000_000
MAX_TOKEN_BYTES = 64_000
MAX_CA_BUNDLE_BYTES = 10_000_000  # certifi's whole bundle is 0.3 MB

ENV_KEYS: Mapping[str, str] = {
    "AUDITOR_BASE_URL": "base_url",
    "AUDITOR_APP_URL": "app_url",
    "AUDITOR_STATE": "state_path",
    "AUDITOR_ORG": "org",
    "AUDITOR_PROXY": "proxy",
    "AUDITOR_CA_BUNDLE": "ca_bundle",
}
#: The standard proxy variables, which auditor does not read (explicit is safer in CI): a
#: connection that fails while one is set says so (`ignored_proxy_variable`).
STANDARD_PROXY_VARIABLES = (
    "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy",
)  # fmt: skip


@dataclass(frozen=True)
class Proxy:
    """`proxy`: the HTTP proxy every request goes through. `url` is `scheme://host:port`,
    without user-info (what messages name); the user name and password (percent-decoded) are
    secrets, never shown."""

    url: str
    username: bytes | None = field(default=None, repr=False)
    password: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class CABundle:
    """`ca_bundle`: the PEM file of CA certificates that replaces the default bundle. `pem`
    holds its certificates as read and checked (loaded once into the TLS context); `where`
    says where it was set (`AUDITOR_CA_BUNDLE`, `ci/auditor.toml:3:1: ca_bundle`); `shown` is
    the path as given, as messages name it."""

    shown: str
    where: str
    pem: str = field(repr=False)


class _Placed(NamedTuple):
    """A `ca_bundle` path from one source, read only if it is the one taken (`load_config`)."""

    path: Path
    typed: str
    where: str


def ignored_proxy_variable(env: Mapping[str, str]) -> str | None:
    """The first standard proxy variable set (not empty) in `env`, which auditor does not read."""
    return next((var for var in STANDARD_PROXY_VARIABLES if env.get(var, "").strip()), None)


@dataclass(frozen=True)
class Config:
    """Everything a command needs to know about where to read from and how to behave."""

    base_url: str | None = None
    app_url: str | None = None
    token: str | None = field(default=None, repr=False)
    state_path: Path = DEFAULT_STATE
    org: str = "default"
    policies: tuple[Path, ...] = ()
    waivers: Path | None = None
    out_dir: Path | None = None
    fail_on: str = "low"
    readiness_model: Path | None = None
    diff_keys: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 30.0
    deadline: float = 300.0
    max_pages: int = 10000
    page_size: int = 100
    fingerprint_key: bytes | None = field(default=None, repr=False)
    # `--state postgresql://…`: the central store (may hold a password: never shown)
    state_url: str | None = field(default=None, repr=False)
    # `org` was given (a flag, AUDITOR_ORG, a config file, an `--orgs` entry), not the default
    org_given: bool = False
    # the store was named (`--state`, AUDITOR_STATE, a config file's `state`), whatever its
    # value, rather than the default `.auditor/state.db` taken
    state_given: bool = False
    # every request through this proxy (AUDITOR_PROXY, `proxy`); its credentials never shown
    proxy: Proxy | None = field(default=None, repr=False)
    # the CA certificates trusted instead of the default bundle (AUDITOR_CA_BUNDLE, `ca_bundle`)
    ca_bundle: CABundle | None = None
    # the file the token was read from (`--token-file`, a config file's `token_file` when
    # neither the flag nor AUDITOR_TOKEN gives it; an `--orgs` organization's `token_file`):
    # an input, which no report may replace (its contents are `token`, never shown)
    token_file: Path | None = None

    @property
    def state(self) -> Path | str:
        """Where the store is: the PostgreSQL URL if one was given, else the SQLite file."""
        return self.state_url or self.state_path

    @property
    def state_shown(self) -> str:
        """The store's location as safe to print (a URL without its password)."""
        from auditor.store.postgres import display_url

        return display_url(self.state_url) if self.state_url else shown_path(self.state_path)

    @property
    def list_table(self) -> ListTable:
        """How `diff` and `history` compare lists: the defaults with `diff_keys` merged in."""
        from auditor.diff import list_table_from_config

        return list_table_from_config(self.diff_keys)


def _as_str(value: Any, where: str) -> str:
    if isinstance(value, str) and not value.strip():
        raise ConfigError(f"{where}: expected a non-empty string, got an empty one")
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a non-empty string, got {_toml_type(value)}")
    return value


def _as_org(value: Any, where: str) -> str:
    """The organization's label (`--org`, `AUDITOR_ORG`, a config file's `org`): any text but
    one that looks like a secret, which would be printed in every report, SARIF category and
    output line (a token set in the wrong variable). Only a long word is judged (tokens are),
    so a run given a short label does not load the detectors."""
    text = _as_str(value, where)
    if len(text) >= _LONG_WORD and not any(c.isspace() for c in text) and _looks_secret(text):
        raise ConfigError(f"{where}: expected the organization's name, got {_NOT_SHOWN}")
    return text


_LONG_WORD = 16


def org_label(value: str, where: str) -> str:
    """`value` as an organization's label, checked as `--org` is (`_as_org`): for one read
    from elsewhere (the organization a state file holds, which a hand may have edited)."""
    return _as_org(value, where)


def _toml_type(value: Any) -> str:
    """What a TOML value is, in TOML's words (never the value: it may be a secret)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time" if hasattr(value, "isoformat") else type(value).__name__


_NOT_SHOWN = "a value that looks like a secret (not shown)"


def _looks_secret(text: str) -> bool:
    """Whether `text` holds what the redaction's value layer takes for a secret (a token's
    known form, a high-entropy string): a token pasted into the wrong field of a file of
    settings (`timeout = "ghp_…"`, `token_env = "ghp_…"`)."""
    from auditor.redact.values import find_secrets  # detect-secrets: only when an error is worded

    return bool(find_secrets(text))


def _quoted(value: Any, depth: int = 0) -> str:
    """A configuration value as an error message quotes it: `repr`, or, when it looks like a
    secret, words saying so. Every message of this module that quotes a value it was given
    does so through here (or `_shown_path`); ordinary values stay readable."""
    text = value if isinstance(value, str) else _toml_spelling(value, depth)
    return _NOT_SHOWN if _looks_secret(text) else text if text is not value else repr(value)


_SPELLED_DEPTH = 4  # nested arrays and tables spelled out; deeper ones read `[…]`, `{…}`


def _toml_spelling(value: Any, depth: int = 0) -> str:
    """A non-string value as TOML writes it (`true`, `1979-05-27`, `inf`, `[1, 2]`), not as
    Python does (`True`, `datetime.date(1979, 5, 27)`); nesting past `_SPELLED_DEPTH` levels
    as `[…]` / `{…}` (tomllib reads hundreds)."""
    if isinstance(value, list | tuple | dict) and depth >= _SPELLED_DEPTH:
        return "[…]" if isinstance(value, list | tuple) else "{…}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_quoted(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_quoted(v, depth + 1)}" for k, v in value.items()) + "}"
    return repr(value)


def shown_path(path: Path | str) -> str:
    """A path (or a message another module worded) as an error message shows it, with any part
    that looks like a secret left out (`token_file = "ghp_…"`), judged name by name
    (`auditor.redact.shown.printed_path`, as a command shows a path where it succeeds)."""
    from auditor.redact.shown import printed_path

    return printed_path(path)


def unshown(text: str, also: Iterable[str] = ()) -> str:
    """`text` with every secret the redaction's value layer finds in it, and each of `also`
    (the caller's token), replaced by words saying so: what an error message may show of a
    value it was given."""
    from auditor.redact.shown import NOT_SHOWN, not_shown  # detectors: when an error is worded

    return without_tokens(not_shown(text), also, NOT_SHOWN)


def without_tokens(text: str, tokens: Iterable[str], shown: str = "[token]") -> str:
    """`text` with each of `tokens` (the command's own: `AUDITOR_TOKEN`, a token file's, an
    organization's) replaced by `shown`, as `auditor.redact.shown.named_tokens` does (also as
    a path normalises it, each part between `/` from 8 characters on; one of 4 to 7
    characters only where it is a word of its own; one shorter is never looked for)."""
    from auditor.redact.shown import named_tokens

    return named_tokens(text, tokens, shown)


_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]{0,20})://")


def _as_url(value: Any, where: str) -> str:
    # Surrounding white space is what a CI variable or a secret pasted with its line end
    # carries; inside the address it has no place (and the HTTP client refuses it mid-sync).
    text = _as_str(value, where).strip()
    if any(c.isspace() or not c.isprintable() for c in text):
        raise ConfigError(f"{where}: the URL holds a space or a control character")
    scheme = _URL_SCHEME.match(text)
    if scheme is None or scheme.group(1).lower() not in ("http", "https"):
        # Nothing of the value is shown: without `scheme://` there is no telling a host from a
        # user name and password (`user:secret@host`) or a token set in the wrong variable.
        got = f"{scheme.group(1).lower()}://…" if scheme else "no scheme:// at its start"
        raise ConfigError(f"{where}: expected an http:// or https:// URL, got {got}")
    text = text.rstrip("/")
    # No query belongs in a service address, so an `@` anywhere past the host is user-info
    # whose password has a `/`, `?` or `#` (`https://ci:pa/ss@host`): refused unshown.
    _check_user_info(text[scheme.end() :], where, scheme.group(1).lower(), query=False)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises on a port that is no number or out of range)
    except ValueError as exc:
        raise ConfigError(f"{where}: not a valid URL ({_url_fault(exc)})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where}: expected an http:// or https:// URL, got {_shown(parts)}")
    if parts.username or parts.password or parts.query or parts.fragment:
        # The address is written into the state file and printed: credentials belong in the
        # token, never in the URL.
        raise ConfigError(
            f"{where}: the URL must not carry user-info, a query or a fragment "
            f"({_shown(parts)}); give the token with AUDITOR_TOKEN or --token-file"
        )
    return text


def _as_proxy(value: Any, where: str) -> Proxy:
    """A proxy URL, `http://[user:password@]host[:port]` (or `https://`): nothing of it is
    quoted back in a problem but its scheme (the user-info is a secret)."""
    text = _as_str(value, where).strip()
    if any(c.isspace() or not c.isprintable() for c in text):
        raise ConfigError(f"{where}: the proxy URL holds a space or a control character")
    scheme = _URL_SCHEME.match(text)
    if scheme is None or scheme.group(1).lower() not in ("http", "https"):
        got = f"{scheme.group(1).lower()}://…" if scheme else "no scheme:// at its start"
        raise ConfigError(
            f"{where}: expected an http:// or https:// proxy URL (http://host:port), got {got}"
        )
    rest = text[scheme.end() :]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if authority.count("@") > 1 or "@" in rest[len(authority) :]:
        raise ConfigError(
            f"{where}: the user name or password of the proxy URL has a character that must "
            "be percent-encoded (/ @ ? # as %2F %40 %3F %23)"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"{where}: not a valid proxy URL ({_url_fault(exc)})") from None
    if not parts.hostname:
        raise ConfigError(f"{where}: the proxy URL has no host")
    if not parts.hostname.isascii():  # the HTTP client refuses it at the first request
        raise ConfigError(
            f"{where}: the proxy URL's host has a character that is not ASCII (a look-alike "
            "letter pasted, or an internationalized name: give its xn-- form)"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(
            f"{where}: a proxy URL is http://host:port (its user name and password, if any, "
            "before the host), without a path, query or fragment"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    scheme_name = scheme.group(1).lower()
    if port == 0:
        raise ConfigError(f"{where}: the proxy URL's port is 0: give the proxy's port")
    port = port if port is not None else (443 if scheme_name == "https" else 80)
    user = password = None
    if "@" in authority:
        user = unquote_to_bytes(parts.username or "")
        password = unquote_to_bytes(parts.password or "")
    return Proxy(f"{scheme_name}://{host}:{port}", user, password)


def _shown(parts: SplitResult) -> str:
    """A URL as safe to print: scheme, host and path only."""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return repr(shown_path(f"{parts.scheme}://{host}{port}{parts.path}"))


def _as_float(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected a number, got {_quoted(value)}") from None
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise ConfigError(f"{where}: expected a positive number, got {_quoted(value)}")
    return number


#: The shortest `timeout` (seconds) a request may be given: a round trip takes longer
#: (`timeout = 1e-300` failed every request at once, "no response within 0s", retried).
MIN_TIMEOUT = 0.1


def _as_timeout(value: Any, where: str) -> float:
    number = _as_float(value, where)
    if number < MIN_TIMEOUT:
        raise ConfigError(f"{where}: expected at least {MIN_TIMEOUT} seconds, got {_quoted(value)}")
    return number


def _as_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{where}: expected a positive integer, got {_quoted(value)}")
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{where}: expected a positive integer, got {_quoted(value)}") from None
    if number <= 0:
        raise ConfigError(f"{where}: expected a positive integer, got {_quoted(value)}")
    return number


def _as_page_size(value: Any, where: str) -> int:
    number = _as_int(value, where)
    if number > 100:
        raise ConfigError(f"{where}: the API pages at most 100 items, got {number}")
    return number


def _as_fail_on(value: Any, where: str) -> str:
    text = _as_str(value, where)
    if text not in FAIL_ON_VALUES:
        raise ConfigError(
            f"{where}: expected one of {', '.join(FAIL_ON_VALUES)}, got {_quoted(text)}"
        )
    return text


def _as_diff_keys(value: Any, where: str) -> Mapping[str, Any]:
    """The `diff_keys` table, checked by the diff table itself (so the two never disagree)."""
    from auditor.diff import list_table_from_config

    try:
        list_table_from_config(value)
    except ConfigError as exc:  # its messages start with `diff_keys`; say which file too
        raise ConfigError(shown_path(f"{where.removesuffix('diff_keys')}{exc}")) from None
    return dict(value)


# Keys a config file may hold, with the converter for each; paths are handled separately.
_SCALARS: Mapping[str, Callable[[Any, str], Any]] = {
    "base_url": _as_url,
    "app_url": _as_url,
    "org": _as_org,
    "fail_on": _as_fail_on,
    "diff_keys": _as_diff_keys,
    "timeout": _as_timeout,
    "deadline": _as_float,
    "max_pages": _as_int,
    "page_size": _as_page_size,
    "proxy": _as_proxy,
}
_PATHS = ("state_path", "waivers", "out_dir", "readiness_model", "token_file", "ca_bundle")
_ALIASES = {"state": "state_path"}
FILE_KEYS = (*_SCALARS, *_PATHS, "policies", "state")


def _normalise_key(key: str) -> str:
    name = key.replace("-", "_")
    return _ALIASES.get(name, name)


def _reject_unknown(
    table: Mapping[str, Any],
    where: str,
    known: tuple[str, ...] = FILE_KEYS,
    token_hint: str = "never read from a config file; set AUDITOR_TOKEN or token_file",
    at: Mapping[str, str] | None = None,
) -> None:
    for key in table:
        name = key.replace("-", "_") if known is FILE_KEYS else key
        place = (at or {}).get(key, where)
        if name == "token":
            raise ConfigError(f"{place}: the API token is {token_hint}")
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            if name == "tool" and known is FILE_KEYS:
                hint = " (a --config file holds the keys at its top level, without [tool.auditor])"
            if _looks_secret(key):
                raise ConfigError(f"{place}: unknown key, {_NOT_SHOWN.replace('value', 'name')}")
            raise ConfigError(f"{place}: unknown key {key!r}{hint}")


class _StateURL(str):
    """A `state` value naming a PostgreSQL database rather than a file."""

    __slots__ = ()


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _as_state(value: Any, where: str, base: Path) -> Path | _StateURL:
    from auditor.store.postgres import display_url, is_database_url

    if isinstance(value, str):
        _refuse_connection_string(value, where)
    scheme = _SCHEME.match(value) if isinstance(value, str) else None
    if scheme is None:
        return _as_path(value, where, base)
    if not is_database_url(value):  # never a file named after a URL (with its password)
        raise ConfigError(
            f"{where}: {scheme.group(1)}:// is not a store auditor opens: give a file path "
            "or postgresql://[user@]host[:port]/database"
        )
    if any(_padding(c) for c in value):  # urlsplit drops a tab or line end, libpq does not
        raise ConfigError(
            f"{where}: the postgresql:// URL holds a space or a control character: "
            "percent-encode it (%20) or remove it"
        )
    value = value[: scheme.end()].lower() + value[scheme.end() :]  # libpq reads lower case
    _check_user_info(value[scheme.end() :], where, "postgresql", query=True)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises on a port that is no number)
    except ValueError:
        raise ConfigError(
            f"{where}: not a valid postgresql:// URL (check the host, port and brackets)"
        ) from None
    if not (parts.hostname or parts.path.strip("/") or "host=" in parts.query):
        raise ConfigError(
            f"{where}: expected postgresql://[user@]host[:port]/database, "
            f"got {display_url(value)!r}"
        )
    return _StateURL(value)


# A `state` value that is no file path but a connection string mistyped, pasted with a space
# or a line end, or written in another form: taken as a path it would name folders after the
# password (`./ postgresql:/user:password@host/db`) and print it in every message about that
# file. Refused before anything is opened or created, and nothing of the value is shown.

#: `postgresql:` or `postgres:` (`+driver` too) followed by `:` or `//` where a valid URL has
#: `://`, with any `scheme:` prefixes before it (`file:postgresql://…`, `jdbc:postgresql:…`).
_PG_LIKE = re.compile(
    r"((?:[A-Za-z][A-Za-z0-9+.-]*:)*)postgres(?:ql)?(?:\+[A-Za-z0-9_]+)?(?::|//)", re.IGNORECASE
)
#: libpq's connection keywords (and the other drivers' own, `Server=…;Uid=…;Pwd=…`).
_CONNECTION_KEYWORDS = frozenset((
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
    "channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode",
    "requiressl", "sslnegotiation", "sslcompression", "sslcert", "sslkey", "sslpassword",
    "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer",
    "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib",
    "gssdelegation", "service", "target_session_attrs", "load_balance_hosts",
    "server", "database", "username", "uid", "pwd",
))  # fmt: skip
_PAIR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_CONNECTION_STRING = "looks like a PostgreSQL connection string but is not a postgresql:// URL"
_GIVE_URL = (
    "give postgresql://[user@]host[:port]/database (the password in PGPASSWORD or ~/.pgpass)"
)


def _padding(char: str) -> bool:
    """White space, a control character or an invisible format one (a zero-width space); not
    a byte that is no UTF-8 (its escape, which a file name may hold)."""
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cf")


def _refuse_connection_string(value: str, where: str) -> None:
    """A ConfigError, which shows nothing of `value`, when a `state` value looks like a
    connection string but is no valid `postgresql://` URL: a space or a control character
    before or after it (a pasted secret's), one slash or none after `postgresql:`, a
    `scheme:` before it, a `user:password@host` in one name of the path, or a libpq
    `key=value` string (`host=db password=… dbname=audit`: its first word is `keyword=`, or a
    word is `password=…`, or every word is `name=…` with a keyword among them). A value
    with white space or a control character before or after it is refused whatever it is: a
    file name begins or ends so only by mistake. A path with a space or a `=` inside it
    (`/tmp/my dir/state.db`, `./a=b/state.db`) is a path."""
    start, end = 0, len(value)
    while start < end and _padding(value[start]):
        start += 1
    while end > start and _padding(value[end - 1]):
        end -= 1
    core = value[start:end]
    if not core:
        return  # only white space: `_as_str` says it is empty
    like = _PG_LIKE.match(core)
    if like is not None and (like.group(1) or _SCHEME.match(core) is None):
        fault = (
            "something stands before postgresql: (such as file:)"
            if like.group(1)
            else "check for a missing slash or colon after postgresql"
        )
        raise ConfigError(f"{where}: {_CONNECTION_STRING}: {fault}; {_GIVE_URL}")
    if core != value and core.lower().startswith(("postgresql:", "postgres:")):
        raise ConfigError(
            f"{where}: {_CONNECTION_STRING}: it has a space or a control character before or "
            "after it (as a pasted secret can): remove it"
        )
    if _SCHEME.match(core) is not None:  # `scheme://…`: read as a URL (`_as_state`)
        if core != value:
            raise ConfigError(
                f"{where}: the URL has a space or a control character before or after it (as "
                "a pasted secret can): remove it"
            )
        return
    words = re.split(r"[\s;]+", re.sub(r"\s*=\s*", "=", core))
    keys = [pair[1].lower() if (pair := _PAIR.match(word)) else None for word in words]
    if (
        keys[0] in _CONNECTION_KEYWORDS
        or any(key is not None and ("password" in key or key == "pwd") for key in keys)
        or (None not in keys and not _CONNECTION_KEYWORDS.isdisjoint(keys))
    ):
        raise ConfigError(
            f"{where}: a libpq key=value connection string is not accepted: {_GIVE_URL}; "
            "a file path written so starts with ./"
        )
    if any(":" in name and "@" in name.partition(":")[2] for name in re.split(r"[/\\]", core)):
        raise ConfigError(
            f"{where}: looks like a connection string's user:password@host but is not a "
            f"postgresql:// URL (a file path has no ':' before '@' in one name): {_GIVE_URL}"
        )
    if core != value:
        raise ConfigError(
            f"{where}: it begins or ends with a space or a control character (as a pasted "
            "secret can): remove it"
        )


def _check_user_info(rest: str, where: str, scheme: str, *, query: bool) -> None:
    """Refuse a URL (`rest`: what follows `scheme://`) whose password a URL parser would read
    as another part of it (a raw `/`, `@`, `?` or `#` in it): the masking would then miss part
    of the password, an error about that part (`Port could not be cast to integer value as
    'pa'`) would show it, and the connection fail. `query`: the URL may carry a query, where
    an `@` is a value's (`?user=me@corp`); without one, an `@` past the host is user-info's
    when a `:` comes before it (`user:pa/ss@host`), else the path's (`https://h/api/@scope`).
    Nothing of the URL is shown."""
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    stray = rest[len(authority) :]
    if query:
        stray = stray.split("?", 1)[0]
    elif ":" not in re.sub(r"\[[^\]]*\]", "", rest.split("@", 1)[0]):
        stray = ""  # no `:` before it (an IPv6 host's aside): an `@` in the path
    if authority.count("@") > 1 or "@" in stray:
        fix = (
            "or give the password in PGPASSWORD or ~/.pgpass instead"
            if query
            else "or leave the user-info out: give the token with AUDITOR_TOKEN or --token-file"
        )
        raise ConfigError(
            f"{where}: the user name or password of the {scheme}:// URL has a character "
            f"that must be percent-encoded (/ @ ? # as %2F %40 %3F %23), {fix}"
        )


def _url_fault(exc: ValueError) -> str:
    """What is wrong with a URL `urlsplit` refused, in words that never quote it (its messages
    quote the port as written, which may be part of a password)."""
    message = str(exc)
    if "Port" in message:
        return "the port is not a number from 0 to 65535; check the host and port"
    if "Invalid IPv6 URL" in message:
        return "unbalanced [ ] around an IPv6 address"
    if "does not appear to be" in message:
        return "what is in [ ] is not an IPv6 address"
    if "NFKC" in message:
        return "the host has characters that Unicode normalization changes"
    return "check the host, port and brackets"


def _as_path(value: Any, where: str, base: Path) -> Path:
    return base / (value if isinstance(value, Path) else _as_str(value, where))


def _convert(name: str, value: Any, where: str, base: Path, *, named: bool = False) -> Any:
    """`value` of the key `name` converted; a problem names `where: name` (`where` alone when
    `named`: it is the variable the value came from)."""
    label = where if named else f"{where}: {'state' if name == 'state_path' else name}"
    if name == "ca_bundle":
        return _Placed(_as_path(value, label, base), str(value), label)
    if name in _SCALARS:
        return _SCALARS[name](value, label)
    if name == "policies":
        items = value if isinstance(value, list | tuple) else [value]
        return tuple(_as_path(v, label, base) for v in items)
    if name == "state_path":
        return _as_state(value, label, base)
    return _as_path(value, label, base)


def _layer(
    table: Mapping[str, Any], where: str, base: Path, at: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Convert one source's raw values to typed ones (relative paths resolved against `base`);
    `at`: where each key is written (`file:line:col`), when known."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if value is None:
            continue
        name = _normalise_key(key)
        if name in _SCALARS or name in _PATHS or name == "policies":
            out[name] = _convert(name, value, (at or {}).get(key, where), base)
    return out


@functools.cache
def _toml_at() -> re.Pattern[str]:
    """Where tomllib says a problem is (compiled when first needed, as the next ones)."""
    return re.compile(r"^(.*) \(at line (\d+), column (\d+)\)$")


def _read_toml(path: Path) -> dict[str, Any]:
    return _read_toml_text(path)[0]


def _read_toml_text(
    path: Path, shown: str | None = None, kind: str = "config file"
) -> tuple[dict[str, Any], str]:
    """The TOML table of the file at `path` and its text; a problem names the file as `shown`
    (the path as the user typed it: `ci/auditor.toml`, not `/home/…/ci/auditor.toml`) and as
    what it is, `kind` (`config file`, `--orgs file`)."""
    name = str(path) if shown is None else shown
    try:
        path.stat()
    except FileNotFoundError:
        if not path.is_symlink():
            raise ConfigError(f"{name}: {kind} not found") from None
        raise ConfigError(
            f"{name}: cannot read {kind}: a symbolic link to a missing file"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # `PATH: File name too long`, as for every path
            raise
        # else named by `read_input` as any other input's is (a loop: `Too many levels of …`)
    raw = b""
    try:
        raw = read_input(path, max_bytes=MAX_CONFIG_BYTES)
        # utf-8-sig: a byte-order mark (what Windows editors and PowerShell write) is dropped
        text = raw.decode("utf-8-sig")
        return tomllib.loads(text), text
    except UnreadableFile as exc:
        raise ConfigError(f"{name}: cannot read {kind}: {exc.reason}") from None
    except UnicodeDecodeError as exc:
        at = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)  # utf-8-sig's offset
        row, column = byte_position(raw, at)
        raise ConfigError(
            f"{name}:{row}:{column}: {kind} is not UTF-8 text (byte {raw[at]:#04x} at offset {at})"
        ) from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion
        raise ConfigError(
            f"{name}: invalid TOML: arrays or tables nested too deeply to read"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        found = _toml_at().match(str(exc))
        if found:  # `file:line:col: invalid TOML: …`, as every other file problem is located
            message, line, col = found.groups()
            raise ConfigError(f"{name}:{line}:{col}: invalid TOML: {message}") from None
        raise ConfigError(f"{name}: invalid TOML: {exc}") from None
    except ValueError:  # (after its subclasses above) an integer past Python's 4,300 digits
        raise ConfigError(f"{name}: invalid TOML: a number too long to read") from None


@functools.cache
def _toml_header() -> re.Pattern[str]:
    """A TOML table header line."""
    return re.compile(r"^\s*\[\[?\s*([^\]]*?)\s*\]\]?")


@functools.cache
def _toml_key() -> re.Pattern[str]:
    """A TOML line that sets a key (or a dotted one)."""
    return re.compile(r"""^(\s*)(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*[.=]""")


def _key_places(path: Path | str, text: str, table: str) -> dict[str, str]:
    """`file:line:col` of each key of the TOML table `table` ("" for the top level), as
    written in `text`: where a config file's problem with that key is shown. A key also
    given as a sub-table (`[tool.auditor.diff_keys]`) is placed at that header."""
    places: dict[str, str] = {}
    current = ""
    for number, line in enumerate(text.splitlines(), start=1):
        header = _toml_header().match(line)
        if header:
            current = header.group(1).replace(" ", "").replace('"', "")
            inner = current[len(table) + 1 :] if table else current
            if (not table or current.startswith(table + ".")) and inner:
                col = line.index(inner.split(".")[0][:1] or "[") + 1
                places.setdefault(inner.split(".")[0], f"{path}:{number}:{col}")
            continue
        if current != table:
            continue
        key = _toml_key().match(line)
        if key:
            name = next(g for g in key.groups()[1:] if g is not None)
            places.setdefault(name, f"{path}:{number}:{len(key.group(1)) + 1}")
    return places


def _file_layer(path: Path, *, section: bool, typed: Path) -> dict[str, Any]:
    """The settings of the config file at `path`, which a problem names as `typed` (as the
    user gave it, relative to the working folder, a name that looks like a secret left out)."""
    shown = shown_path(typed)
    data, text = _read_toml_text(path, shown)
    where = shown
    if section:
        tool = data.get("tool", {})
        data = tool.get("auditor", {}) if isinstance(tool, dict) else {}
        where = f"{shown} [tool.auditor]"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a table")
    at = _key_places(shown, text, "tool.auditor" if section else "")
    _reject_unknown(data, where, at=at)
    spelled: dict[str, str] = {}
    for key in data:  # `out-dir` and `out_dir` (or `state` and `state_path`): one key twice
        name = _normalise_key(key)
        if name in spelled:
            raise ConfigError(
                f"{at.get(key, where)}: {key!r} and {spelled[name]!r} are the same key: give one"
            )
        spelled[name] = key
    return _layer(data, where, path.parent, at)


def _env_layer(env: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    # An empty variable (a CI variable that is not set expands to one) counts as not set.
    table = {name: env[var] for var, name in ENV_KEYS.items() if env.get(var)}
    for var, name in ENV_KEYS.items():
        if name in table and var not in ("AUDITOR_STATE", "AUDITOR_CA_BUNDLE"):  # (any bytes)
            _check_utf8(table[name], var)
    # a problem names the variable (`AUDITOR_STATE: …`), as the README's table does: a CI
    # user looks for the variable they set, not for the config key it stands for
    return {
        name: _convert(name, table[name], var, cwd, named=True)
        for var, name in ENV_KEYS.items()
        if name in table
    }


def _check_utf8(text: str, where: str) -> None:
    """A ConfigError when `text` (an environment variable's value, which Python decodes with
    an escape for each byte that is not UTF-8) is not UTF-8 text: it could not be written to
    a report or a line of output. The value is not shown."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            f"{where}: not UTF-8 text (it holds a byte that no UTF-8 character starts with)"
        ) from None


#: The variables a command reads whose empty value (read as not set) it says: not
#: `AUDITOR_FINGERPRINT_KEY`, which the examples set from an optional secret (empty when there
#: is none) and whose absence a state file made with a key refuses anyway.
ENV_VARIABLES = (*ENV_KEYS, "AUDITOR_TOKEN")


def empty_variables(env: Mapping[str, str]) -> list[str]:
    """The `AUDITOR_*` variables set to an empty value: each counts as not set (the default
    is taken, as if it were missing), which a command says, so a CI variable that expanded to
    nothing does not silently change what it does."""
    return [var for var in ENV_VARIABLES if var in env and not env[var]]


@functools.cache
def _pem_block() -> re.Pattern[bytes]:
    """A PEM certificate block (compiled when first needed: only a CA bundle has them)."""
    return re.compile(rb"-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]*?)-----END CERTIFICATE-----")


_PEM_BEGIN = b"-----BEGIN CERTIFICATE-----"


def _read_ca_bundle(placed: _Placed) -> CABundle:
    """The CA bundle at `placed`, read as every input file is (a regular file under
    `MAX_CA_BUNDLE_BYTES`), its certificates checked as PEM: base64 of a DER sequence each
    (OpenSSL itself reads them once, when the first request is made). A problem is one line
    naming the file as given and where it was set."""
    path, typed, where = placed
    shown = shown_path(typed)
    try:
        raw = read_input(path, max_bytes=MAX_CA_BUNDLE_BYTES)
    except UnreadableFile as exc:
        raise ConfigError(f"{where}: cannot read the CA bundle {shown}: {exc.reason}") from None
    certificates: list[str] = []
    for n, block in enumerate(_pem_block().finditer(raw), start=1):
        body = b"".join(block[1].split())
        try:
            der = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            der = b""
        if not _der_sequence(der):
            line = raw.count(b"\n", 0, block.start()) + 1
            raise ConfigError(
                f"{where}: {shown}:{line}: certificate {n} of the CA bundle is not valid PEM "
                "(its base64 is not a certificate)"
            )
        lines = [body[i : i + 64].decode("ascii") for i in range(0, len(body), 64)]
        certificates.append(
            "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE-----\n"
        )
    if not certificates:
        begun = _PEM_BEGIN in raw
        why = "one is begun but never ends" if begun else "expected PEM text"
        raise ConfigError(
            f"{where}: {shown}: no certificate in the CA bundle ({why}: "
            "-----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----)"
        )
    return CABundle(shown, where, "".join(certificates))


def _der_sequence(der: bytes) -> bool:
    """Whether `der` is one DER SEQUENCE, its length as declared (what a certificate is)."""
    if len(der) < 2 or der[0] != 0x30:
        return False
    size, at = der[1], 2
    if size & 0x80:
        count = size & 0x7F
        if not 1 <= count <= 4 or len(der) < 2 + count:
            return False
        size, at = int.from_bytes(der[2 : 2 + count], "big"), 2 + count
    return at + size == len(der)


def _read_token_file(path: Path) -> str:
    try:
        token = read_input(path, max_bytes=MAX_TOKEN_BYTES).decode("utf-8-sig").strip()
    except UnreadableFile as exc:
        raise ConfigError(f"{shown_path(path)}: cannot read token file: {exc.reason}") from None
    except ValueError:
        raise ConfigError(f"{shown_path(path)}: token file is not UTF-8 text") from None
    if not token:
        raise ConfigError(f"{shown_path(path)}: token file is empty")
    return _checked_token(token, shown_path(path))


def _checked_token(token: str, source: str) -> str:
    """One line of printable ASCII, as an HTTP header needs (the value is never shown)."""
    if not token:
        raise ConfigError(f"{source}: the token is empty")
    if not (token.isascii() and token.isprintable()):
        raise ConfigError(
            f"{source}: the token must be one line of printable ASCII characters "
            f"({len(token)} characters given)"
        )
    return token


def _token(
    flags: dict[str, Any], env: Mapping[str, str], files: dict[str, Any]
) -> tuple[str | None, Path | None]:
    """The token, and the file it was read from (None for AUDITOR_TOKEN, or no token)."""
    if "token_file" in flags:
        return _read_token_file(flags["token_file"]), flags["token_file"]
    if env.get("AUDITOR_TOKEN"):
        return _checked_token(env["AUDITOR_TOKEN"].strip(), "AUDITOR_TOKEN"), None
    if "token_file" in files:
        return _read_token_file(files["token_file"]), files["token_file"]
    return None, None


def _fingerprint_key(env: Mapping[str, str]) -> bytes | None:
    text = env.get("AUDITOR_FINGERPRINT_KEY")
    if not text:
        return None
    _check_utf8(text, "AUDITOR_FINGERPRINT_KEY")
    if len(text) < _MIN_FINGERPRINT_KEY:
        raise ConfigError(
            f"AUDITOR_FINGERPRINT_KEY: expected at least {_MIN_FINGERPRINT_KEY} characters"
        )
    return text.encode("utf-8")


def load_config(
    *,
    flags: Mapping[str, Any],
    env: Mapping[str, str],
    cwd: Path,
    config_file: Path | None,
) -> Config:
    """Merge every configuration source by precedence into one validated `Config`. A problem
    quoting a value equal to a proxy's password or user name that may be a credential (from any
    source, the one read or not) shows it as the token is, `[token]`: the problem is worded
    before the proxy is taken. A plain word (`auditor`, `expected`) is not looked for: it
    would change auditor's own wording (`[tool.auditor]`) and tell it by what went missing."""
    try:
        return _load_config(flags=flags, env=env, cwd=cwd, config_file=config_file)
    except ConfigError as exc:
        hidden = _proxy_credentials(env, cwd, config_file)
        if not hidden:
            raise
        raise ConfigError(without_tokens(str(exc), hidden)) from None


def _proxy_credentials(env: Mapping[str, str], cwd: Path, config_file: Path | None) -> list[str]:
    """The user names and passwords (percent-decoded) of every proxy URL the sources give that
    may be a credential (`may_be_credential`, the rule for a proxy password kept as a secret):
    AUDITOR_PROXY, pyproject.toml's `[tool.auditor]` and the config file's `proxy`, each read
    as far as it can be (a source that cannot be read gives none)."""
    urls = [env.get("AUDITOR_PROXY", "")]
    for path, section in (
        (cwd / "pyproject.toml", True),
        (config_file and cwd / config_file, False),
    ):
        if not path:
            continue
        try:
            data, _ = _read_toml_text(path, "")
        except (ConfigError, OSError, ValueError):
            continue
        if section:
            tool = data.get("tool", {})
            data = tool.get("auditor", {}) if isinstance(tool, dict) else {}
        value = data.get("proxy") if isinstance(data, dict) else None
        urls.append(value if isinstance(value, str) else "")
    from auditor.redact.commands import may_be_credential

    found: list[str] = []
    for url in urls:
        try:
            parts = urlsplit(url.strip())
            found += [
                unquote_to_bytes(p).decode("utf-8", "replace")
                for p in (parts.password, parts.username)
                if p
            ]
        except ValueError:
            continue
    return [part for part in found if may_be_credential(part)]


def _load_config(
    *,
    flags: Mapping[str, Any],
    env: Mapping[str, str],
    cwd: Path,
    config_file: Path | None,
) -> Config:
    if "token" in flags and flags["token"] is not None:
        raise ConfigError("the token is never taken from a flag: use AUDITOR_TOKEN or --token-file")
    files: dict[str, Any] = {}
    pyproject = cwd / "pyproject.toml"
    # Anything by that name is read (a folder, a named pipe or a dangling link is an error,
    # as for any other input), never passed over: its settings would be silently left out.
    if pyproject.exists() or pyproject.is_symlink():
        files.update(_file_layer(pyproject, section=True, typed=Path("pyproject.toml")))
    if config_file is not None:
        files.update(_file_layer(cwd / config_file, section=False, typed=config_file))
    flag_values = _layer(flags, "command line", cwd)
    merged = {**files, **_env_layer(env, cwd), **flag_values}
    state_given = "state_path" in merged
    merged.setdefault("state_path", cwd / DEFAULT_STATE)
    if isinstance(merged["state_path"], _StateURL):
        merged["state_url"] = str(merged.pop("state_path"))
        merged["state_path"] = cwd / DEFAULT_STATE
    token, merged["token_file"] = _token(flag_values, env, files)
    if "ca_bundle" in merged:  # only the bundle taken is read
        merged["ca_bundle"] = _read_ca_bundle(merged["ca_bundle"])
    org_given = "org" in merged
    return Config(
        **merged,
        token=token,
        fingerprint_key=_fingerprint_key(env),
        org_given=org_given,
        state_given=state_given,
    )


# -- many organizations (`auditor run --orgs FILE`) -------------------------------------------

MAX_ORGS = 1000
_ORG_KEYS = ("name", "base_url", "app_url", "token_env", "token_file")


@functools.cache
def _org_name() -> re.Pattern[str]:
    """An organization's name in the config file (compiled when first needed)."""
    return re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def _name_fault(name: Any) -> str:
    """What an organization's name that `_org_name` refuses was, and which part of the rule it
    breaks: every character of `..` or `-rf` is allowed, and they were refused unexplained."""
    if name is None:
        return "none given (this [[org]] has no name key)"
    got = f"got {_quoted(name)}"
    if not isinstance(name, str) or not name:
        return got
    other = next((c for c in name if not (c.isascii() and (c.isalnum() or c in "._-"))), None)
    if other is not None:
        return f"{got}, which holds {other!r}"
    if len(name) > 63:
        return f"{got}, {len(name)} characters long"
    return f"{got}, which begins with {name[0]!r}"


@dataclass(frozen=True)
class OrgEntry:
    """One organization of an `--orgs` file: where its service is and its token (never shown)."""

    name: str
    base_url: str
    app_url: str | None
    token: str = field(repr=False)
    token_file: Path | None = None  # where `token` was read from (`token_file`, not `token_env`)


def load_orgs(
    path: Path, env: Mapping[str, str], cwd: Path, tokens: Iterable[str] = ()
) -> tuple[OrgEntry, ...]:
    """Read an `--orgs` TOML file: one `[[org]]` table per organization with `name`,
    `base_url`, optional `app_url`, and its token from `token_env` (the name of an environment
    variable) or `token_file` (relative to the file); never an inline token. Tokens are read
    here, so a missing one stops the run before any organization starts.

    `tokens`: the command's own (a `--token-file`'s; `AUDITOR_TOKEN` is read from `env`).
    Every organization's token is read first, so that a `name`, `token_env` or `token_file`
    holding any of them (or what the detectors take for a secret) is refused before it is
    shown anywhere (a name becomes a folder, a state file and the prefix of lines), and no
    message of this file shows one (`[token]`)."""
    shown = shown_path(path)  # as typed (relative to the working folder): what problems name
    path = cwd / path
    data, text = _read_toml_text(path, shown, "--orgs file")
    unknown = [k for k in data if k != "org"]
    if unknown:
        place = _key_places(shown, text, "").get(unknown[0], shown)
        raise ConfigError(f"{place}: unknown key {_quoted(unknown[0])} (expected [[org]] tables)")
    tables = data.get("org")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{shown}: expected one or more [[org]] tables")
    if len(tables) > MAX_ORGS:
        raise ConfigError(f"{shown}: {len(tables)} organizations; at most {MAX_ORGS}")
    places = _array_places(shown, text, "org")
    if len(places) != len(tables):  # written otherwise (`org = [{…}]`): no line to name
        places = [{} for _ in tables]
    known = _org_tokens(tables, path.parent, env, tokens)
    try:
        return _org_entries(path, shown, tables, places, env, known)
    except ConfigError as exc:  # a message quoting a token it did not expect to: `[token]`
        raise ConfigError(without_tokens(str(exc), known)) from None


def _org_entries(
    path: Path,
    shown: str,
    tables: list[dict[str, Any]],
    places: list[dict[str, str]],
    env: Mapping[str, str],
    known: Mapping[str, str],
) -> tuple[OrgEntry, ...]:
    # What the run writes beside the organizations' folders (summary.json; its temporary file
    # starts with `.`, which no name may): compared without case, as a file system may.
    from auditor.workflows.orgs import ROOT_FILES

    root_files = {name.casefold() for name in ROOT_FILES}
    entries: list[OrgEntry] = []
    for n, table in enumerate(tables):
        where = f"{places[n].get('', shown)}: org[{n}]"
        _refuse_tokens(table, where, places[n], known)
        entry = _org_entry(table, where, path.parent, env, places[n])
        if entry.name.casefold() in root_files:
            raise ConfigError(
                f"{places[n].get('name', where.rpartition(': ')[0])}: org[{n}]: name: "
                f"{entry.name!r} is the name of a file the run writes beside the organizations' "
                "report folders (the summary, compared without case); choose another name"
            )
        # named where its `name` is written, as every other problem of an organization is
        name_at = f"{places[n].get('name', where.rpartition(': ')[0])}: org[{n}] ({entry.name})"
        # Compared case-blind: `Acme` and `acme` would share a report folder and an SQLite
        # file on a case-insensitive file system (macOS, Windows shares).
        first = next(
            (m for m, e in enumerate(entries) if e.name.casefold() == entry.name.casefold()), None
        )
        if first is not None:
            same, other = entries[first].name, places[first].get("name", "")
            at = f" (org[{first}]{', at ' + other if other else ''})"
            raise ConfigError(
                f"{name_at}: name: organization {entry.name!r} is listed twice{at}"
                if same == entry.name
                else f"{name_at}: name: organization {entry.name!r} differs from {same!r}{at} "
                "only in case; their report folders and state files would be the same on a "
                "case-insensitive file system"
            )
        entries.append(entry)
    return tuple(entries)


def _org_tokens(
    tables: list[dict[str, Any]], base: Path, env: Mapping[str, str], tokens: Iterable[str]
) -> dict[str, str]:
    """Every token the file's organizations and the command use, each with the words that
    name it (`org[1]'s token`), read before any organization's keys are checked; a token that
    cannot be read is not one (its organization's own check says why, below)."""
    known: dict[str, str] = {}
    if env.get("AUDITOR_TOKEN", "").strip():
        known[env["AUDITOR_TOKEN"].strip()] = "AUDITOR_TOKEN"
    for token in tokens:
        if token.strip():
            known.setdefault(token.strip(), "the command's token")
    for n, table in enumerate(tables):
        var, file = table.get("token_env"), table.get("token_file")
        found = [env.get(var, "").strip()] if isinstance(var, str) else []
        if isinstance(file, str):  # (both given is refused below, naming the organization)
            with contextlib.suppress(ConfigError, OSError, ValueError):
                found.append(_read_token_file(base / file))
        for token in filter(None, found):
            known.setdefault(token, f"org[{n}]'s token")
    return known


def _refuse_tokens(
    table: dict[str, Any], where: str, at: Mapping[str, str], known: Mapping[str, str]
) -> None:
    """A ConfigError when the `name`, `token_env` or `token_file` of an `[[org]]` table holds
    one of the `known` tokens, or what the detectors take for a secret: shown nowhere (its
    organization is named by its place alone), before anything uses it."""
    header, _, label = where.rpartition(": ")
    for key in ("name", "token_env", "token_file"):
        value = table.get(key)
        if not isinstance(value, str):
            continue
        place = f"{at.get(key, header)}: {label}: {key}"
        held = value if value in known else None
        if held is None and without_tokens(value, known) != value:  # then which one
            held = next(k for k in known if without_tokens(value, [k]) != value)
        if held is not None:
            raise ConfigError(f"{place}: holds {known[held]} (not shown); expected {_WANTED[key]}")
        if (key == "token_file" and shown_path(value) != value) or (
            key != "token_file" and _looks_secret(value)
        ):
            raise ConfigError(f"{place}: expected {_WANTED[key]}, got {_NOT_SHOWN}")


_WANTED = {
    "name": "the organization's name",
    "token_env": "the name of the environment variable that holds the token (such as ACME_TOKEN)",
    "token_file": "the path of the file that holds the token",
}


def _org_entry(
    table: dict[str, Any],
    where: str,
    base: Path,
    env: Mapping[str, str],
    at: Mapping[str, str],
) -> OrgEntry:
    """One `[[org]]` table; `where` names it (`file:line:col: org[N]`, at its header), `at`
    where each of its keys is written, so a problem with a key names that key's line."""
    header, _, label = where.rpartition(": ")

    def key(name: str, org: str = "") -> str:
        return f"{at.get(name, header)}: {label}{org}: {name}"

    name = table.get("name")  # (one that looks like a secret was refused: `_refuse_tokens`)
    if not isinstance(name, str) or not _org_name().match(name):
        raise ConfigError(
            f"{key('name')}: expected 1-63 letters, digits, '.', '_' or '-', the first a letter "
            f"or a digit (it names the organization's report folder), {_name_fault(name)}"
        )
    org = f" ({name})"
    where = f"{where}{org}"
    _reject_unknown(
        table,
        where,
        _ORG_KEYS,
        "never read from a file of settings; give token_env (an environment variable's name) "
        "or token_file",
        at={k: f"{place}: {label}{org}" for k, place in at.items() if k},
    )
    base_url = _as_url(table.get("base_url"), key("base_url", org))
    app_url = _as_url(table["app_url"], key("app_url", org)) if "app_url" in table else None
    if ("token_env" in table) == ("token_file" in table):
        raise ConfigError(f"{where}: give exactly one of token_env and token_file")
    token_file = None
    if "token_file" in table:
        token_file = _as_path(table["token_file"], key("token_file", org), base)
        try:
            token = _read_token_file(token_file)
        except ConfigError as exc:  # (`PATH: cannot read token file: …`) where it is named
            raise ConfigError(f"{key('token_file', org)}: {exc}") from None
    else:
        var = _as_str(table["token_env"], key("token_env", org))  # (checked: `_refuse_tokens`)
        if not env.get(var, "").strip():
            raise ConfigError(f"{key('token_env', org)}: the environment variable {var} is not set")
        try:
            token = _checked_token(env[var].strip(), var)
        except ConfigError as exc:
            raise ConfigError(f"{key('token_env', org)}: {exc}") from None
    return OrgEntry(name, base_url, app_url, token, token_file)


def _array_places(path: Path | str, text: str, name: str) -> list[dict[str, str]]:
    """For each `[[name]]` table of the TOML `text`, in order: `file:line:col` of its header
    (under "") and of each key written in it."""
    tables: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _toml_header().match(line)
        if header:
            current = None
            written = header.group(1).replace(" ", "")
            place = f"{path}:{number}:{line.index('[') + 1}"
            if line.lstrip().startswith("[[") and written == name:
                current = {"": place}
                tables.append(current)
            elif written.startswith(name + ".") and tables:  # `[org.extra]`: a key of the last
                tables[-1].setdefault(written[len(name) + 1 :].split(".")[0].strip('"'), place)
            continue
        key = _toml_key().match(line) if current is not None else None
        if current is not None and key:
            written = next(g for g in key.groups()[1:] if g is not None)
            current.setdefault(written, f"{path}:{number}:{len(key.group(1)) + 1}")
    return tables


def org_config(config: Config, entry: OrgEntry, out_dir: Path) -> Config:
    """The configuration for one organization of an `--orgs` run: its service, token and
    reports folder; its own store: the same PostgreSQL database (the organization's schema
    in it), or an SQLite file of its own beside the configured one (`state-<org>.db`), since
    one SQLite file is locked by one run at a time."""
    path = config.state_path
    return replace(
        config,
        base_url=entry.base_url,
        app_url=entry.app_url,
        token=entry.token,
        token_file=entry.token_file,
        org=entry.name,
        org_given=True,
        out_dir=out_dir,
        state_path=path.with_name(f"{path.stem}-{entry.name}{path.suffix}"),
    )
