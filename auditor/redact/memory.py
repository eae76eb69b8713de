"""Secrets by memory: every value once found secret, recognised wherever it shows up later.

Takes secret values (as they are found) and remembered fingerprints (from the state file),
gives the secrets hidden in a later string, in raw, URL-encoded, JSON-escaped or base64 form.
Two recognisers: the values seen by this process, matched exactly anywhere; and the keyed
fingerprints of earlier runs (never the values), matched by fingerprinting each stretch of
text of a remembered length that starts and ends at a word boundary.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import hashlib
import hmac
import itertools
import json
import re
import urllib.parse
from collections.abc import Container, Iterable, Iterator
from typing import Any

import ahocorasick  # no stubs (mypy override in pyproject); memory linear in the values

from auditor.common.lazyre import lazy_regex
from auditor.redact.plain import MARKER_RE, MARKER_START

MIN_SECRET_LEN = 6  # shorter "secrets" are too likely to be ordinary words to scrub everywhere
# A secret made only of digits (a PIN, a numeric key) is remembered from 8 digits on: a
# shorter run of digits is in too many dates, ports, counts and ids to be scrubbed everywhere.
MIN_NUMERIC_SECRET_LEN = 8
_NUMERIC = re.compile(r"[-+]?[0-9][0-9.eE+\-]*")
_MAX_WINDOWS = 20_000  # fingerprints tried per string at most (bounds the cost of a long text)
_GLUED_WINDOWS = 16 * 65_536  # `find_glued`'s stretches tried at most: 16 lengths of 64 KB, ~1 s
_B64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{12,}={0,2}")
# The base64 of a secret of 6 to 8 characters is 8 to 11 (`U3VtbWVyMjY=`, `Summer26`): runs
# that short are read only while a secret shorter than `_B64_SHORT_SECRET` is remembered
# (every word of 8 letters is one).
_B64_SHORT_RUN = re.compile(r"[A-Za-z0-9+/_\-]{8,}={0,2}")
_B64_SHORT_SECRET = 9  # characters: 9 bytes at least, whose base64 is 12 characters
# Maximal runs of URL text (unreserved characters, sub-delimiters but `&`, `: / @` and
# escapes: one pass, no backtracking), so a query's parameters are runs of their own;
# `find_percent_runs` looks only at those holding an escape.
_PERCENT_RUN = lazy_regex(
    globals(), "_PERCENT_RUN", r"(?:[A-Za-z0-9._~!$'()*+,;=:@/-]|%[0-9A-Fa-f]{2})+"
)
_PERCENT_UNIT = lazy_regex(
    globals(), "_PERCENT_UNIT", r"%[0-9A-Fa-f]{2}|.", re.S
)  # one byte of a run each
_PERSON = b"auditor-memory"
_URLSAFE = str.maketrans("-_", "+/")
_a2b_base64 = binascii.a2b_base64
_B64_RUNS_KEPT = 8192  # base64 runs whose decoding is kept (`_b64_run`): 1.3 MB of 30-letter runs
_B64_KEPT_LEN = 256  # the longest run kept: 8,192 of them at most ~2.5 MB (run and decoding)
_RECENT = 32  # values learned since the last rebuild of the one-automaton matcher
_PERCENT = re.compile(r"%[0-9a-fA-F]{2}")  # a percent-escape; its hex digits in either case
# A character beside a marker that a secret overlapping the marker's value may go on with
# (not a space, a quote, a bracket or a separator of values).
JOINS = re.compile(r"[^\s\"'`<>()\[\]{},;|]")


class LiteralMatcher:
    """Any of a set of literal strings, found in linear time with memory linear in the set.

    An Aho-Corasick automaton (no DFA cache to grow, unlike one big regex alternation); its
    `iter_long` is not used because it misses matches (pyahocorasick issues 185, 189)."""

    def __init__(self, literals: Iterable[str]) -> None:
        self._automaton: Any = None
        automaton = ahocorasick.Automaton(ahocorasick.STORE_LENGTH)
        for literal in literals:
            if literal:
                automaton.add_word(literal)
        if len(automaton):
            automaton.make_automaton()
            self._automaton = automaton

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Every place in `text` a literal starts, with its length, overlapping ones too."""
        if self._automaton is None:
            return []
        return [(end + 1 - n, n) for end, n in self._automaton.iter(text)]

    def search(self, text: str) -> bool:
        """True when `text` holds any of the literals."""
        if self._automaton is None:
            return False
        return next(self._automaton.iter(text), None) is not None

    def findall(self, text: str) -> list[str]:
        """The literals in `text`, leftmost first, longest at each place, never overlapping
        (what a regex alternation of the literals, longest first, finds)."""
        return leftmost_longest(text, self.spans(text))


def leftmost_longest(text: str, spans: Iterable[tuple[int, int]]) -> list[str]:
    """The pieces of `text` at `spans` (start, length) a regex alternation of them, longest
    first, would find: leftmost first, the longest at each place, never overlapping."""
    found, upto = [], 0
    for start, minus_n in sorted((start, -n) for start, n in spans):
        if start >= upto:
            upto = start - minus_n
            found.append(text[start:upto])
    return found


def _occurrences(literal: str, text: str) -> list[tuple[int, int]]:
    """Every place `literal` starts in `text`, with its length (a repeat may overlap the one
    before)."""
    found = []
    at = text.find(literal)
    while at >= 0:
        found.append((at, len(literal)))
        at = text.find(literal, at + 1)
    return found


def literal_matcher(literals: Iterable[str]) -> LiteralMatcher:
    """One matcher for any of `literals`."""
    return LiteralMatcher(literals)


