"""The Redactor: every layer applied to a JSON value or a text, with markers and memory.

Takes JSON values or text, gives the same with each secret replaced by a marker
`[secret fp:1a2b3c4d len:40]`: a keyed fingerprint (HMAC-SHA256, first 8 hex digits) and the
length, so a rotation stays visible and the value does not. A document is redacted in two
passes: the first finds secrets by meaning, name and value (and remembers them), the second
scrubs every remembered secret from every string and key, so a key pasted into a display name
is caught even when the name comes first. Work is reused: a top-level subtree equal to the one
of the previous document keeps its redacted form, and each distinct string is redacted once;
a document made only of strings already redacted to themselves, under no secret key, is known
from one serialization and handed back as it is (a readiness report, most often).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import math
import operator
import re
import urllib.parse
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from auditor.common.jsonutil import canonical
from auditor.common.lazyre import lazy_regex
from auditor.redact.commands import argv_secrets, is_argv_trigger
from auditor.redact.memory import (
    MAX_HEADER_LINE,
    LiteralMatcher,
    SecretMemory,
    _occurrences,
    cookie_values,
    credential_like,
    literal_matcher,
    percent_upper,
)
from auditor.redact.names import (
    HOSTED_MAP,
    HOSTED_PLAIN,
    is_secret_key,
    is_secret_map,
    names_a_secret,
)
from auditor.redact.own import OwnSecrets
from auditor.redact.plain import (
    MARKER_RE,
    MARKER_START,
    is_env_reference,
    is_marker,
    is_scheme_reference,
)

_CACHE_LIMIT = 200_000  # distinct strings remembered per Redactor (bounded memory)
_CLEAN_DOCS, _CLEAN_DOC_BYTES = 256, 1024  # `Redactor._clean_docs`: how many, how long
_VALUE_CACHES: dict[bytes, dict[str, tuple[str, tuple[str, ...]]]] = {}


# The text between the quotes of every JSON string of orjson's output (escapes kept).
_STRING_TOKEN = lazy_regex(globals(), "_STRING_TOKEN", rb'"([^"\\]*(?:\\.[^"\\]*)*)"')
# Anything orjson would write from a type the walk does not go into (a subclass of str, dict
# or list, a dataclass, a date) raises instead: such a document takes the walk.
_PLAIN = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
_CANONICAL = _PLAIN | orjson.OPT_SORT_KEYS  # `canonical`'s text when nothing passes through


# The secret context of a value: strings under it are secrets (`_SECRET_STRINGS`), numbers too.
_SECRET_STRINGS, _SECRET_NUMBERS = 1, 2
_FINDER: list[Callable[[str, bool], Iterable[str]]] = []  # `values.find_secrets`, once loaded


def _find_secrets(text: str, shown: bool = False) -> Iterable[str]:
    """`values.find_secrets`, imported on first use: detect-secrets' plugins take a tenth of
    a second to load, and a command that redacts nothing new (`run --offline`) never needs
    them."""
    if not _FINDER:
        from auditor.redact.values import find_secrets

        _FINDER.append(find_secrets)
    return _FINDER[0](text, shown)


class _Seen:
    """One node of a redacted document: the value, its redacted form, and (for objects and
    arrays) the same for each child, so the next document of the stream can reuse it."""

    __slots__ = (
        "blob",
        "blobs",
        "canon",
        "kids",
        "names",
        "numbered",
        "numbered_of",
        "numeric",
        "out",
        "pieces",
        "raw",
        "slots",
        "stale",
        "types",
    )

    def __init__(
        self,
        raw: Any,
        out: Any,
        numeric: bool,
        kids: dict[str, _Seen] | list[_Seen] | None = None,
        names: dict[str, str] | None = None,
    ) -> None:
        self.raw = raw
        self.out = out
        self.numeric = numeric  # holds a number or boolean somewhere (`1 == 1.0 == True`)
        self.kids = kids
        self.names = names or _NO_NAMES  # each key's redacted form (before `_unique`)
        self.blob: bytes | None = None
        # An object whose keys all stay as they are: the type of each value, in order, and
        # the keys of the objects and arrays under it that hold numbers (see `_changed_keys`).
        self.types: list[type] | None = None
        self.numbered: list[str] = []
        # A getter of the `numbered` values, in order, and their JSON texts (None: not yet).
        self.numbered_of: Callable[[dict[str, Any]], tuple[Any, ...]] | None = None
        self.blobs: list[bytes | None] | None = None
        self.canon: bytes | None = None  # `canonical(out)`, once asked for
        # An object whose keys all stay as they are, once its canonical text was asked for:
        # each key's place in sorted order and its `"key":value` text there (None: not yet).
        # A tuple, handed to callers as it is (`redact_canonical_parts`): none can change it,
        # so the next document of the stream may share it.
        self.slots: dict[str, int] | None = None
        self.pieces: tuple[bytes, ...] | None = None
        self.stale: list[str] = []  # keys whose piece in `pieces` is the previous document's


#: A string that is an array's element in compact JSON: after `[` or `,`, before `,` or `]`
#: (a key is followed by `:`, an object's value follows one).
_ELEMENT = lazy_regex(globals(), "_ELEMENT", rb'(?<=[\[,])"((?:[^"\\]|\\.)*)"(?=[,\]])')


class _Elements:
    """The strings that are an array's element in `blob` (JSON text between quotes), found in
    one pass the first time one is asked for (a test per string was quadratic in documents
    with many strings naming a command, paths ending in `/config`)."""

    def __init__(self, blob: bytes) -> None:
        self._blob = blob
        self._found: set[bytes] | None = None

    def __contains__(self, token: bytes) -> bool:
        if self._found is None:
            self._found = set(_ELEMENT.findall(self._blob))
        return token in self._found


def _walk_is_cheap(value: Any, prev: _Seen | None) -> bool:
    """Whether the walk from `prev` costs less than `Redactor._unchanged` (which writes the
    whole document and reads every string of it): an object with the keys of `prev`'s, not
    redacted, most of its values the very objects `prev` was made from (a history page read in
    pieces shares what a revision did not change), so `_same_keys` walks only the few others.
    Only speed depends on it: both give the same copy."""
    if prev is None or prev.types is None or type(value) is not dict:
        return False
    raw = prev.raw
    return (
        type(raw) is dict
        and len(value) == len(raw)
        and 2 * sum(map(operator.is_, value.values(), raw.values())) >= len(value)
    )


def _getter(keys: list[str]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A function giving the values of `keys` in a dict, as a tuple (`itemgetter` gives a
    bare value for one key)."""
    if len(keys) > 1:
        return operator.itemgetter(*keys)
    key = keys[0]
    return lambda d: (d[key],)


def _texts(values: tuple[Any, ...]) -> list[bytes | None]:
    """The JSON text of each value (None for a value orjson cannot write: never equal)."""
    try:
        return list(map(orjson.dumps, values))
    except TypeError:
        return [_dumps(v) for v in values]


