"""The Redactor: every layer applied to a JSON value or a text, with markers and memory.

Takes JSON values or text, gives the same with each secret replaced by a marker
`[secret fp:1a2b3c4d len:40]`: a keyed fingerprint (HMAC-SHA256, first 8 hex digits) and the
length, so a rotation stays visible and the value does not. A document is redacted in two
passes: the first finds secrets by meaning, name and value (and remembers them), the second
scrubs every remembered secret from every string and key, so a key pasted into a display name
is caught even when the name comes first. Work is reused: a top-level subtree equal to the one
of the previous document keeps its redacted form, and each distinct string is redacted once.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import Any

import orjson

from auditor.redact.memory import SecretMemory
from auditor.redact.names import HOSTED_MAP, HOSTED_PLAIN, is_secret_key, is_secret_map
from auditor.redact.plain import is_env_reference, is_marker
from auditor.redact.values import find_secrets

_CACHE_LIMIT = 200_000  # distinct strings remembered per Redactor (bounded memory)
_VALUE_CACHES: dict[bytes, dict[str, tuple[str, tuple[str, ...]]]] = {}


class Redactor:
    """Replaces secrets with keyed-fingerprint markers and remembers them to scrub text later."""

    def __init__(self, key: bytes, known: Iterable[str] = ()) -> None:
        if not key:
            raise ValueError("redaction key must not be empty")
        self._key = key
        self.memory = SecretMemory(key)
        # The value layers depend only on the key and the text, so redactors share them.
        self._values = _VALUE_CACHES.setdefault(key, {})
        # Memo entries carry how many secrets were known when made: a newer secret only needs
        # a substring check of the memoised result, not a new redaction.
        self._scrubbed: dict[str, tuple[str, int]] = {}
        self._subtrees: dict[str, tuple[bytes, int, Any]] = {}
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
        if not is_marker(value) and not is_env_reference(value):
            self.memory.add(value)

    # -- documents ---------------------------------------------------------------------------

    def redact_json(self, value: Any) -> Any:
        """Return a copy of a JSON value with every secret replaced by its marker."""
        if not isinstance(value, dict):
            return self._redact_whole(value)
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out_key = self._unique(self._scrub(self._key_text(key, [])), out)
            out[out_key] = self._subtree(key, sub)
        return out

    def _subtree(self, key: str, value: Any) -> Any:
        """A top-level subtree, reused when it equals the previous document's (same memory)."""
        if not isinstance(value, dict | list | str) or (isinstance(value, str) and not value):
            return value
        if isinstance(value, str):
            return self._redact_whole({key: value})[key]
        blob = orjson.dumps(value)
        hit = self._subtrees.get(key)
        learned = self.memory.learned
        if hit is not None and hit[0] == blob and self._still_clean(hit[1], hit[2]):
            self._subtrees[key] = (blob, learned, hit[2])
            return hit[2]
        out = self._redact_whole({key: value})[key]
        self._subtrees[key] = (blob, self.memory.learned, out)
        return out

    def _still_clean(self, known: int, redacted: Any) -> bool:
        """A memoised redaction stays right unless a secret learned since shows up in it: only
        the secrets learned after `known` are looked for (the memo entry was checked for all the
        older ones when it was made)."""
        if known == self.memory.learned:
            return True
        text = redacted if isinstance(redacted, str) else orjson.dumps(redacted).decode()
        return not self.memory.holds_value(text, since=known)

    def _redact_whole(self, value: Any) -> Any:
        found: list[str] = []
        out = self._walk(value, secret=False, hosted=False, found=found)
        for secret in found:
            self.register(secret)
        return self._scrub_tree(out) if self.memory else out

    def redact_text(self, text: str) -> str:
        """Scrub a free-text string (log line, error message): every layer but key names."""
        found: list[str] = []
        out = self._value_text(text, found)
        for secret in found:
            self.register(secret)
        return self._scrub(out)

    def scrub_known(self, text: str) -> str:
        """Replace every occurrence of a remembered secret in `text` by its marker."""
        return self._scrub(text)

    def stale_secrets(self) -> set[str] | None:
        """Secrets learned after a string holding them was already redacted (and maybe stored):
        what `Store.scrub_stored` must look for. None when the memo overflowed and cannot say."""
        if len(self._scrubbed) >= _CACHE_LIMIT:
            return None
        now, found = self.memory.learned, set()
        for out, known in self._scrubbed.values():
            if known < now and self.memory.holds_value(out):
                found |= self.memory.find(out)
        return found

    # -- first pass: meaning, name and value -------------------------------------------------

    def _walk(self, value: Any, *, secret: bool, hosted: bool, found: list[str]) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in value.items():
                child_secret = secret or is_secret_key(k) or (hosted and k not in HOSTED_PLAIN)
                out[self._unique(self._key_text(k, found), out)] = self._walk(
                    v,
                    secret=child_secret or is_secret_map(k),
                    hosted=k == HOSTED_MAP,
                    found=found,
                )
            return out
        if isinstance(value, list):
            return [self._walk(v, secret=secret, hosted=hosted, found=found) for v in value]
        if isinstance(value, str):
            if secret and value and not is_marker(value) and not is_env_reference(value):
                found.append(value)
                return self.marker(value)
            return self._value_text(value, found)
        return value

    def _key_text(self, key: str, found: list[str]) -> str:
        """An object key, scanned like a value; a key that is wholly a secret becomes a marker."""
        return self._value_text(key, found)

    def _unique(self, key: str, taken: dict[str, Any]) -> str:
        """Two keys redacted to the same text stay two keys."""
        candidate, n = key, 1
        while candidate in taken:
            n += 1
            candidate = f"{key} #{n}"
        return candidate

    def _value_text(self, text: str, found: list[str]) -> str:
        hit = self._values.get(text)
        if hit is None:
            secrets = tuple(find_secrets(text))
            out = text
            for secret in secrets:
                out = out.replace(secret, self.marker(secret))
            hit = (out, secrets)
            if len(self._values) < _CACHE_LIMIT:
                self._values[text] = hit
        found.extend(hit[1])
        return hit[0]

    # -- second pass: memory -----------------------------------------------------------------

    def _scrub_tree(self, value: Any) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in value.items():
                out[self._unique(self._scrub(k), out)] = self._scrub_tree(v)
            return out
        if isinstance(value, list):
            return [self._scrub_tree(v) for v in value]
        if isinstance(value, str):
            return self._scrub(value)
        return value

    def _scrub(self, text: str) -> str:
        hit = self._scrubbed.get(text)
        if hit is not None and self._still_clean(hit[1], hit[0]):
            out = hit[0]
        else:
            out = self._scrub_uncached(text)
        if len(self._scrubbed) < _CACHE_LIMIT or text in self._scrubbed:
            self._scrubbed[text] = (out, self.memory.learned)
        return out

    def _scrub_uncached(self, text: str) -> str:
        hits = self.memory.find(text)
        if not hits:
            return text
        for run in self.memory.find_encoded_runs(text):
            text = text.replace(run, self.marker(run))
        for secret in sorted(hits, key=len, reverse=True):
            for form in self.memory.forms(secret):
                text = text.replace(form, self.marker(secret))
        return text