class GrowingMatcher:
    """Any of a growing set of literal strings, cheap to grow and to search.

    The newest few literals are searched one by one; older ones sit in a few automata of
    doubling sizes (each literal is rebuilt into a bigger one O(log n) times, not on every
    growth step), so neither a search nor a growth step costs in proportion to the set."""

    def __init__(self) -> None:
        self._levels: list[tuple[list[str], LiteralMatcher]] = []
        self._recent: list[str] = []

    def add(self, literal: str) -> None:
        """Add one literal."""
        self._recent.append(literal)
        if len(self._recent) < _RECENT:
            return
        merged, self._recent = self._recent, []
        while self._levels and len(self._levels[-1][0]) <= len(merged):
            merged = self._levels.pop()[0] + merged
        self._levels.append((merged, literal_matcher(merged)))

    def search(self, text: str) -> bool:
        """True when `text` holds any of the literals."""
        return any(map(text.__contains__, self._recent)) or any(
            m.search(text) for _, m in self._levels
        )

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Every place in `text` a literal starts, with its length, overlapping ones too."""
        found: list[tuple[int, int]] = []
        for lit in self._recent:
            found += _occurrences(lit, text)
        for _, matcher in self._levels:
            found += matcher.spans(text)
        return found


# A Set-Cookie header's attributes: where and how long a cookie lives, not a secret of it.
_COOKIE_ATTRIBUTES = frozenset(
    {
        "path",
        "domain",
        "expires",
        "max-age",
        "samesite",
        "secure",
        "httponly",
        "priority",
        "partitioned",
        "version",
        "comment",
    }
)
MAX_HEADER_LINE = 16_384  # a longer value is no header line: not taken apart


def credential_like(text: str) -> bool:
    """Whether a value taken out of a header (a cookie's, `X` of `Bearer X`, Basic's password)
    may be a credential rather than a word, a setting or a placeholder, which would be
    remembered and scrubbed everywhere after, keys included: not a word (`accepted`,
    `english`, `password`, `acceptEdits`: letters with two capitals at most), not a
    placeholder in capitals (`YOUR_API_KEY`), not a few words or short numbers joined
    (`no-cache`, `us-east-1`, `en_US.UTF-8`, `v2.3.1`, `Europe/Berlin`; a passphrase of 16
    characters or more is taken), not a time zone name of any length
    (`America/Los_Angeles`), not a short number (a count, a Unix time: digits only need 16).
    Anything else of 6 characters or more is taken."""
    if len(text) < 6:
        return False
    if text.isdigit():
        return len(text) >= 16
    if _WORD.fullmatch(text):
        return sum(c.isupper() for c in text) > 2
    if _PLACEHOLDER.fullmatch(text):
        return False
    if _TIME_ZONE.fullmatch(text):  # `America/Los_Angeles`, `America/Argentina/Buenos_Aires`
        return False
    return not (_JOINED_WORDS.fullmatch(text) and len(text) < 16)


_WORD = re.compile(r"[A-Za-z]+")
# An IANA time zone name (a cookie `tz=America/Los_Angeles`), of any length: an area, then
# places in capitals with letters, `_` and `-` (`Etc/GMT+5` too). No credential.
_TIME_ZONE = re.compile(
    r"(?:Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Brazil|Canada|Chile|Europe"
    r"|Indian|Mexico|Pacific|US)(?:/[A-Z][A-Za-z_-]*){1,2}|Etc/(?:GMT[+-][0-9]{1,2}|[A-Z]+)"
)
_PLACEHOLDER = re.compile(r"[A-Z_]+")
# words (each maybe ending in a digit or two) and short numbers joined: `no-cache`,
# `us-east-1`, `en_US.UTF-8`, `v2.3.1`, `ci-bot-2`, a time zone `Europe/Berlin`
_JOINED_WORDS = re.compile(
    r"(?i)(?:[a-z]+[0-9]{0,2}|[0-9]{1,4})(?:[-_./](?:[a-z]+[0-9]{0,2}|[0-9]{1,4}))+"
)


def cookie_values(text: str, folded: bool = False) -> list[str]:
    """The value of each cookie in a Cookie / Set-Cookie header value (`session=X; theme=Y`),
    each up to a space, that looks like a credential (`credential_like`); not the names nor a
    Set-Cookie's attributes (`Path=/`, `Domain=example.com`). Remembered on their own: `X` may
    be pasted alone. `folded`: the value of a Set-Cookie line, which may hold several headers
    folded into one (`a=X, b=Y`)."""
    if len(text) > MAX_HEADER_LINE:
        return []
    values = []
    for piece in (_COOKIE_SPLIT if folded else _COOKIE_PIECES).split(text):
        name, equals, value = piece.partition("=")
        name = name.strip()
        if not equals or not name or " " in name or name.lower() in _COOKIE_ATTRIBUTES:
            continue
        words = value.split(None, 1)
        # a quoted value (`id="X"`, `id=\"X\"` inside a quoted argument) is X
        value = words[0].rstrip(",").strip('\\"') if words else ""
        if credential_like(value):
            values.append(value)
    return values


# Cookies are split at `;`; a Set-Cookie line also at `, ` before a `name=` (Set-Cookie headers
# folded into one line, `a=X, b=Y`; an `Expires=Wed, 21 Oct 2015 …` date has no `=` after its
# comma). A Cookie header is never folded so: a comma there is the value's.
_COOKIE_PIECES = lazy_regex(globals(), "_COOKIE_PIECES", r";")
_COOKIE_SPLIT = lazy_regex(globals(), "_COOKIE_SPLIT", r";|,\s*(?=[^\s=;,]+=)")


def memory_key(key: bytes) -> bytes:
    """The BLAKE2b key for memory fingerprints, derived from the redaction key."""
    return hashlib.sha256(b"auditor secret memory\x00" + key).digest()


def encoded_forms(secret: str) -> list[str]:
    """The ways a secret can be written into text: raw, JSON-escaped, URL-encoded, base64,
    base64 URL-encoded (a query string's `UGE1NXdvcmQ%2BMjAyNiE%3D`), hex (either case),
    reversed; URL-encoded or JSON-escaped twice."""
    raw = secret.encode("utf-8")
    b64 = base64.b64encode(raw).decode()
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote(secret),
        urllib.parse.quote_plus(secret),
        b64,
        b64.rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        # its hex (either case) and the secret reversed, as a server's error or a settings
        # text may quote it (tester T97 #3: hidden for the caller's token, not for a learned
        # secret, in errors, reports, the state file and the bundle)
        raw.hex(),
        raw.hex().upper(),
        secret[::-1],
    }
    if "=" in b64 or "+" in b64 or "/" in b64:
        forms |= {urllib.parse.quote(b64, safe=""), urllib.parse.quote(b64)}
    # percent-encoding's hex digits are case-insensitive (RFC 3986): `%2b` is `%2B`
    forms |= {_PERCENT.sub(_lower, f) for f in forms if "%" in f}
    # URL-encoded twice (a URL carried in another URL's query: `%252B`), JSON-escaped twice (a
    # JSON text held in a JSON string, `\\u00e9`): only a secret with a character either
    # escapes has these forms
    forms |= {f.replace("%", "%25") for f in forms if "%" in f}
    forms |= {json.dumps(f)[1:-1] for f in forms if "\\" in f and "%" not in f}
    return sorted((f for f in forms if f), key=len, reverse=True)


def decoded_holding(secrets: Iterable[str], text: str) -> list[str]:
    """The lines of `text` (stored pieces of text, one a line) that hold one of `secrets` only
    in a form decoding finds (escapes no `encoded_forms` entry has, `%2D` for `-` or every
    character `%XX` or `\\u00XX`; base64 from another byte than the secret's first, or of a
    short secret), for a search of stored rows by literal forms (`Store.scrub_stored`) to
    look for as well. Only a line holding an escape or a run of a secret's base64 (one of
    `b64_cores`), found in one pass over the whole text, is decoded."""
    memory = SecretMemory(b"decoded pieces")
    for secret in secrets:
        memory.add(secret)
    cores = [c for v in memory.learned_since(0) for c in b64_cores(v)]
    places = [m.start() for m in _MAY_ESCAPE.finditer(text)] if _may_escape(text) else []
    read = _standard(text)
    if len(cores) > _FEW_CORES:
        places += [start for start, _n in literal_matcher(cores).spans(read)]
    else:  # (a search each is quicker, and most are in no text)
        places += [at for c in cores if c in read for at, _n in _occurrences(c, read)]
    found = []
    for start in sorted({text.rfind("\n", 0, at) + 1 for at in places}):
        end = text.find("\n", start)
        line = text[start : len(text) if end < 0 else end]
        if memory.holds_value(line):
            found.append(line)
    return found


# Where a stored text may hold an escape that hides a secret from its forms: a percent-escape,
# or a JSON escape other than a quote's or a backslash's (those are in `encoded_forms`).
_MAY_ESCAPE = lazy_regex(globals(), "_MAY_ESCAPE", r'%[0-9A-Fa-f]{2}|\\[^"\\]')
_FEW_CORES = 48  # up to this many base64 cores, one search each beats building an automaton


# A stretch of a printed line between white space and quotes (`SecretMemory.hidden`).
_WORDLIKE = lazy_regex(globals(), "_WORDLIKE", r"[^\s\"'`]+")


def _may_escape(text: str) -> bool:
    return "%" in text or "\\" in text


def _standard(text: str) -> str:
    """`text` with URL-safe base64's `-` and `_` read as `+` and `/` (`_URLSAFE`; `replace`
    is 60 times quicker than `translate` on a long text)."""
    return text.replace("-", "+").replace("_", "/") if "-" in text or "_" in text else text


def _lower(m: re.Match[str]) -> str:
    return m[0].lower()


def _upper(m: re.Match[str]) -> str:
    return m[0].upper()


def percent_upper(text: str) -> str:
    """`text` with the hex digits of every percent-escape in upper case (`%2b` -> `%2B`), so a
    form of a secret is found whatever case its escapes were written in."""
    return _PERCENT.sub(_upper, text) if "%" in text else text


def _boundaries(text: str) -> list[int]:
    """The places in `text` (0 to its length) that are not inside a run of letters and digits
    (`str.isalnum`, which `_ALNUM_RUN` matches character for character): every place but
    those between two such characters."""
    found: list[int] = []
    at = 0
    for m in _ALNUM_RUN.finditer(text):
        start, end = m.span()
        found += range(at, start + 1)
        at = end
    found += range(at, len(text) + 1)
    return found


def _boundary_mask(text: str) -> int:
    """`_boundaries(text)` as the bits of a number: bit i set when place i is one."""
    places = bytearray(b"1") * (len(text) + 1)
    for m in _ALNUM_RUN.finditer(text):
        start, end = m.span()
        places[start + 1 : end] = b"0" * (end - start - 1)  # inside the run: no boundary
    return int(places[::-1], 2)


# A run of characters each `str.isalnum` (`\w` is those and `_`; checked for every code point)
_ALNUM_RUN = re.compile(r"[^\W_]+")


class _Boundaries:
    """The boundaries of a long text (over `_LISTED_LEN` characters), found one at a time: a
    search stops after `_MAX_WINDOWS` tries, and the list and set of all of a 4 MB `a-a-a-…`
    value's 4 million positions took 300 MB."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __iter__(self) -> Iterator[int]:
        return (i for i in range(len(self.text) + 1) if i in self)

    def __contains__(self, i: object) -> bool:
        text = self.text
        if not isinstance(i, int) or not 0 <= i <= len(text):
            return False
        return i in (0, len(text)) or not (text[i - 1].isalnum() and text[i].isalnum())