def _texts_since(
    values: tuple[Any, ...], olds: tuple[Any, ...], blobs: list[bytes | None]
) -> list[bytes | None]:
    """`_texts(values)`, taking the text in `blobs` of each value that is the object in `olds`
    at its place (`blobs` itself when all are: it is not changed later)."""
    fresh = list(itertools.compress(range(len(values)), map(operator.is_not, values, olds)))
    if not fresh:
        return blobs
    if len(fresh) == len(values):
        return _texts(values)
    texts = list(blobs)
    for n, text in zip(fresh, _texts(tuple(map(values.__getitem__, fresh))), strict=True):
        texts[n] = text
    return texts


_NO_KIDS: dict[str, _Seen] = {}
_NO_NAMES: dict[str, str] = {}


def _dumps(value: Any) -> bytes | None:
    try:
        return orjson.dumps(value)
    except TypeError:  # not JSON orjson can write (an integer past 64 bits, a YAML date)
        return None


def _dumps_text(value: Any) -> str | None:
    blob = _dumps(value)
    return None if blob is None else blob.decode()


def _canonical(seen: _Seen) -> bytes:
    """`canonical(seen.out)`, kept on the node. An object whose keys all stay as they are is
    put together from the canonical `"key":value` text of each key, in sorted order (orjson
    sorts keys as Python does, by code point), kept from the previous document for the values
    that did not change, so a reused value is not written again."""
    if seen.canon is not None:
        return seen.canon
    kids = seen.kids
    if seen.types is None or not isinstance(kids, dict) or not kids:
        seen.canon = canonical(seen.out)
        return seen.canon
    if seen.slots is None or seen.pieces is None:
        keys = sorted(kids)
        seen.slots = {k: n for n, k in enumerate(keys)}
        pieces, stale = [b""] * len(keys), keys
    else:  # the previous document's pieces (shared, never changed): those of `stale` go
        pieces, stale = list(seen.pieces), seen.stale
    slots = seen.slots
    for k in stale:
        pieces[slots[k]] = orjson.dumps(k) + b":" + canonical(kids[k].out)
    seen.pieces, seen.stale = tuple(pieces), []
    # one copy of the whole text (`b"{" + b",".join(pieces) + b"}"` made three)
    if len(pieces) == 1:
        seen.canon = b"{" + pieces[0] + b"}"
    else:
        seen.canon = b",".join((b"{" + pieces[0], *pieces[1:-1], pieces[-1] + b"}"))
    return seen.canon


def _same(value: Any, seen: _Seen) -> bool:
    """`value` equals what `seen` was made from, types included (`==` says `1 == 1.0 == True`,
    so a subtree holding numbers is compared as JSON text too). The same object is the same
    at once (parsed values are read-only: a history page read in pieces shares the parts a
    revision did not change, `auditor.fetch.pieces`)."""
    raw = seen.raw
    if value is raw:
        return True
    if type(value) is not type(raw) or value != raw:
        return False
    return seen.kids is None or not seen.numeric or _as_json(value, seen)


