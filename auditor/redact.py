"""Secret redaction: applied to every value on its way into the store, a Change, a Finding, a log
line or an error message.

Takes JSON values or text, gives the same with each secret replaced by a marker
`[secret fp:1a2b3c4d len:40]`: a keyed fingerprint (HMAC-SHA256, first 8 hex digits) and the
length, so a rotation stays visible and the value does not. Environment references (`${VAR}`,
`$VAR`, `${{ secrets.X }}`) are not secrets and are kept verbatim.

What counts as a secret, without hard-coding the settings shape:
- a string under a key whose name says secret (`apiKey`, `token`, `password`, `authorization` …);
- every string inside a map named `env`, `environment`, `headers` or `extraHeaders` (at any depth);
- credentials inside any string: URL user-info passwords, secret-named query parameters,
  `Bearer`/`Basic` tokens, `--token VALUE` flags, `SECRET_NAME=value` assignments, secret-named
  HTTP header lines, and well-known token formats (`sk-…`, `ghp_…`, `AKIA…`, JWTs …);
- any of the above values pasted anywhere else in the same document (e.g. into a display name).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
from collections.abc import Callable, Iterable
from typing import Any

import orjson

MARKER_RE = re.compile(r"\[secret fp:(?P<fp>[0-9a-f]{8}) len:(?P<len>\d+)\]")
_MARKER_PREFIX = "[secret fp:"

_ENV_REF = re.compile(
    r"""^(?:\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[-=?+][^}]*)?\}   # ${VAR}, ${VAR:-x}
         |\$[A-Za-z_][A-Za-z0-9_]*                          # $VAR
         |\$\{\{\s*[A-Za-z0-9_.\-\[\]'"]+\s*\}\}            # ${{ secrets.X }}
         |\{env:[A-Za-z_][A-Za-z0-9_]*\}                    # {env:VAR}
         |%[A-Za-z_][A-Za-z0-9_]*%)$                        # %VAR%
    """,
    re.VERBOSE,
)

_SECRET_KEY = re.compile(
    r"(?i)(?:api[_-]?key|apikey|secret|passw(?:or)?d|passphrase|token|authorization|"
    r"credentials?|private[_-]?key|access[_-]?key|client[_-]?secret|cookie|signature|"
    r"x-api-key|bearer)$|^(?:key|auth)$"
)
_SECRET_MAPS = frozenset({"env", "environment", "headers", "extraheaders", "httpheaders"})

_SECRET_NAME = (
    r"[A-Za-z0-9_\-]*(?:token|secret|passw(?:or)?d|api[_\-]?key|apikey|access[_\-]?key|"
    r"private[_\-]?key|credential|auth|signature|sig|key)"
)
_VALUE = r"(?P<v>[^\s'\"&;|,)]+)"

# Each pattern has exactly one group named `v`: the secret part to replace.
_INLINE_PATTERNS: tuple[re.Pattern[str], ...] = (
    # scheme://user:password@host
    re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s/:@'\"]+:(?P<v>[^\s/@'\"]+)@"),
    # ?token=…&api_key=…
    re.compile(rf"(?i)[?&]{_SECRET_NAME}={_VALUE}"),
    # Authorization: Bearer xyz / Basic xyz / Token xyz
    re.compile(r"(?i)\b(?:bearer|basic|token)\s+(?P<v>[A-Za-z0-9_\-.~+/=:]{6,})"),
    # Header lines such as X-Api-Key: xyz, Private-Token: xyz
    re.compile(rf"(?i)\b{_SECRET_NAME}\s*:\s*(?P<v>[^\s'\"]{{6,}})"),
    # --token xyz, --password=xyz, -p xyz is too ambiguous and is left alone
    re.compile(rf"(?i)--{_SECRET_NAME}(?:=|\s+){_VALUE}"),
    # GITHUB_TOKEN=xyz, export API_KEY="xyz"
    re.compile(rf"(?i)\b{_SECRET_NAME}=[\"']?(?P<v>[^\s'\"&;|]+)"),
    # well-known token formats
    re.compile(
        r"(?P<v>\b(?:sk-[A-Za-z0-9_\-]{16,}|sk_(?:live|test)_[A-Za-z0-9]{16,}"
        r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{20,}"
        r"|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}"
        r"|eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}))"
    ),
)

_CACHE_LIMIT = 200_000  # strings remembered per Redactor (bounded memory)
_JSON_PLAIN = re.compile(r'^[^"\\\x00-\x1f]*$')  # serializes to JSON unchanged
_MIN_KNOWN_LEN = 6  # shorter "secrets" are too likely to be ordinary words to scrub everywhere


def is_env_reference(value: str) -> bool:
    """True for `${VAR}`, `$VAR`, `${{ secrets.X }}` and similar references, which are kept."""
    return bool(_ENV_REF.match(value.strip()))


def is_marker(value: object) -> bool:
    """True when `value` is exactly one redaction marker."""
    return isinstance(value, str) and MARKER_RE.fullmatch(value) is not None


def marker_fingerprint(value: str) -> str | None:
    """The fingerprint inside a marker string, or None if `value` is not a marker."""
    m = MARKER_RE.fullmatch(value)
    return m["fp"] if m else None


def is_secret_key(name: str) -> bool:
    """True when a JSON key's name says its string value is a secret."""
    return bool(_SECRET_KEY.search(name))


_secret_key_cached = functools.lru_cache(maxsize=4096)(is_secret_key)

_INLINE_CACHES: dict[bytes, dict[str, tuple[str, tuple[str, ...]]]] = {}
# Every inline pattern needs one of these; most strings (names, ids, flags) have none.
_INLINE_TRIGGER = re.compile(
    r"[=:@]|--|sk[-_]|gh[pousr]_|github_pat_|glpat-|xox|AKIA|AIza|eyJ|(?i:bearer|basic|token)\s"
)


class Redactor:
    """Replaces secrets with keyed-fingerprint markers and remembers them to scrub text later."""

    def __init__(self, key: bytes, known: Iterable[str] = ()) -> None:
        if not key:
            raise ValueError("redaction key must not be empty")
        self._key = key
        self._known: set[str] = set()
        self._known_re: re.Pattern[str] | None = None
        # Revisions repeat almost all of their strings: remember what each one redacted to.
        # The inline result depends only on the key and the text, so redactors share it.
        self._inline_cache = _INLINE_CACHES.setdefault(key, {})
        self._scrub_cache: dict[str, str] = {}
        for value in known:
            self.register(value)

    def fingerprint(self, value: str) -> str:
        """Keyed fingerprint of a secret: 8 hex digits of HMAC-SHA256."""
        return hmac.new(self._key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:8]

    def marker(self, value: str) -> str:
        """The marker that stands in for `value`."""
        return f"[secret fp:{self.fingerprint(value)} len:{len(value)}]"

    def register(self, value: str) -> None:
        """Remember a secret (e.g. the API token) so it is scrubbed from any later text."""
        if len(value) >= _MIN_KNOWN_LEN and not is_marker(value) and value not in self._known:
            self._known.add(value)
            self._known_re = None
            self._scrub_cache.clear()

    def redact_json(self, value: Any) -> Any:
        """Return a copy of a JSON value with every secret replaced by its marker."""
        found: list[str] = []
        out = self._walk(value, in_secret_map=False, secret_key=False, found=found)
        for secret in found:
            self.register(secret)
        if not self._known or not self._may_contain_known(out):
            return out
        return self._walk_strings(out, self.scrub_known)

    def _may_contain_known(self, value: Any) -> bool:
        """Cheap pre-check: does any remembered secret occur in the serialized document?"""
        blob = orjson.dumps(value).decode("utf-8")
        return any(secret in blob or not _JSON_PLAIN.match(secret) for secret in self._known)

    def redact_text(self, text: str) -> str:
        """Scrub a free-text string (log line, error message): inline credentials, known secrets."""
        return self.scrub_known(self._redact_inline(text, []))

    def scrub_known(self, text: str) -> str:
        """Replace every occurrence of a remembered secret in `text` by its marker."""
        if not self._known or len(text) < _MIN_KNOWN_LEN:
            return text
        hit = self._scrub_cache.get(text)
        if hit is not None:
            return hit
        if self._known_re is None:
            alts = sorted(self._known, key=len, reverse=True)
            self._known_re = re.compile("|".join(re.escape(a) for a in alts))
        out = self._known_re.sub(lambda m: self.marker(m.group(0)), text)
        if len(self._scrub_cache) < _CACHE_LIMIT:
            self._scrub_cache[text] = out
        return out

    def _walk(self, value: Any, *, in_secret_map: bool, secret_key: bool, found: list[str]) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in value.items():
                out[k] = self._walk(
                    v,
                    in_secret_map=in_secret_map or k.lower() in _SECRET_MAPS,
                    secret_key=_secret_key_cached(k),
                    found=found,
                )
            return out
        if isinstance(value, list):
            return [
                self._walk(v, in_secret_map=in_secret_map, secret_key=secret_key, found=found)
                for v in value
            ]
        if isinstance(value, str):
            if (in_secret_map or secret_key) and value and not is_marker(value):
                if is_env_reference(value):
                    return value
                found.append(value)
                return self.marker(value)
            return self._redact_inline_cached(value, found)
        return value

    def _redact_inline_cached(self, text: str, found: list[str]) -> str:
        hit = self._inline_cache.get(text)
        if hit is None:
            secrets: list[str] = []
            hit = (self._redact_inline(text, secrets), tuple(secrets))
            if len(self._inline_cache) < _CACHE_LIMIT:
                self._inline_cache[text] = hit
        found.extend(hit[1])
        return hit[0]

    def _redact_inline(self, text: str, found: list[str]) -> str:
        if len(text) < _MIN_KNOWN_LEN or not _INLINE_TRIGGER.search(text):
            return text
        for pattern in _INLINE_PATTERNS:
            text = pattern.sub(self._inline_replacer(found), text)
        return text

    def _inline_replacer(self, found: list[str]) -> Callable[[re.Match[str]], str]:
        def replace(m: re.Match[str]) -> str:
            secret = m["v"]
            if secret.startswith(_MARKER_PREFIX[: len(secret)]) or is_env_reference(secret):
                return m.group(0)
            if MARKER_RE.match(m.string, m.start("v")):
                return m.group(0)
            found.append(secret)
            start, end = m.start("v") - m.start(), m.end("v") - m.start()
            whole = m.group(0)
            return whole[:start] + self.marker(secret) + whole[end:]

        return replace

    def _walk_strings(self, value: Any, fn: Callable[[str], str]) -> Any:
        if isinstance(value, dict):
            return {fn(k): self._walk_strings(v, fn) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk_strings(v, fn) for v in value]
        if isinstance(value, str):
            return fn(value)
        return value