#: Texts up to this length have their boundaries listed at once (faster; a few MB at most).
_LISTED_LEN = 65_536


def _b64_decoded(text: str, runs: re.Pattern[str] = _B64_RUN) -> Iterator[str]:
    for run in runs.findall(text):
        for _piece, decoded in _b64_pieces(run):
            yield decoded


def _b64_sources(text: str) -> Iterator[str]:
    """The texts base64 runs are read in: `text`, and `text` URL-decoded (base64 in a query
    string is written with `%2B`, `%2F` and `%3D`, which break its run: `UGE1NXdvcmQ%2BMjAy`;
    twice where a `%25` is) or JSON-unescaped (`\\/`, `\\u002B`); each that differs."""
    yield text
    if "%" in text:
        once = urllib.parse.unquote(text)
        if once != text:
            yield once
            if "%25" in text:
                twice = urllib.parse.unquote(once)
                if twice != once:
                    yield twice
    if "\\" in text:
        plain = _json_unescape(text)
        if plain != text:
            yield plain
            # JSON-escaped twice, as `decodings` reads it: the item's JSON text and the scrub
            # index's pieces hold a string's own `\/` or `\u002B` (PHP's, .NET's) escaped
            # once more, and its base64 run stayed broken (review R44 #1)
            if "\\" in plain:
                twice = _json_unescape(plain)
                if twice != plain:
                    yield twice


def _b64_pieces(run: str) -> tuple[tuple[str, str], ...]:
    """The pieces of a base64 run that decode (to UTF-8 text), with their decodings: the run
    itself first, then each stretch of it that starts at its start or after a `/`, `-`, `_`
    or `+` and ends at its end or before one (`_b64_cuts`), as a base64 text written after a
    path, a prefix or a word (`https://host/acme/<b64>`, `u-<b64>`, `usr_<b64url>`) is part
    of a longer run and decodes only on its own. A short run's are kept (ids and words recur
    in every item); a long one's (an embedded image) are made each time, so the cache stays
    small."""
    return _b64_run(run) if len(run) <= _B64_KEPT_LEN else _b64_decode_pieces(run)