def _as_json(value: Any, seen: _Seen) -> bool:
    """`value` (already `==` to what `seen` was made from) is the same JSON text."""
    if seen.blob is None:
        seen.blob = _dumps(seen.raw)
    blob = _dumps(value)
    return blob is not None and blob == seen.blob


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
        # Per stream of documents, the previous one's redaction tree and what memory knew then.
        self._streams: dict[str, tuple[_Seen, int]] = {}
        self._leaves: dict[str, tuple[str, int]] = {}  # string -> (redacted, memory.learned)
        self._markers: dict[str, str] = {}  # a remembered secret -> its marker (`_value_marker`)
        self._again = False  # redacting a stored copy again (`redact_json(again=True)`)
        # Per stream, after `_unchanged` missed: documents to skip, and the current back-off.
        self._waits: dict[str, list[int]] = {}
        # Per stream, the last document `_unchanged` handed back as it is: (the document, the
        # option it was written with, the memory's generation then, its JSON).
        self._last_hits: dict[str, tuple[Any, int, int, bytes]] = {}
        # The strings (JSON text between the quotes) `_unchanged` found left as they are by
        # every layer, while the memory's generation was `_clean_at`.
        self._clean: set[bytes] = set()
        self._clean_at = -1
        # Short documents (an author, most often) `_unchanged` found so, by their JSON, while
        # the memory's generation was `_clean_at`: the same text again is not read again.
        self._clean_docs: set[bytes] = set()
        self._names: set[bytes] = set()  # of those, the names that make their value secret
        self._argv: set[bytes] = set()  # and the options of argv arrays (`--api-key`, `sshpass`)
        # The memos above know secrets by `memory.learned`, which a recalled fingerprint does
        # not move: a recall (the state file's, before the first document as a rule) forgets
        # them all (`_after_recall`).
        self._recalls = 0
        self._scrubbed_before: dict[str, tuple[str, int]] = {}  # `_scrubbed` before a recall
        # Secrets learned after an answer of `_scrub` that held them was given (and maybe
        # stored), kept when that memo entry is replaced by the right answer: the entry itself
        # no longer tells (`stale_secrets`).
        self._stale: set[str] = set()
        # The strings `_unchanged` put in `_scrubbed` for a document it then left to the walk
        # (no answer of theirs was handed out): the walk replacing one is not stale.
        self._probed: set[str] = set()
        # The command's own secrets (`register`), looked for in more forms than the memory's.
        self._own = OwnSecrets()
        for value in known:
            self.register(value)

    def drop_value_layers(self) -> None:
        """Let go of the value layers this key's redactors share (`_VALUE_CACHES`): up to
        `_CACHE_LIMIT` strings, which a new redactor under the same key would otherwise keep."""
        if _VALUE_CACHES.get(self._key) is self._values:
            del _VALUE_CACHES[self._key]
        self._values = {}

    def fingerprint(self, value: str) -> str:
        """Keyed fingerprint of a secret: 8 hex digits of HMAC-SHA256."""
        # (a lone surrogate, which a JSON escape `\ud800` can make, is fingerprinted as
        # itself rather than failing; every other text's bytes are UTF-8's as before)
        data = value.encode("utf-8", "surrogatepass")
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()[:8]

    def marker(self, value: str) -> str:
        """The marker that stands in for `value`."""
        return f"{MARKER_START}{self.fingerprint(value)} len:{len(value)}]"

    def register(self, value: str) -> None:
        """Remember a secret of the command's own (its API token, a token file's, the proxy's
        password) so it is scrubbed from any later text, as `_learn` does, and hidden in the
        other forms a server may echo it in too (`own.OwnSecrets`: hex, another case, split
        by white space, an HTML character reference, reversed, any run of 12 of its
        characters). A secret the data holds is `learn`ed instead: a part of it may be
        ordinary text."""
        self._learn(value)
        if is_marker(value) or is_env_reference(value):
            return
        if self._own.add(value):
            # a memo made before holds the secret's other forms as they were
            self._scrubbed_before.update(self._scrubbed)
            self._scrubbed.clear()
            self._streams.clear()
            self._leaves.clear()
            self.memory.generation += 1  # (`_clean` and `_last_hits` go with it)

    def learn(self, value: str) -> None:
        """Remember a secret of the data (one `SecretMemory.find_glued` found by its
        fingerprint) so it is scrubbed from any later text: as itself and its credential
        part, never by parts as the command's own secrets (`register`) are."""
        self._learn(value)

    def _learn(self, value: str) -> None:
        """Remember a secret so it is scrubbed from any later text, and the credential in it
        on its own (`_credential_parts`: `X` of `Bearer X`), which may be pasted alone later
        (a waiver's owner); one written with percent-escapes (`Kp3%40Vd9`, a basic-auth
        URL's password) as it decodes too (`Kp3@Vd9`), which may be written plainly later."""
        if not is_marker(value) and not is_env_reference(value) and not is_scheme_reference(value):
            self.memory.add(value)
            for part in _credential_parts(value):
                self._remember_part(part)
            if "%" in value:
                decoded = _percent_decoded(value)
                # not one that decodes to a reference (`%24%7BVAR%7D`, `${VAR}`): remembered,
                # every `${VAR}` after would be a marker, a reference read as a literal key
                if decoded is not None and not is_env_reference(decoded) and not is_marker(decoded):
                    self.memory.add(decoded)

    def _remember_part(self, part: str) -> None:
        """Remember a credential taken out of a header value, if it looks like one
        (`credential_like`): an ordinary word (`Bearer YOUR_API_KEY`, `consent=accepted`, the
        `password` of `Basic dXNlcjpwYXNzd29yZA==`) would be scrubbed everywhere after."""
        if credential_like(part) and not is_marker(part) and not is_env_reference(part):
            self.memory.add(part)

    def _remember_cookies(self, value: str) -> None:
        """A cookie header's value hidden whole (`Cookie: session=X; theme=Y`): each cookie's
        value is remembered on its own too."""
        for part in cookie_values(value):
            self._remember_part(part)

    # -- documents ---------------------------------------------------------------------------

    def raw_fingerprint(self, label: str, value: Any) -> str | None:
        """A keyed fingerprint (HMAC-SHA256 under the redaction key) of a raw, unredacted JSON
        value, to recognise an item already stored without redacting it again; never a plain
        hash. While the key sits in the state file (no `AUDITOR_FINGERPRINT_KEY`), a holder of
        the file can still test a guess of a whole raw item, as of a secret (README, Secrets).
        `label`
        names what it is (and the tool version), so no other item or release shares it. None
        when the value cannot be serialized as is (then it is simply redacted)."""
        try:  # keys in the order received: the same item sent again has the same bytes
            body = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return None
        message = label.encode() + b"\0" + body
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def redact_json(self, value: Any, stream: str = "", *, again: bool = False) -> Any:
        """Return a copy of a JSON value with every secret replaced by its marker. `again`:
        `value` is a stored copy, redacted before (`_child`); give it a `stream` of its own.

        Documents of one `stream` (the settings of consecutive revisions, say) are compared
        with the previous one: a subtree equal to the previous document's at the same place
        keeps its redacted form, so only what changed is walked. The copy may share unchanged
        subtrees with earlier results, or be `value` itself when nothing in it is redacted
        (every string one seen before, no secret key): treat both as read-only.

        Contract: `value` is never changed after it is passed in (nor any part of it). The
        redactor takes an object it saw before (the same one, by identity, as a history page
        read in pieces shares) as unchanged: its answer for it, or its subtree's, is reused
        while no secret was learned or recalled since. Change a copy, never the original."""
        self._again = again
        try:
            return self._redact(value, stream)[0]
        finally:
            self._again = False

    def redact_canonical(self, value: Any, stream: str = "") -> tuple[Any, bytes]:
        """`redact_json` and the copy's canonical JSON (`canonical`), for hashing and storing:
        the parts reused from the previous document of the stream are not written again.
        The same contract: `value` and the copy are read-only (see `redact_json`)."""
        out, blob, _parts = self.redact_canonical_parts(value, stream)
        return out, blob

    def redact_canonical_parts(
        self, value: Any, stream: str = ""
    ) -> tuple[Any, bytes, tuple[bytes, ...] | None]:
        """`redact_canonical`, and the parts its JSON was put together from when it is an
        object's: `b"{" + b",".join(parts) + b"}"`, each part a key's canonical `"key":value`
        text, in sorted order (None when the JSON was written whole). The redactor's own
        tuple, which the next document of the stream may share: not a copy. A part the previous
        document of the stream had too is most often the same object (read-only, like the
        copy), so a caller can tell the parts that changed at the cost of an identity test."""
        out, node, blob = self._redact(value, stream, sort=True)
        if blob is not None:
            return out, blob, None
        if node is None:
            return out, canonical(out), None
        blob = _canonical(node)
        if node.slots is None or node.pieces is None or node.stale:
            return out, blob, None
        return out, blob, node.pieces  # a tuple: the caller cannot change the node's parts

    def _redact(
        self, value: Any, stream: str, sort: bool = False
    ) -> tuple[Any, _Seen | None, bytes | None]:
        """The redacted copy, and its node when the copy is that node's `out`, or its JSON
        (canonical when `sort`) when the copy is `value` itself (nothing in it to redact)."""
        self._after_recall()
        self._probed = set()
        since = self.memory.learned
        memo = self._streams.get(stream)
        prev = memo[0] if memo is not None else None
        if memo is not None:
            since = min(since, memo[1])
        if (
            since == self.memory.learned
            and not _walk_is_cheap(value, prev)
            and self._worth_trying(stream)
        ):
            # (else the walk re-checks the parts it reuses for secrets learned since)
            option = _CANONICAL if sort else _PLAIN
            last = self._last_hits.get(stream)
            if (
                last is not None
                and last[0] is value  # the same object again (a page read in pieces shares
                and last[1] == option  # a revision's unchanged user): nothing learned since,
                and last[2] == self.memory.generation  # `_unchanged` gives the same text
            ):
                self._tried(stream, True)
                return value, None, last[3]
            blob = self._unchanged(value, option)
            self._tried(stream, blob is not None)
            if blob is not None:
                self._last_hits[stream] = (value, option, self.memory.generation, blob)
                # Nothing learned, nothing changed: the stream's memo stays as the walk would
                # leave it but for which earlier document its parts come from (the same ones).
                if memo is None:
                    self._streams[stream] = (_Seen(value, value, True), self.memory.learned)
                return value, None, blob
        found: list[str] = []
        node = self._node(value, prev, False, False, found)
        self._probed = set()  # the walk handed out its own answers
        for secret in found:
            self._learn(secret)
        out = node.out
        if self.memory.learned > since and self._holds_new(out, since):
            # A secret learned during this document (or since the previous one) is in a part
            # walked (or reused) before it was known: scrub the whole copy, forget the memo.
            self._streams.pop(stream, None)
            return self._scrub_tree(out), None, None
        self._streams[stream] = (node, self.memory.learned)
        return out, node, None

    def _worth_trying(self, stream: str) -> bool:
        """Whether to try `_unchanged` on the stream's next document: after a miss (a stream
        whose documents hold secrets or new strings) only every 2nd, 4th ... 32nd one, so a
        stream it never serves pays for few serializations. Only speed depends on it."""
        wait = self._waits.get(stream)
        if wait is None or wait[0] == 0:
            return True
        wait[0] -= 1
        return False

    def _tried(self, stream: str, hit: bool) -> None:
        if hit:
            self._waits.pop(stream, None)
        else:
            backoff = min(2 * self._waits.get(stream, [0, 0])[1] or 1, 32)
            self._waits[stream] = [backoff, backoff]

    def _unchanged(self, value: Any, option: int) -> bytes | None:
        """The JSON of `value` (written with `option`) when its redacted copy is `value`
        itself, decided at C speed; None when that is not sure (the walk decides). Sure when
        every string in it, key or value, is left as it is by every layer (one the walk left
        as it is before, with no secret learned since in it, or a new one with no detector hit
        and no remembered secret in it), and no key makes its value secret (a secret name, a
        secret map, a hosted block): then the walk would give `value` and learn nothing. Keys
        are told from values by the `:` after them."""
        try:
            blob = orjson.dumps(value, option=option)
        except TypeError:  # orjson.JSONEncodeError: a type the walk handles, a big integer
            return None
        memory = self.memory
        if self._clean_at != memory.generation:  # a secret learned (or recalled) since
            self._clean, self._clean_at = set(), memory.generation
            self._clean_docs = set()
        if blob in self._clean_docs:  # this very text found so since: the same answer
            return blob
        # Unless a string holds a quote (or ends with a backslash), every quote starts or
        # ends a string.
        escaped = b'\\"' in blob
        tokens = set(_STRING_TOKEN.findall(blob) if escaped else blob.split(b'"')[1::2])
        # A name that makes its value secret is looked up as a key, `"name":` (never found
        # inside a string, where a quote is escaped; found there, it only costs the walk).
        for token in tokens & self._names:
            if b'"' + token + b'":' in blob:
                return None
        elements = _Elements(blob)
        for token in tokens & self._argv:
            if token in elements:
                return None
        unknown = tokens.difference(self._clean)  # most often a few, or none
        leaves, learned = self._leaves, memory.learned
        new: list[str] = []
        probed: list[str] = []
        for token in unknown:
            text = orjson.loads(b'"' + token + b'"') if b"\\" in token else token.decode()
            if is_secret_key(text) or is_secret_map(text) or text == HOSTED_MAP:
                if len(self._names) >= _CACHE_LIMIT or b'"' + token + b'":' in blob:
                    return None
                self._names.add(token)
            if is_argv_trigger(text):  # `--api-key`, `sshpass`: an array's option is walked
                if len(self._argv) >= _CACHE_LIMIT or token in elements:
                    return None
                self._argv.add(token)
            hit = leaves.get(text)
            if hit is None:
                new.append(text)
            elif hit[0] != text:
                return None
            elif hit[1] != learned:
                if not self._still_clean(hit[1], text):
                    return None
                leaves[text] = (text, learned)  # as `_leaf` does
        # A string not seen before goes through `_leaf`'s layers but stops short of learning
        # anything: the document is walked when one holds a secret (nothing learned yet).
        found: list[str] = []
        for text in new:
            if text not in self._scrubbed:
                probed.append(text)
            if self._value_text(text, found) != text or found or self._scrub(text) != text:
                self._probed = set(probed)  # memo entries of answers never handed out
                return None
            if len(leaves) < _CACHE_LIMIT:
                leaves[text] = (text, learned)
        if len(self._clean) < _CACHE_LIMIT:
            self._clean |= unknown
        if len(blob) <= _CLEAN_DOC_BYTES and len(self._clean_docs) < _CLEAN_DOCS:
            self._clean_docs.add(blob)
        return blob

    def _holds_new(self, value: Any, since: int) -> bool:
        text = value if isinstance(value, str) else _dumps_text(value)
        return text is None or self.memory.holds_value(text, since=since)

    def _node(
        self, value: Any, prev: _Seen | None, secret: int, hosted: bool, found: list[str]
    ) -> _Seen:
        """The redacted form of `value` in its context, reusing the parts of `prev` (the same
        place in the previous document) that are the same, types included. The caller has
        compared `value` with `prev` as a whole already (or chose not to: the root)."""
        if isinstance(value, dict):
            if prev is not None and prev.types is not None:
                quick = self._same_keys(value, prev, secret, hosted, found)
                if quick is not None:
                    return quick
            olds, names = _NO_KIDS, _NO_NAMES
            if prev is not None and isinstance(prev.kids, dict):
                olds, names = prev.kids, prev.names
            kids: dict[str, _Seen] = {}
            keys: dict[str, str] = {}
            out: dict[str, Any] = {}
            numeric = False
            for k, v in value.items():
                kid = olds.get(k)
                if kid is None or not _same(v, kid):
                    kid = self._node(v, kid, *_child(k, secret, hosted, self._again), found)
                    if type(v) is str and _is_cookie_key(k) and is_marker(kid.out):
                        self._remember_cookies(v)
                name = names.get(k)
                if name is None:
                    name = self._leaf(k, found)
                kids[k] = kid
                keys[k] = name
                numeric = numeric or kid.numeric
                out[name if name not in out else self._unique(name, out)] = kid.out
            seen = _Seen(value, out, numeric, kids, keys)
            if list(out) == list(value):  # no key redacted: the next one may take `_same_keys`
                seen.types = list(map(type, value.values()))
                seen.numbered = [k for k, kid in kids.items() if kid.numeric and kid.kids]
            return seen
        if isinstance(value, list):
            old = prev.kids if prev is not None and isinstance(prev.kids, list) else []
            # A string keeps its redaction wherever it moved to (an item added in front);
            # anything else is compared with the item at the same place.
            strings = {kid.raw: kid for kid in old if type(kid.raw) is str}
            # An argv-style array (`["sshpass", "-p", X]`): a password option's value is a
            # secret; one that is not (any more) is walked, not given an answer made when it
            # was (a string's answer that is a whole marker is not reused: cheap to make again).
            argv = argv_secrets(value) if not secret and len(value) > 1 else {}
            items: list[_Seen] = []
            for i, v in enumerate(value):
                if i in argv:
                    items.append(self._argv_value(v, argv[i], hosted, found))
                    continue
                kid = strings.get(v) if type(v) is str else None
                if kid is None:
                    kid = old[i] if i < len(old) else None
                    if kid is None or not _same(v, kid):
                        kid = self._node(v, kid, secret, hosted, found)
                if not secret and type(v) is str and MARKER_START in kid.out:  # (maybe argv's)
                    kid = self._node(v, None, secret, hosted, found)
                items.append(kid)
            return _Seen(value, [i.out for i in items], any(i.numeric for i in items), items)
        if isinstance(value, str):
            if secret and value and not is_marker(value) and not is_env_reference(value):
                if is_scheme_reference(value):  # `Bearer ${LLM_TOKEN}`: kept as written
                    return _Seen(value, self._leaf(value, found), False)
                self._learn(value)
                self._learn_inside(value)
                return _Seen(value, self.marker(value), False)
            return _Seen(value, self._leaf(value, found), False)
        if secret == _SECRET_NUMBERS and type(value) in (int, float):
            return _Seen(value, self._secret_number(value), True)
        return _Seen(value, value, value is not None)

    def _learn_inside(self, value: str) -> None:
        """A value hidden whole by meaning (an `env` value) that is more than one token (a
        proxy URL `http://ci:PW@proxy:3128`, a command line `deploy --password PW`): what the
        value layers find in it is remembered on its own too when it looks like a credential
        (`credential_like`: the value is hidden already, and a word remembered would be
        scrubbed everywhere after), so `PW` written elsewhere later is its marker. A single
        token (most secret values) is not read again."""
        if _SEVERAL_TOKENS.search(value) is None:
            return
        inside: list[str] = []
        self._value_text(value, inside)
        for secret in inside:
            # only one that looks like a credential (not `YOUR_API_KEY`)
            if secret != value and credential_like(secret):
                self._learn(secret)
        self._learn_basic(value, inside)

    def _learn_basic(self, text: str, found: list[str]) -> None:
        """`Authorization: Basic X` written in a text (a hook's `curl -H …`) whose `X` a value
        layer found: the password `X` encodes is remembered on its own, as for a header field.
        Only looked for when something was found and the text names the scheme."""
        if not found or "asic" not in text.lower():
            return
        for m in _BASIC_IN_TEXT.finditer(text):
            encoded = m["v"]
            if any(encoded in secret or secret in encoded for secret in found):
                for part in _basic_password(encoded):
                    self._remember_part(part)

    def _argv_value(self, value: str, part: str, hosted: bool, found: list[str]) -> _Seen:
        """An argv-style array's element holding a password option's value (`part`: all of
        it, or the part after an attached option, `-pX`): its marker, remembered."""
        if part == value:
            return self._node(value, None, _SECRET_STRINGS, hosted, found)
        if not is_env_reference(part) and not is_marker(part):
            self._learn(part)
            out = self._leaf(value, found)
            return _Seen(value, out.replace(part, self.marker(part)), False)
        return self._node(value, None, False, hosted, found)

    def _secret_number(self, value: float) -> str:
        """The marker of a number where a secret is (an unquoted PIN that YAML read as a
        number, a numeric key): made from its text, which is remembered as a secret is (when
        long enough, `SecretMemory.add`). A boolean or null there says nothing and stays."""
        text = number_text(value)
        self._learn(text)
        return self.marker(text)

    def _same_keys(
        self, value: dict[str, Any], prev: _Seen, secret: int, hosted: bool, found: list[str]
    ) -> _Seen | None:
        """An object with the same keys, in the same order, as `prev` (none of them redacted)
        and values of the same types: the values that differ are found at C speed (`map`),
        and only they are walked. None when the shape differs (the caller walks every key)."""
        raw, kids = prev.raw, prev.kids
        if list(value) != list(raw) or list(map(type, value.values())) != prev.types:
            return None
        assert isinstance(kids, dict)
        # A value that is the previous one's object is the same (parsed values are read-only:
        # a page read in pieces shares what a revision did not change); only the others are
        # compared, all at C speed.
        moved = list(itertools.compress(value, map(operator.is_not, value.values(), raw.values())))
        if len(moved) == len(value):
            changed = list(
                itertools.compress(value, map(operator.ne, value.values(), raw.values()))
            )
        else:
            news, olds = map(value.__getitem__, moved), map(raw.__getitem__, moved)
            changed = list(itertools.compress(moved, map(operator.ne, news, olds)))
        # `==` holds for `1` and `1.0` (the types above hold for the values at this level
        # only): the values holding numbers below are compared as JSON text too, all in one
        # `map`, against the texts kept from the previous document (a value that is the
        # previous one's object has its text: it is not written again).
        numbered, texts = prev.numbered, None
        if numbered:
            if prev.numbered_of is None:
                prev.numbered_of = _getter(numbered)
            if prev.blobs is None:
                prev.blobs = _texts(prev.numbered_of(raw))
            if set(moved).isdisjoint(numbered):  # each the previous one's object: its text
                texts = prev.blobs
            else:
                texts = _texts_since(prev.numbered_of(value), prev.numbered_of(raw), prev.blobs)
            if texts != prev.blobs or None in texts:  # None: not writable, never the same
                again = set(changed)
                changed += [
                    k
                    for k, new, old in zip(numbered, texts, prev.blobs, strict=True)
                    if (new is None or new != old) and k not in again
                ]
        if not changed:
            seen = _Seen(value, prev.out, prev.numeric, kids, prev.names)
            seen.numbered, seen.numbered_of, seen.blobs = numbered, prev.numbered_of, texts
            seen.canon = prev.canon  # the same copy
        else:
            kids, out = dict(kids), dict(prev.out)
            for k in changed:
                v = value[k]
                kid = self._node(v, kids[k], *_child(k, secret, hosted, self._again), found)
                if type(v) is str and _is_cookie_key(k) and is_marker(kid.out):
                    self._remember_cookies(v)
                kids[k] = kid
                out[k] = kid.out
            # `numeric` may stay true when a changed value lost its numbers: that only costs
            # a JSON comparison later, never a wrong reuse
            numeric = prev.numeric or any(kids[k].numeric for k in changed)
            seen = _Seen(value, out, numeric, kids, prev.names)
            # in the previous document's order, so that most often it is the same list, and
            # its getter and the texts just written serve the next document
            again = set(changed)
            if again.isdisjoint(numbered):  # (most often: no walk over `numbered` needed)
                kept = numbered
            else:
                kept = [k for k in numbered if k not in again or (kids[k].numeric and kids[k].kids)]
            added = [k for k in changed if kids[k].numeric and kids[k].kids and k not in numbered]
            if not added and len(kept) == len(numbered):
                seen.numbered, seen.numbered_of, seen.blobs = numbered, prev.numbered_of, texts
            else:
                seen.numbered = kept + added
        seen.types = prev.types
        if prev.pieces is not None and prev.slots is not None and not prev.stale:
            seen.slots = prev.slots  # the same keys; the pieces of the values that changed go
            seen.pieces = prev.pieces  # (`_canonical` writes them into a new tuple)
            seen.stale = changed
        return seen

    def _leaf(self, text: str, found: list[str]) -> str:
        """A string (value or key) through every layer but names: value detectors, then memory.
        A secret found is remembered at once, so the rest of the document is scrubbed of it.
        Each distinct string is redacted once; its memo is checked only for secrets learned
        since it was made."""
        learned = self.memory.learned
        hit = self._leaves.get(text)
        if hit is not None:
            if hit[1] == learned:
                return hit[0]
            if self._still_clean(hit[1], hit[0]):
                self._leaves[text] = (hit[0], learned)
                return hit[0]
        mark = len(found)
        out = self._value_text(text, found)
        for secret in found[mark:]:
            self._learn(secret)
        if len(found) > mark:
            self._learn_basic(text, found[mark:])
        out = self._scrub(out)
        if len(self._leaves) < _CACHE_LIMIT or text in self._leaves:
            self._leaves[text] = (out, self.memory.learned)
        return out

    def _still_clean(self, known: int, redacted: str) -> bool:
        """A memoised redaction stays right unless a secret learned since shows up in it: only
        the secrets learned after `known` are looked for (the memo entry was checked for all the
        older ones when it was made)."""
        return known == self.memory.learned or not self.memory.holds_value(redacted, since=known)

    def _after_recall(self) -> None:
        """Forgets every memo once a fingerprint was recalled since the last document: a memo
        is checked again only for secrets learned since it was made, and a recalled one is not
        learned (it has no value to look for, only a fingerprint)."""
        if self._recalls != self.memory.recalls:
            self._recalls = self.memory.recalls
            # (what was scrubbed before still counts for `stale_secrets`)
            self._scrubbed_before.update(self._scrubbed)
            self._scrubbed.clear()
            self._streams.clear()
            self._leaves.clear()
            # (`_last_hits` and `_clean` are kept by `memory.generation`, which a recall moves)

    def redact_text(self, text: str) -> str:
        """Scrub a free-text string (log line, error message): every layer but key names."""
        self._after_recall()
        found: list[str] = []
        out = self._value_text(text, found)
        for secret in found:
            self._learn(secret)
        self._learn_basic(text, found)
        return self._scrub(out)

    def literals_hidden(self, literals: Iterable[str]) -> Callable[[str], str] | None:
        """A function giving a text with each of `literals` (a rule's literals compared with
        a value secret by its place, `compared_secret`) in it, in every form the memory of
        secrets finds (raw, JSON-escaped, URL-encoded, base64 …), replaced by its marker
        under this redactor's key (`marker`: the marker a settings value equal to it has);
        None when none can be (shorter than a secret the memory keeps). Nothing is learned
        by this redactor: the literals are known to the function alone, so they hide only
        the texts it is given (that rule's), never a path, a selector, an enum or an id."""
        scratch = Redactor(self._key)
        for literal in literals:
            scratch.memory.add(literal)
        return scratch.scrub_known if scratch.memory.learned else None

    def redact_shown(self, text: str) -> str:
        """Redact a text that is only shown, never stored as data (an error body, a problem's
        title and detail, a header or an address an error echoes, a warning): the value
        detectors and the memory hide what they find, in every form, as `redact_text` does, but
        nothing found is remembered. What a service says about a request must not teach the
        memory: a learned secret goes into the state file's `secret_memory` and every stored
        row holding it is rewritten for good (`Store.scrub_stored`), so a 403 quoting
        `{"token": "curl … | sh"}` hid that command in every stored revision. A word after
        `token`, `Bearer` or `Basic` that says what went wrong (`token expired`: a short list,
        `values._STATUS_WORDS`) is shown (`find_secrets(shown=True)`); the caller's own token
        is always hidden (it is in the memory from the start)."""
        found = [s for s in _find_secrets(text, True) if s]
        out = text
        for secret in found:
            out = out.replace(secret, self.marker(secret))
        if found:  # their other forms (base64, URL-encoded …), by a memory of this text alone
            scratch = Redactor(self._key)
            for secret in found:
                scratch._learn(secret)
            out = scratch._scrub_uncached(out)
        return self._scrub_uncached(out)

    def scrub_known(self, text: str) -> str:
        """Replace every occurrence of a remembered secret in `text` by its marker."""
        self._after_recall()
        return self._scrub(text)

    def stale_secrets(self) -> set[str] | None:
        """Secrets learned after a string holding them was already redacted (and maybe stored):
        what `Store.scrub_stored` must look for. None when the memo overflowed and cannot say."""
        if len(self._scrubbed) >= _CACHE_LIMIT or len(self._scrubbed_before) >= _CACHE_LIMIT:
            return None
        now, found = self.memory.learned, set(self._stale)
        scrubbed = itertools.chain(self._scrubbed.values(), self._scrubbed_before.values())
        for out, known in scrubbed:
            if known < now and self.memory.holds_value(out):
                found |= self.memory.find(out)
        return found

    # -- strings -----------------------------------------------------------------------------

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
            secrets = tuple(_find_secrets(text))
            out = text
            for secret in secrets:
                out = out.replace(secret, self.marker(secret))
            hit = (out, secrets)
            if len(self._values) < _CACHE_LIMIT:
                self._values[text] = hit
        found.extend(hit[1])
        return hit[0]

    # -- memory ------------------------------------------------------------------------

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
            if hit is not None and text not in self._probed:  # the earlier answer, maybe
                self._stale |= self.memory.find(hit[0])  # stored, holds a secret learned since
            out = self._scrub_uncached(text)
        if len(self._scrubbed) < _CACHE_LIMIT or text in self._scrubbed:
            self._scrubbed[text] = (out, self.memory.learned)
        return out

    def _scrub_uncached(self, text: str) -> str:
        out = self._scrub_memory(text)
        return self._own_hidden(out) if self._own else out

    def _own_hidden(self, text: str) -> str:
        """`text` with each stretch holding a form of the command's own secret (`register`)
        that the memory does not know (its hex, a run of 12 of its characters, the secret
        split by a line break …) as that secret's marker, so an error names it `[token]`."""
        if MARKER_START not in text:
            return self._own_parts(text)
        return _between_markers(text, self._own_parts)

    def _own_parts(self, text: str) -> str:
        spans = self._own.spans(text)
        if not spans:
            return text
        parts: list[str] = []
        at = 0
        for start, end, secret in spans:
            parts += [text[at:start], self._value_marker(secret)]
            at = end
        parts.append(text[at:])
        return "".join(parts)

    def _scrub_memory(self, text: str) -> str:
        if MARKER_START not in text:
            hits = self.memory.find(text)
            return self._scrub_plain(text, self._forms_of(hits)) if hits else text
        # A marker of a value this process knows is put back first, where a secret beside it
        # may overlap it (`[marker]-beta-x`, the marker's `alpha-secret-1` and a
        # `secret-1-beta-x` learned since): the two become one marker, no part left in clear.
        shown = self.memory.unmasked(text)
        hits = self.memory.find(shown)
        if not hits:
            return text
        # A marker is left as it is: a secret remembered that is part of a marker's own text
        # (`secret`, `len:40]`) rewrote it, so redacting again nested markers without end.
        # The forms of the hits are made once for every stretch between markers (made per
        # stretch, a text holding N secrets and N markers cost N * N markers: 28 s at 10,000).
        forms = self._forms_of(hits)
        out = _between_markers(shown, lambda part: self._scrub_plain(part, forms))
        return text if out == shown else out

    def _forms_of(self, hits: Iterable[str]) -> _Forms:
        """Every form of `hits`, each with its secret's marker (`_Forms`)."""
        markers: dict[str, str] = {}
        for secret in hits:
            mark = self._value_marker(secret)
            for form in self.memory.forms(secret):
                markers.setdefault(form, mark)
        return _Forms(markers)

    def _value_marker(self, secret: str) -> str:
        """`marker(secret)`, made once per remembered secret (an HMAC each time, otherwise)."""
        hit = self._markers.get(secret)
        if hit is None:
            hit = self.marker(secret)
            if len(self._markers) < _CACHE_LIMIT:
                self._markers[secret] = hit
        return hit

    def _scrub_plain(self, text: str, forms: _Forms) -> str:
        """`text` (no marker in it) with every remembered secret replaced by its marker.

        First, where the text is URL-encoded, each stretch that decodes to a secret (whatever
        escapes it was written with: `%2D` for `-`, every character escaped), overlapping
        secrets as one; then, in the rest, every encoded run of a remembered secret and every
        one of `forms` (the hits'), in one pass (longest first at each place), so no
        replacement is made inside a marker just put in. Last, a guard: a secret the memory
        still finds (behind escapes beside a `|`, a space or a letter no URL holds, say) takes
        the whole text."""
        spans = self.memory.find_percent_runs(text)
        if spans:
            parts: list[str] = []
            at = 0
            for start, end, secret in spans:
                parts += [self._scrub_forms(text[at:start], forms), self.marker(secret)]
                at = end
            parts.append(self._scrub_forms(text[at:], forms))
            out = "".join(parts)
        else:
            out = self._scrub_forms(text, forms)
        # The guard: a part the memory still finds a secret in (one known by fingerprint that
        # a replacement just set apart, say) goes through the forms again, a few times; only
        # a part that still holds one then takes the whole text with it.
        for _ in range(_GUARD_ROUNDS):
            if not self._holds_secret(out):
                return out
            out = _between_markers(
                out, lambda part: self._scrub_forms(part, self._forms_of(self.memory.find(part)))
            )
        return self.marker(text) if self._holds_secret(out) else out

    def _holds_secret(self, text: str) -> bool:
        """The memory finds a secret in a part of `text` outside its markers."""
        return any(self.memory.find(part) for part in MARKER_RE.split(text)[::3] if part)

    def _scrub_forms(self, text: str, forms: _Forms) -> str:
        """`text` with every encoded run of a remembered secret and every one of `forms`
        (raw, JSON-escaped, URL-encoded, base64) replaced by its marker. Forms that overlap
        (`alpha-secret-1` and `secret-1-beta-x` in `alpha-secret-1-beta-x`) are one stretch
        and one marker, that of the form that covers it, else of the stretch's own text: no
        part of a secret is left beside a marker."""
        if not text:
            return text
        runs = {run: self.marker(run) for run in self.memory.find_encoded_runs(text)}
        # (an encoded run's own marker stands before a form's that is the same text)
        markers: Mapping[str, str] = ChainMap(runs, forms.markers) if runs else forms.markers
        found = [run for run in runs if run]
        found += [form for form in forms.present(text) if form not in runs]
        if "%" in text:
            found += forms.percent_present(text, set(found))
        if not found:
            return text
        parts: list[str] = []
        at = 0
        for start, end, whole in _scrub_stretches(text, found):
            stretch = text[start:end]
            parts += [
                text[at:start],
                _marker_of(stretch, markers) if whole else self.marker(stretch),
            ]
            at = end
        parts.append(text[at:])
        return "".join(parts)


_FEW_FORMS = 64  # forms looked for one by one (`str.__contains__`); more, by one automaton


class _Forms:
    """The forms of a set of secrets (raw, JSON-escaped, URL-encoded, base64), each with its
    secret's marker, made once for every stretch of a text they are looked for in; which of
    them a stretch holds is found in one pass over it (an automaton, built when first needed)
    when they are many, so a text holding N secrets costs time in proportion to N and its
    length, not their product."""

    __slots__ = ("_matcher", "_percent", "_upper", "_upper_matcher", "forms", "markers")

    def __init__(self, markers: dict[str, str]) -> None:
        self.markers = markers
        self.forms = [form for form in markers if form]
        self._percent = [form for form in self.forms if "%" in form]
        self._matcher: LiteralMatcher | None = None
        # each percent-encoded form by its escapes' hex digits in upper case
        self._upper: dict[str, list[str]] | None = None
        self._upper_matcher: LiteralMatcher | None = None

    def present(self, text: str) -> list[str]:
        """The forms `text` holds, each once."""
        if len(self.forms) <= _FEW_FORMS:
            return [form for form in self.forms if form in text]
        if self._matcher is None:
            self._matcher = literal_matcher(self.forms)
        return list(dict.fromkeys(text[at : at + n] for at, n in self._matcher.spans(text)))

    def percent_present(self, text: str, taken: set[str]) -> list[str]:
        """The percent-encoded forms not in `taken` that `text` holds with its escapes' hex
        digits in another case (`%2b%2F` for `%2B%2F`): the case of those digits means
        nothing."""
        if not self._percent:
            return []
        upper = percent_upper(text)
        if len(self._percent) <= _FEW_FORMS:
            return [f for f in self._percent if f not in taken and percent_upper(f) in upper]
        if self._upper is None:
            self._upper = {}
            for form in self._percent:
                self._upper.setdefault(percent_upper(form), []).append(form)
            self._upper_matcher = literal_matcher(self._upper)
        assert self._upper_matcher is not None
        held = {upper[at : at + n] for at, n in self._upper_matcher.spans(upper)}
        return [f for up in held for f in self._upper[up] if f not in taken]