@functools.lru_cache(maxsize=_B64_RUNS_KEPT)
def _b64_run(run: str) -> tuple[tuple[str, str], ...]:
    """`_b64_decode_pieces`, kept for the next text (runs of up to `_B64_KEPT_LEN`
    characters): the same words and ids recur in every item of a listing (the nightly's 100
    stored reports hold 9,539 runs, 482 distinct; its 100 revisions 19,413, 133 distinct),
    and most do not decode."""
    return _b64_decode_pieces(run)


def _b64_decode_pieces(run: str) -> tuple[tuple[str, str], ...]:
    whole = _b64_decode(run)
    found = [] if whole is None else [(run, whole)]
    for start, end in _b64_cuts(run):
        piece = run[start:end]
        decoded = _b64_decode(piece)
        if decoded is not None:
            found.append((piece, decoded))
    return tuple(found)


_B64_CUT = re.compile(r"[-/_+]")
_B64_PAIRED_CUTS = 8  # up to this many cuts, every stretch between two; more, only the ends
_B64_MIN_PIECE = 8  # the base64 of the shortest secret remembered (6 characters), unpadded


def _b64_cuts(run: str) -> list[tuple[int, int]]:
    """Where the stretches of a base64 run that `_b64_pieces` decodes on their own are: from
    its start or a cut (after a `/`, `-`, `_` or `+`) to its end or a cut (before one), the
    run itself left out; each of 8 characters or more and of a length base64 can have (not
    4n + 1). Between any two cuts when they are few; when more (a long path), only from the
    start or to the end. A long run (over `_B64_KEPT_LEN`) has only its first and last piece
    looked at, each when short: an embedded image is not decoded again at each of its
    hundreds of `+` and `/`."""
    n = len(run)
    if n > _B64_KEPT_LEN:  # (its cuts are not listed: `a-a-a-…` has a million)
        first = _B64_CUT.search(run)
        if first is None:
            return []
        last = max(run.rfind(c) for c in "-/_+")
        pairs = [(0, first.start()), (last + 1, n)]
        pairs = [(a, b) for a, b in pairs if b - a <= _B64_KEPT_LEN]
        return [(a, b) for a, b in pairs if b - a >= _B64_MIN_PIECE and (b - a) % 4 != 1]
    cuts = [m.start() for m in _B64_CUT.finditer(run)]
    if not cuts:
        return []
    if len(cuts) <= _B64_PAIRED_CUTS:
        starts = [0, *(c + 1 for c in cuts)]
        ends = [*cuts, n]
        pairs = [(a, b) for a in starts for b in ends if b > a]
    else:
        pairs = [(0, c) for c in cuts] + [(c + 1, n) for c in cuts]
    return [
        (a, b)
        for a, b in pairs
        if (a, b) != (0, n) and b - a >= _B64_MIN_PIECE and (b - a) % 4 != 1
    ]