def _between_markers(text: str, scrub: Callable[[str], str]) -> str:
    """`text` with `scrub` applied to each stretch outside its markers (a marker as it is)."""
    parts: list[str] = []
    at = 0
    for found in MARKER_RE.finditer(text):
        parts += [scrub(text[at : found.start()]), found[0]]
        at = found.end()
    parts.append(scrub(text[at:]))
    return "".join(parts)


_GUARD_ROUNDS = 3  # forms passes the guard runs again before it hides the whole text
_PERCENT_ESCAPE = lazy_regex(globals(), "_PERCENT_ESCAPE", r"%[0-9A-Fa-f]{2}")


_ONE_BY_ONE = 8  # forms found in a text one by one (`str.find`); more, by one automaton


def _scrub_stretches(text: str, forms: list[str]) -> list[tuple[int, int, bool]]:
    """Where `forms` are in `text`, every place each is (overlapping ones too), as stretches
    (start, end, whether one form is the whole stretch): forms that overlap make one stretch,
    in order, none overlapping. The forms are found in one pass of an automaton (one by one
    when they are few); only a percent-encoded form, its escapes in any case, by a regex."""
    plain = [form for form in forms if "%" not in form]
    if len(plain) > _ONE_BY_ONE:  # one pass of an automaton over the text for all of them
        spans = [(start, start + n) for start, n in literal_matcher(plain).spans(text)]
    else:
        spans = [(at, at + n) for form in plain for at, n in _occurrences(form, text)]
    for form in forms:  # a percent-encoded form's escapes match in any case: a regex
        if "%" in form:
            pattern = re.compile(f"(?=({_form_pattern(form)}))")
            spans += [(m.start(), m.start() + len(m[1])) for m in pattern.finditer(text)]
    stretches: list[tuple[int, int, bool]] = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        if stretches and start < stretches[-1][1]:  # overlaps the stretch before
            first, last, _ = stretches[-1]
            if end > last:  # and goes on past it: the stretch grows, no form is all of it
                stretches[-1] = (first, end, False)
        else:
            stretches.append((start, end, True))
    return stretches


def _form_pattern(form: str) -> str:
    """A regex for `form` whose percent-escapes match in any case."""
    if "%" not in form:
        return re.escape(form)
    parts = _PERCENT_ESCAPE.split(form)
    escapes = _PERCENT_ESCAPE.findall(form)
    out = [re.escape(parts[0])]
    for esc, part in zip(escapes, parts[1:], strict=True):
        out += ["%(?i:" + esc[1:] + ")", re.escape(part)]
    return "".join(out)


def _marker_of(text: str, markers: Mapping[str, str]) -> str:
    """The marker for a matched form (its percent-escapes maybe in another case)."""
    hit = markers.get(text)
    if hit is None:
        hit = markers.get(percent_upper(text))
    if hit is None:
        hit = markers[_PERCENT_ESCAPE.sub(lambda m: m[0].lower(), text)]
    return hit


def number_text(value: float) -> str:
    """A number's text as JSON writes it (`48213907765`, `1.5`); an integer too long for a
    decimal text (over 4,300 digits) in hexadecimal."""
    if isinstance(value, float):  # as orjson writes it (`1e-7`, `0.000025`), not repr's `1e-07`
        return orjson.dumps(value).decode() if math.isfinite(value) else repr(value)
    try:
        return str(value)
    except ValueError:
        return hex(value)