def _b64_decode(run: str) -> str | None:
    """A base64 run decoded to text, None when it is not base64 of UTF-8.
    (`base64.b64decode(padded, validate=True)` is this call after its own checks of the
    argument, which a run, ASCII by its pattern, never needs.)"""
    padded = (run + "=" * (-len(run) % 4)).translate(_URLSAFE)
    try:
        return _a2b_base64(padded, strict_mode=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


def b64_cores(value: str) -> list[str]:
    """The base64 every encoding of `value`'s UTF-8 has, wherever it starts in the bytes
    encoded: for each of the 3 places it can start within a group of 3 bytes, the base64 of
    the whole groups it fills (a value of 6 bytes or more fills one at least). A base64 text
    (`+` and `/`) that decodes to bytes holding the value holds one of these: each group of 3
    bytes is 4 characters of its own. Empty for a value of fewer than 5 bytes (none is kept)."""
    data = value.encode("utf-8", "surrogatepass")
    cores = []
    for skip in range(3):
        whole = (len(data) - skip) // 3 * 3
        if whole <= 0:
            return []
        cores.append(base64.b64encode(data[skip : skip + whole]).decode("ascii"))
    return cores


class SecretMemory:
    """Remembered secrets: values for this process, keyed fingerprints for the state file."""

    def __init__(self, key: bytes) -> None:
        self._key = memory_key(key)
        self._redaction_key = key  # for the markers of the values (`by_marker`)
        # Keyed once: a copy of this state fingerprints a value without hashing the key's block
        # again (a nightly fingerprints ~30,000 stretches of text: 24 ms of BLAKE2b, 15 so).
        self._keyed = hashlib.blake2b(key=self._key, person=_PERSON, digest_size=16)
        self._values: set[str] = set()
        self._order: list[str] = []  # values in the order they were learned
        self.learned = 0  # how many values were learned so far (a position for `learned_since`)
        self._forms: dict[str, list[str]] = {}
        self._cores_of: dict[str, list[str]] = {}  # `_value_cores`
        # For a few values learned last: position -> (every form of the values learned after
        # it, their base64 cores, the shortest of those values), while `learned` is `_since_at`.
        self._since: dict[int, tuple[list[str], list[str], int]] = {}
        self._since_at = 0
        self._fingerprints: dict[str, int] = {}
        self._lengths: set[int] = set()
        self._pending: dict[str, int] = {}
        self._unrecalled: set[str] = set()  # values new to the state file's memory
        self._exact = GrowingMatcher()  # the values
        self._shortest = 0  # the shortest value (every form is at least as long)
        # The base64 runs read: the short ones too once a secret that short is remembered.
        self._b64_runs = _B64_RUN
        self.generation = 0  # grows whenever something new is remembered
        self.recalls = 0  # grows whenever `recall` brings a new fingerprint
        self._by_marker: dict[str, str] = {}  # `by_marker`: value by its marker
        self._marked = 0  # values in `_by_marker` (the first ones learned)
        self._learned_at: dict[str, int] = {}  # value -> its position in `_order`
        # `_b64_cores`: the matcher, made when `learned` was `_cores_at`; the characters of
        # text looked at since it was out of date
        self._cores: LiteralMatcher | None = None
        self._cores_at = -1
        self._cores_credit = 0

    def fingerprint(self, value: str) -> str:
        """The keyed fingerprint kept in the state file (32 hex digits of keyed BLAKE2b)."""
        digest = self._keyed.copy()
        digest.update(value.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def __bool__(self) -> bool:
        return bool(self._values or self._fingerprints)

    @property
    def size(self) -> int:
        """How many distinct secrets are remembered (recalled or learned); it only grows, so
        two equal sizes over the life of one state file mean the same memory."""
        return len(self._fingerprints)

    def add(self, value: str) -> bool:
        """Remember a secret value; True when it was new."""
        if len(value) < MIN_SECRET_LEN or value in self._values:
            return False
        numeric = _NUMERIC.fullmatch(value) is not None
        if numeric and sum(c.isdigit() for c in value) < MIN_NUMERIC_SECRET_LEN:  # `-1234567`
            return False
        self._values.add(value)
        self._learned_at[value] = len(self._order)
        self._order.append(value)
        self.learned = len(self._order)
        self._exact.add(value)
        self._shortest = min(self._shortest or len(value), len(value))
        if len(value) < _B64_SHORT_SECRET:
            self._b64_runs = _B64_SHORT_RUN
        fp = self.fingerprint(value)
        if fp not in self._fingerprints:
            self._fingerprints[fp] = len(value)
            self._lengths.add(len(value))
            self._pending[fp] = len(value)
            self._unrecalled.add(value)
        self.generation += 1
        return True

    def recall(self, fingerprints: Iterable[tuple[str, int]]) -> None:
        """Load fingerprints remembered by earlier runs (from the state file)."""
        for fp, length in fingerprints:
            if fp not in self._fingerprints:
                self._fingerprints[fp] = length
                self._lengths.add(length)
                if length < _B64_SHORT_SECRET:
                    self._b64_runs = _B64_SHORT_RUN
                self.generation += 1
                self.recalls += 1

    def unsaved_values(self) -> list[str]:
        """The values learned whose fingerprints are not yet drained for the state file
        (`drain`), in the order they were learned."""
        if not self._pending:
            return []
        return [v for v in self._order if self.fingerprint(v) in self._pending]

    def drain(self) -> list[tuple[str, int]]:
        """Fingerprints learned since the last drain, for the state file."""
        out, self._pending = list(self._pending.items()), {}
        return out

    def undrain(self, drained: list[tuple[str, int]]) -> None:
        """`drained` (what `drain` gave) to be kept again: the transaction that was to keep
        them in the state file was rolled back."""
        self._pending = {**dict(drained), **self._pending}

    def by_marker(self) -> dict[str, str]:
        """The values this process learned, by their marker (the redactor's, under the same
        key): to put a value back in a text that shows it as its marker, where a secret learned
        since overlaps it. Grown as values are learned."""
        if self._marked < len(self._order):
            for value in self._order[self._marked :]:
                self._by_marker.setdefault(self._marker(value), value)
            self._marked = len(self._order)
        return self._by_marker

    def _marker(self, value: str) -> str:
        """`Redactor.marker(value)`: 8 hex digits of HMAC-SHA256 under the redaction key."""
        data = value.encode("utf-8", "surrogatepass")
        digest = hmac.new(self._redaction_key, data, hashlib.sha256).hexdigest()[:8]
        return f"{MARKER_START}{digest} len:{len(value)}]"

    def unmasked(self, text: str) -> str:
        """`text` with each marker of a value this process learned put back as the value,
        where the marker is joined to more text of a word (`JOINS` right before or after it):
        only there can a secret overlap the value."""
        known = self.by_marker()
        if not known:
            return text

        def back(m: re.Match[str]) -> str:
            hit = known.get(m[0])
            if hit is None:
                return m[0]
            joined = JOINS.match(text[m.start() - 1 : m.start()]) or JOINS.match(text, m.end())
            return hit if joined else m[0]

        return MARKER_RE.sub(back, text)

    def learned_since(self, position: int) -> list[str]:
        """The values learned after `position`."""
        return self._order[position:]

    def forms(self, value: str) -> list[str]:
        """`encoded_forms(value)`, computed once per value."""
        found = self._forms.get(value)
        if found is None:
            found = self._forms[value] = encoded_forms(value)
        return found

    def _value_cores(self, value: str) -> list[str]:
        """`b64_cores(value)`, computed once per value."""
        found = self._cores_of.get(value)
        if found is None:
            found = self._cores_of[value] = b64_cores(value)
        return found

    def holds_value(self, text: str, since: int = 0) -> bool:
        """True when `text` holds a value seen by this process (learned after position `since`)
        raw, URL-encoded, JSON-escaped or base64-encoded, as `find` sees them (to re-check a
        memoised redaction after new secrets were learned).

        Text redacted when the first `since` values were known holds none of them, so all
        values are looked for at once, in one automaton of the values (not of every encoded
        form: that one took 9 times the memory): the answer is the same."""
        if len(self._order) <= since or len(text) < self._shortest:
            return False
        if self._holds_value(text, since):
            return True
        # a value learned since that overlaps one shown as its marker (`[marker]-beta-x`, the
        # marker's `alpha-secret-1` and a `secret-1-beta-x`): part of it is in clear
        if MARKER_START not in text:
            return False
        return self._overlaps_marked(text, since)

    def _overlaps_marked(self, text: str, since: int) -> bool:
        """A value learned after position `since` overlaps (is not inside) one that `text`
        shows as its marker joined to more text: a part of the newer value is in clear."""
        known = self.by_marker()
        if not known:
            return False
        parts: list[str] = []
        spans: list[tuple[int, int]] = []  # where values were put back, in the text made
        at = size = 0
        for m in MARKER_RE.finditer(text):
            hit = known.get(m[0])
            if hit is None or not (
                JOINS.match(text[m.start() - 1 : m.start()]) or JOINS.match(text, m.end())
            ):
                continue
            parts += [text[at : m.start()], hit]
            size += m.start() - at
            spans.append((size, size + len(hit)))
            size += len(hit)
            at = m.end()
        if not spans:
            return False
        shown = "".join([*parts, text[at:]])
        # The spans are in order and apart, so their ends are in order too: the first one a
        # value overlaps is found by bisection (not every span tried for every value: 200 KB
        # of `docker login -p` took 19 s), and a value inside it overlaps no other.
        starts = [s for s, _e in spans]
        ends = [e for _s, e in spans]
        for start, n in self._value_spans(shown):
            end = start + n
            i = bisect.bisect_right(ends, start)  # the first span ending after `start`
            if i == len(spans) or starts[i] >= end:
                continue  # overlaps no span
            if starts[i] <= start and end <= ends[i]:
                continue  # inside one value put back: nothing of it in clear
            if self._learned_at.get(shown[start:end], 0) >= since:
                return True
        return False

    def _holds_value(self, text: str, since: int) -> bool:
        # a value's hex (in any case) or the value reversed, as `find` finds them: a memoised
        # redaction made before it was learned was shown with it in clear (reviewer R90 #1)
        if self._exact.search(text[::-1]) or any(
            self._exact.search(decoded)
            for m in _HEX_RUN.finditer(text)
            for decoded in hex_decodings(m[0])
        ):
            return True
        if len(self._order) - since <= 4:  # a few: one by one is quicker than the automaton
            forms, cores, shortest = self._forms_since(since)
            if len(text) < shortest:
                return False
            if any(map(text.__contains__, forms)):
                return True
            upper = percent_upper(text)  # escapes in mixed case (`%2b%2F`)
            if upper is not text and any(map(upper.__contains__, map(percent_upper, forms))):
                return True
            # The forms are the encoders' own: a value written with other escapes (`%2D` for
            # `-`, every character `%XX` or `\u00XX`) or in base64 from another place than
            # its first byte is found by decoding, as `find` finds it; only a text that may
            # hold an escape or such a base64 run (one of `b64_cores`) is decoded.
            if not _may_escape(text):
                read = _standard(text)
                if not any(map(read.__contains__, cores)):
                    return False
        if any(map(self._exact.search, _text_decodings(text))):
            return True
        cores_all = self._b64_cores(len(text))
        for source in _b64_sources(text):
            if cores_all is not None and not cores_all.search(_standard(source)):
                continue  # no base64 run of this text decodes to a value
            if any(map(self._exact.search, _b64_decoded(source, self._b64_runs))):
                return True
        return False

    def _b64_cores(self, size: int) -> LiteralMatcher | None:
        """What the base64 of any value seen by this process has in every base64 text that
        decodes to one holding it, whatever bytes come before it (`b64_cores`): a text that
        holds none of these (read with `-` and `_` as `+` and `/`, as `_b64_decode` reads it)
        has no base64 run `decodings` decodes to a text holding a value. Made again once
        values were learned since, when the texts looked at since (`size` characters more)
        would have cost more to read for base64 runs than it costs to make (~256 characters
        per value): None until then, to read the runs."""
        if self._cores_at == self.learned:
            return self._cores
        self._cores_credit += size
        if self._cores_credit < 256 * len(self._order):
            return None
        cores = [self._value_cores(v) for v in self._order]
        # (a value with no core, were one ever remembered, could not be ruled out so)
        self._cores = literal_matcher(itertools.chain(*cores)) if cores and all(cores) else None
        self._cores_at, self._cores_credit = self.learned, 0
        return self._cores

    def _forms_since(self, since: int) -> tuple[list[str], list[str], int]:
        """Every form of the values learned after position `since`, their `b64_cores`, and
        the shortest value (every form of a value is at least as long as it): kept until the
        next value is learned, as memoised redactions made at the same position are checked
        one after another."""
        if self._since_at != self.learned:
            self._since, self._since_at = {}, self.learned
        hit = self._since.get(since)
        if hit is None:
            recent = self._order[since:]
            forms = [f for v in recent for f in self.forms(v)]
            cores = [c for v in recent for c in self._value_cores(v)]
            hit = self._since[since] = (forms, cores, min(map(len, recent)))
        return hit

    @property
    def unrecalled(self) -> frozenset[str]:
        """The values this process learned that the state file's memory did not hold: rows an
        earlier run stored may hold them in plain text (they were no secret then)."""
        return frozenset(self._unrecalled)

    @property
    def values(self) -> frozenset[str]:
        """The secret values this process has seen (never written anywhere)."""
        return frozenset(self._values)

    def find(self, text: str) -> set[str]:
        """The remembered secrets in `text`, also behind URL-encoding, JSON escapes, base64 or
        hex; those this process saw, reversed too."""
        if len(text) < MIN_SECRET_LEN or not self:
            return set()
        found: set[str] = set()
        # (a JSON unescape may change nothing)
        for plain in dict.fromkeys(decodings(text, self._b64_runs)):
            found |= self._find_plain(plain)
        if self._values:  # a value this process saw, written reversed (T97 #3): `forms` has
            back = text[::-1]  # it reversed; a later process, knowing it by its fingerprint
            found |= {back[at : at + n] for at, n in self._value_spans(back)}  # alone, not
        if self._fingerprints and len(text) >= 2 * MIN_SECRET_LEN:
            for m in _HEX_RUN.finditer(text):
                found |= self._hex_found(m[0], plain=False)
        return found

    def hidden(self, text: str, shown: str) -> str:
        """`text` with each stretch of it that holds a remembered secret `find` finds, in
        whatever form (raw or an `encoded_forms` entry, a base64 run, a percent-encoded
        stretch), replaced by `shown`; `shown` whole when one is still found then. For a line
        only printed (an error quoting a policy file), by a memory of fingerprints alone: no
        marker, nothing learned."""
        found = self.find(text)
        if not found:
            return text
        spans = [(start, end) for start, end, _secret in self.find_percent_runs(text)]
        for piece in {*self.find_encoded_runs(text), *(f for s in found for f in self.forms(s))}:
            spans += [(at, at + n) for at, n in _occurrences(piece, text)]
        parts: list[str] = []
        at = 0
        for start, end in sorted(spans):
            if start >= at:
                parts += [text[at:start], shown]
            at = max(at, end)
        out = "".join([*parts, text[at:]])
        if self.find(out):  # a form no span is found for (`\u`-escaped, `%25XX`, `%21`):
            # each stretch between spaces and quotes that holds one, so a problem line keeps
            # its `file:line:col` and its words (it was `shown` whole: review R44 #2)
            out = _WORDLIKE.sub(lambda m: shown if self.find(m[0]) else m[0], out)
        return shown if self.find(out) else out

    def find_encoded_runs(self, text: str) -> list[str]:
        """Base64 runs in `text` whose decoded content holds a remembered secret: a whole run,
        or else the shortest pieces of it that do (`_b64_pieces`: `<b64>` of `u-<b64>`); and
        hex runs whose bytes hold one (`hex_decodings`), each whole."""
        runs = [m[0] for m in _HEX_RUN.finditer(text) if self._hex_run_holds(m[0])]
        for m in self._b64_runs.finditer(text):
            run = m.group(0)
            hits = [piece for piece, decoded in _b64_pieces(run) if self._find_plain(decoded)]
            if not hits or hits[0] == run:
                runs += hits[:1]
                continue
            kept: list[str] = []
            for piece in sorted(hits, key=len):
                if not any(k in piece for k in kept):
                    kept.append(piece)
            runs += kept
        return runs

    def _hex_run_holds(self, run: str) -> bool:
        """Whether hex run `run` holds a remembered secret's bytes other than as that
        secret's hex in one case (one of its `forms`, hidden as the secret's own marker, the
        rest of the run kept: the caller's token's reads `[token]`, also glued to more hex,
        reviewer R90 #4); mixed case, the run whole."""
        found = self._hex_found(run)
        return any((h := s.encode().hex()) not in run and h.upper() not in run for s in found)

    def _hex_found(self, run: str, *, plain: bool = True) -> set[str]:
        """The remembered secrets a hex run's bytes hold: between word boundaries (unless not
        `plain`: `decodings` gave `find` those), and, by fingerprint, glued to other bytes too
        (`41<hex>`: its `A` before it is no boundary; reviewer R90 #2), for a run of up to
        `_HEX_GLUED_LEN` digits."""
        found: set[str] = set()
        for decoded in hex_decodings(run):
            if plain:
                found |= self._find_plain(decoded)
            if self._fingerprints and len(run) <= _HEX_GLUED_LEN:
                found |= self.find_glued(decoded, self._lengths)
        return found

    def find_percent_runs(self, text: str) -> list[tuple[int, int, str]]:
        """Where remembered secrets are in `text` written percent-encoded with escapes no
        `encoded_forms` entry has (`%2D` for `-`, every character escaped), which a search for
        the forms does not find: (start, end, secret), the smallest stretch of the text that
        decodes to the secret, in order, none overlapping. A `+` is read both as itself and
        as a space."""
        if "%" not in text:
            return []
        found: list[tuple[int, int, str]] = []
        spans: dict[str, list[tuple[int, int, str]]] = {}  # a run met again: found again
        for m in _PERCENT_RUN.finditer(text):
            run = m[0]
            if "%" not in run:
                continue
            if run not in spans:
                spans[run] = self._secret_spans(run)
            found += [(m.start() + a, m.start() + b, secret) for a, b, secret in spans[run]]
        return found

    def _secret_spans(self, run: str) -> list[tuple[int, int, str]]:
        """The stretches of `run` (URL text: ASCII and escapes, one byte each) that decode to a
        remembered secret, mapped back from the decoded bytes to the run; overlapping ones
        merged (the secret's own text when one is whole, else the stretch's). A secret found
        in a decoding but not among its bytes (one holding U+FFFD, say) takes the whole run:
        nothing found is ever left in clear."""
        units = _PERCENT_UNIT.findall(run)
        ends = list(itertools.accumulate(map(len, units)))
        starts = [0, *ends[:-1]]
        raw = bytes(int(u[1:], 16) if len(u) == 3 else ord(u) for u in units)
        # `+` read as a space is a literal `+` of the run, never a `%2B` (as `unquote_plus`)
        spaced = bytes(0x20 if u == "+" else b for u, b in zip(units, raw, strict=True))
        hits: list[tuple[int, int, str]] = []
        for plain in dict.fromkeys((raw, spaced)):
            for secret in self._find_plain(plain.decode("utf-8", "replace")):
                wanted = secret.encode("utf-8")
                at = plain.find(wanted)
                if at < 0:
                    return [(0, len(run), run)]
                while at >= 0:
                    hits.append((starts[at], ends[at + len(wanted) - 1], secret))
                    at = plain.find(wanted, at + 1)  # a repeat may overlap the one before
        hits += self._b64_spans(run, raw, starts, ends)
        merged: list[tuple[int, int, str]] = []
        for start, end, secret in sorted(hits, key=lambda h: (h[0], -h[1])):
            if merged and start < merged[-1][1]:  # overlaps the one before
                first, last, _ = merged[-1]
                if end > last:  # and goes on past it: one marker of the stretch
                    merged[-1] = (first, end, run[first:end])
            else:
                merged.append((start, end, secret))
        return merged

    def _b64_spans(
        self, run: str, raw: bytes, starts: list[int], ends: list[int]
    ) -> list[tuple[int, int, str]]:
        """The stretches of `run` (its bytes `raw`, each from `starts` to `ends` in the run)
        that are base64 of a remembered secret once URL-decoded, an escape among them
        (`UGE1NXdvcmQ%2BMjAyNiE%3D`: a base64 value in a query string); each with the
        stretch as written."""
        decoded = raw.decode("latin-1")  # a character per byte: base64 is ASCII
        found: list[tuple[int, int, str]] = []
        for piece in dict.fromkeys(self.find_encoded_runs(decoded)):
            at = decoded.find(piece)
            while at >= 0:
                start, end = starts[at], ends[at + len(piece) - 1]
                if "%" in run[start:end]:  # (one written plainly is `_scrub_forms`' own)
                    found.append((start, end, run[start:end]))
                at = decoded.find(piece, at + 1)
        return found

    def _find_plain(self, text: str) -> set[str]:
        found = set()
        if self._values:  # every one, overlapping ones too: each must be hidden whole
            found = {text[start : start + n] for start, n in self._value_spans(text)}
        if self._fingerprints:
            found |= self._find_by_fingerprint(text)
        return found

    def _value_spans(self, text: str) -> list[tuple[int, int]]:
        """Where the values seen by this process are in `text`."""
        return self._exact.spans(text)

    def find_glued(self, text: str, lengths: Iterable[int]) -> set[str]:
        """The secrets known by fingerprint only (an earlier process learned them) of one of
        `lengths` in `text` at any place, not only between word boundaries (`x<secret>`): every
        stretch of each of those lengths is tried, up to `_GLUED_WINDOWS` in all (a 64 KB
        string for 16 lengths). Too costly for every string: for a re-read item whose stored
        copy hides something this one shows, with the lengths of the markers the stored copy
        holds (`Store._glued_secret_hidden`); all remembered lengths gave up on a note of 700
        characters with 30 secrets remembered."""
        wanted = sorted({n for n in lengths if n in self._lengths and n <= len(text)})
        found: set[str] = set()
        budget = _GLUED_WINDOWS
        for length in wanted:
            for start in range(min(len(text) - length + 1, budget)):
                piece = text[start : start + length]
                if self.fingerprint(piece) in self._fingerprints:
                    found.add(piece)
            budget -= len(text) - length + 1
            if budget <= 0:
                break
        return found

    def _find_by_fingerprint(self, text: str) -> set[str]:
        lengths = [n for n in self._lengths if n <= len(text)]
        if not lengths:
            return set()
        if len(text) > _LISTED_LEN:
            return self._find_by_fingerprint_long(text, lengths, _Boundaries(text))
        # The stretches to try (each from a boundary to a boundary, of a remembered length),
        # as bits: bit i of `mask` is set when place i is a boundary, so bit i of `mask &
        # (mask >> n)` when the stretch of n characters from i is one to try. At most
        # `_MAX_WINDOWS` of them (all but a long text full of boundaries), the cut-off
        # `_find_by_fingerprint_long` makes never applies: the same stretches are tried, in
        # another order, and what is found is a set. (Listed one start and length at a time,
        # a nightly's 40,000 stretches took as long to find as to fingerprint.)
        mask = _boundary_mask(text)
        starts = [(n, mask & (mask >> n)) for n in lengths]
        if sum(bits.bit_count() for _n, bits in starts) > _MAX_WINDOWS:
            bounds = _boundaries(text)
            return self._find_by_fingerprint_long(text, lengths, bounds, set(bounds))
        found: set[str] = set()
        fingerprints = self._fingerprints
        keyed = self._keyed
        # a piece's UTF-8 is that stretch of an ASCII text's: encoded once
        data = text.encode("ascii") if text.isascii() else None
        for length, bits in starts:
            if not bits:
                continue
            low_first = f"{bits:b}"[::-1]  # "1" at each start
            start = low_first.find("1")
            while start >= 0:
                end = start + length
                if data is None:
                    piece = text[start:end]
                    if self.fingerprint(piece) in fingerprints:
                        found.add(piece)
                else:
                    digest = keyed.copy()
                    digest.update(data[start:end])
                    if digest.hexdigest() in fingerprints:
                        found.add(text[start:end])
                start = low_first.find("1", start + 1)
        return found

    def _find_by_fingerprint_long(
        self,
        text: str,
        lengths: list[int],
        bounds: Iterable[int],
        ends: Container[int] | None = None,
    ) -> set[str]:
        """`_find_by_fingerprint` one start after another, until over `_MAX_WINDOWS`
        stretches were tried (bounds the cost of a long text)."""
        if ends is None:
            ends = bounds if isinstance(bounds, Container) else set(bounds)
        found: set[str] = set()
        tried = 0
        for start in bounds:
            for length in lengths:
                if start + length in ends:
                    tried += 1
                    piece = text[start : start + length]
                    if self.fingerprint(piece) in self._fingerprints:
                        found.add(piece)
            if tried > _MAX_WINDOWS:
                break
        return found


def decodings(text: str, runs: re.Pattern[str] = _B64_SHORT_RUN) -> Iterator[str]:
    """`text` as it is, URL-decoded (twice, where a `%25` is), JSON-unescaped (twice, where a
    backslash is left), each base64 run in it and in its URL-decoded or JSON-unescaped
    text (`_b64_sources`), and each piece of one, decoded, and each hex run decoded
    (`hex_decodings`). `runs`: the base64 runs read (the short ones too unless no secret that
    short is remembered, `SecretMemory`)."""
    yield from _text_decodings(text)
    for source in _b64_sources(text):
        yield from _b64_decoded(source, runs)
    for m in _HEX_RUN.finditer(text):
        yield from hex_decodings(m[0])


#: A run of hex digits long enough to be a remembered secret's hex (6 bytes at least).
_HEX_RUN = re.compile(rf"[0-9A-Fa-f]{{{2 * MIN_SECRET_LEN},}}")
#: The longest hex run whose bytes are tried at every place for a secret known only by its
#: fingerprint (`SecretMemory._hex_found`: 512 bytes, a few thousand fingerprints at most).
_HEX_GLUED_LEN = 1024


def hex_decodings(run: str) -> tuple[str, ...]:
    """A hex run's bytes as text, read from its first digit and from its second (a secret's
    hex glued after another hex digit, `a736b…`, starts on an odd one), a byte that is no
    UTF-8 read as U+FFFD: a secret in it is found whatever is around it. A short run's are
    kept (as base64 runs' are, `_B64_KEPT_LEN`); a long one's made each time, so the cache
    stays small (reviewer R90 #5: 8,192 runs of any length were kept)."""
    return _hex_run(run) if len(run) <= _B64_KEPT_LEN else _hex_decode(run)


@functools.lru_cache(maxsize=_B64_RUNS_KEPT)
def _hex_run(run: str) -> tuple[str, ...]:
    return _hex_decode(run)


def _hex_decode(run: str) -> tuple[str, ...]:
    found = []
    for start in (0, 1):
        digits = run[start : start + (len(run) - start) // 2 * 2]
        if len(digits) >= 2 * MIN_SECRET_LEN:
            found.append(bytes.fromhex(digits).decode("utf-8", "replace"))
    return tuple(found)


def _text_decodings(text: str) -> Iterator[str]:
    """`decodings(text)` but the base64 runs' (`_b64_decoded`)."""
    yield text
    if "%" in text or "+" in text:
        yield urllib.parse.unquote_plus(text)
    if "%" in text and "+" in text:  # a `+` that is itself, beside escapes
        yield urllib.parse.unquote(text)
    if "%25" in text:  # URL-encoded twice (`%252B`): decoded twice
        once = urllib.parse.unquote(text)
        yield urllib.parse.unquote(once)
        if "+" in once:
            yield urllib.parse.unquote_plus(once)
    if "\\" in text:
        plain = _json_unescape(text)
        yield plain
        if "\\" in plain:  # JSON-escaped twice (a JSON text held in a JSON string)
            yield _json_unescape(plain)


def _json_unescape(text: str) -> str:
    try:
        return str(json.loads(f'"{text}"'))
    except ValueError:  # a quote or a stray backslash beside the escapes: each one read alone
        plain = _JSON_ESCAPE.sub(_unescaped, text)
        return plain.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# A JSON escape: `\u0073` (a pair of them for a character past U+FFFF), `\"`, `\n` …
_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


def _unescaped(m: re.Match[str]) -> str:
    return chr(int(m[1], 16)) if m[1] else _SIMPLE_ESCAPES[m[2]]