# A credential after its scheme (`Authorization: Bearer X`, `Basic X`, `token X`) is remembered
# on its own as well as with its scheme: pasted alone it is found too.
_AUTH_VALUE = re.compile(
    r"(?i)\s*(?:(?:proxy-)?authorization:\s*)?"
    r"(?P<scheme>bearer|basic|token|bot|jwt|apikey|api-key|key|negotiate|ntlm|oauth)"
    r"\s+(?P<v>\S+)\s*"
)
_COOKIE_HEADER = re.compile(r"(?i)\s*(?:set-)?cookie:\s*")


def _credential_parts(value: str) -> list[str]:
    """The credentials inside a secret header value, each on its own: `X` of `Bearer X` (and
    of `Basic X` the password `X` encodes, `user:password`, or its user when there is no
    password, `token:`), each cookie's value of a `Cookie:
    a=X; b=Y` / `Set-Cookie: a=X; Path=/` line."""
    if len(value) > MAX_HEADER_LINE:
        return []
    auth = _AUTH_VALUE.fullmatch(value)
    if auth is not None:
        parts = [auth["v"]]
        if auth["scheme"].lower() == "basic":
            parts += _basic_password(auth["v"])
        return parts
    header = _COOKIE_HEADER.match(value)
    if header is None:
        return []
    return cookie_values(value[header.end() :], folded="set-" in header[0].lower())


# A value of several tokens: white space, a `user@`, or an `=` before more text
_SEVERAL_TOKENS = re.compile(r"[\s@]|=[^=]")
# `Basic X` in a text (`curl -H 'Authorization: Basic X'`)
_BASIC_IN_TEXT = lazy_regex(
    globals(), "_BASIC_IN_TEXT", r"(?i)\bbasic\s+(?P<v>[A-Za-z0-9+/]{8,}={0,2})"
)


def _percent_decoded(value: str) -> str | None:
    """`value` with its percent-escapes decoded, when it has one and they decode to UTF-8."""
    try:
        decoded = urllib.parse.unquote(value, errors="strict")
    except UnicodeDecodeError:
        return None
    return decoded if decoded != value else None


def _basic_password(encoded: str) -> list[str]:
    try:
        pair = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return []
    user, colon, password = pair.partition(":")
    if colon and password:
        return [password]
    # `token:` or `token` alone: an API key sent as the user name (Stripe's `sk_…:`, a PAT);
    # a short one is a user's name (`ci-bot-2`), not remembered on its own
    return [user] if len(user) >= 16 else []


def _is_cookie_key(key: str) -> bool:
    """A key for a cookie header's value (`Cookie`, `Set-Cookie`, `sessionCookie`)."""
    return key[-7:].lower().endswith(("cookie", "cookies"))


#: The shortest literal a part of a secret value is compared with that is hidden
#: (`compared_secret`): a passphrase's length in `credential_like`.
_PART_SECRET_LEN = 16


def compared_secret(value: str, part: bool = False) -> bool:
    """Whether a rule's literal compared with a value secret by its place (an `apiKey`, an
    `env` value: `secret_place`) is hidden in that rule's texts (`Redactor.literals_hidden`):
    only one that may be a credential (`credential_like`, as for a credential taken out of a
    header value: not `true`, a word, a placeholder, `us-east-1`), never a reference
    (`${VAR}`) nor text that speaks of markers (`[secret`); `part` (a literal a part of the
    value is compared with: `starts_with`, `contains`) from 16 characters on, so a key's
    prefix (`sk-live-`) stays as written."""
    if part and len(value) < _PART_SECRET_LEN:
        return False
    if MARKER_START[:7] in value or is_env_reference(value) or is_scheme_reference(value):
        return False
    return credential_like(value)


#: Where a value sits in a document, as the redactor reads it: (secret, hosted) of `_child`.
Place = tuple[int, bool]
#: A document's root: nothing secret yet.
ROOT: Place = (0, False)


def child_place(key: str | None, place: Place) -> Place:
    """The place of the value under `key` of an object at `place` (`_child`); `key` None is
    any key (`[*]` over an object): secret where the object's every value is (under `env`,
    in a `hosted` block). An array's element sits at the array's place."""
    if key is not None:
        return _child(key, *place)
    secret, hosted = place
    return (_SECRET_NUMBERS, False) if secret or hosted else (0, False)


def secret_place(place: Place) -> bool:
    """Whether a string at `place` is hidden whole by its place (`apiKey`, an `env` value)."""
    return bool(place[0])


def _child(key: str, secret: int, hosted: bool, again: bool = False) -> tuple[int, bool]:
    """The context a value under `key` is redacted in: (secret, hosted). Everything under a
    secret key is secret, so are a secret map's values and a hosted block's credentials.
    `secret` is `_SECRET_NUMBERS` where a number is a secret too: under a secret map, a hosted
    credential or a key whose last word names a secret (`apiKey`, `dbPassword`), not under one
    that only mentions one (`passwordMaxAge`, `maxAuthAttempts`: settings, not secrets).

    `again`: the document is a stored copy redacted again (`Store.scrub_stored`), whose keys
    may hold markers where a secret was hidden. Such a key is in its parent's context (a
    hosted block's credential's still): a value its words hid as the key came in is a marker
    already, and no other is, so the row stays what its item gives. Judged by its words, the
    marker's own (`secret`) hid `high` under `ghp_…`, and the next sync, reading the same item
    again, found it "changed after it was stored", a false `AUDITOR-INTEGRITY-001`. A key of
    the API's data that holds marker text is judged by its words, as is a policy's path
    (`child_place`), which may name a secret place so."""
    if again and MARKER_START in key:
        return (_SECRET_NUMBERS, False) if hosted else (secret, False)
    if secret == _SECRET_NUMBERS or is_secret_map(key) or (hosted and key not in HOSTED_PLAIN):
        return _SECRET_NUMBERS, key == HOSTED_MAP
    if is_secret_key(key):
        return (_SECRET_NUMBERS if names_a_secret(key) else _SECRET_STRINGS), key == HOSTED_MAP
    return secret, key == HOSTED_MAP
