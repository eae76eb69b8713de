"""The command's own secrets (its API token, a token file's, its proxy's password) in the forms
a server may echo them in, beyond the memory's (raw, URL-, JSON-, base64-encoded).

A service that quotes the caller's token back in an error may write it as hex (either case,
its bytes also apart, in any of the notations a dump is written in: `74:6f:6b`, `74, 6f`,
`0x74,0x6f`, `\\x74\\x6f`, `746f.6b5f`), with its letters in another case, split by a space or a
line break, with a character written as an HTML character reference (`&#x74;ok_…`, `&#116;`),
URL-encoded once or twice, reversed, as the base64 of its hex or of its UTF-16LE text
(PowerShell's `-EncodedCommand`), as its base32 or base32hex, or only in part. The token
is a random string of the caller's, so any long enough run of its characters is hidden wherever
it stands (`window`): 12 characters, or half the token from 8 on when it is shorter. Only a run
that may be a credential (`memory.credential_like`) is looked for, so a token made of words
(`demo-owner-token`) hides no word of it. Never used for secrets found in the data: a part
of those would hide ordinary text.
"""

from __future__ import annotations

import base64
import html
import re
import string

from auditor.common.lazyre import lazy_regex
from auditor.redact.memory import LiteralMatcher, credential_like, literal_matcher

#: The longest run of an own secret's characters that may show (12 or more are hidden).
WINDOW = 12
#: The shortest run hidden, for a secret under `2 * WINDOW` characters (half of it, from 8).
MIN_WINDOW = 8

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
# What the skeleton of a text leaves out or reads as one character: white space (a token split
# over two words or lines) and HTML character references.
_GAPS = re.compile(r"\s+")
_UNIT = lazy_regex(
    globals(),
    "_UNIT",
    r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});?|\s+|[^&\s]+|&",
)
# Hex with its bytes apart, in a text in lower case: two hex pairs or more, each maybe after
# `0x` or `\x` (a C array, `xxd -i`, a Python bytes literal), with `:`, `,`, `.`, `-`, `;`, `|`,
# `/`, `_` or white space between them or none (a fingerprint, a dump: `74:6f`, `74, 6f`,
# `746f.6b5f`, `74 6f`; PowerShell's `-join ';'`: review R58 #3).
# Never from inside a longer hex text (no start after a hex digit: a long one is not tried
# from each of its digits). `_HEX_NOISE`: what `_joined_hex_at` leaves out of one.
# A dump wrapped (as `fold` wraps a fingerprint) may break a line before a separator (`32⏎:6d`)
# or inside a byte (`5a:7⏎1`): a line break (the text's white space with one is `⏎` in the
# text searched, any other a space) may stand inside a pair, a space never (`and 74 6f` is no
# `d7 46`), and white space around a separator (review R58 #1).
_HEX_PAIRS = r"(?:0x|\\+x)?(?:[0-9a-f]\n?[0-9a-f])++"
_HEX_APART = lazy_regex(
    globals(),
    "_HEX_APART",
    rf"(?<![0-9a-f\\]){_HEX_PAIRS}(?:(?:\s*+[:,.\-;|/_]\s*+|\s++)?{_HEX_PAIRS})++",
)
_HEX_NOISE = lazy_regex(globals(), "_HEX_NOISE", r"0x|\\+x|[:,.\-;|/_\s]")
# A percent-escape of an ASCII character (a URL-encoded token's `%5F`, `%255F` twice).
_ESCAPE = lazy_regex(globals(), "_ESCAPE", r"%([0-7][0-9a-fA-F])")


def window(secret: str) -> int:
    """How many characters of `secret` in a row are hidden wherever they stand (0: only the
    whole secret, under `MIN_WINDOW` characters)."""
    if len(secret) < MIN_WINDOW:
        return 0
    return max(MIN_WINDOW, min(WINDOW, len(secret) // 2))


def pieces(secret: str) -> list[str]:
    """The runs of `secret` hidden wherever they stand: the secret itself and each run of
    `window` characters of it, each that may be a credential (not `demo-own`). Of a secret
    made of plain words (`_PLAIN_WORDS`), a run that is plain words too once the separators
    it begins or ends with are left aside is not either (not `-owner-t` of `demo-owner-token`:
    `--out team-owner-tools` read `team[token]ools`, and `--author co-owner-team@…` was judged
    so: review R42). A random token is no plain words: each of its runs stays (a test of each
    run alone let `-live-AbCdEf` and the runs of a token in capitals show: reviews R45, R47)."""
    n = window(secret)
    runs = [secret] + [secret[i : i + n] for i in range(len(secret) - n + 1)] if n else []
    words = _PLAIN_WORDS.fullmatch(secret) is not None
    return [
        run
        for run in dict.fromkeys(runs)
        if credential_like(run)
        and (run == secret or not (words and _PLAIN_WORDS.fullmatch(run.strip("-_./"))))
    ]


# Words as people write them (lower case, capitalised or a short run of capitals, with a digit
# or two; a short number), joined by `-`, `_`, `.` or `/`: `demo-owner-token`, `tok-T73-abc`,
# not `AbCdEf`, `9f2c41d` or 20 capitals in a row.
_WORD = r"(?:[a-z]{1,12}[0-9]{0,2}|[A-Z][a-z]{0,11}[0-9]{0,2}|[A-Z]{1,8}[0-9]{0,2}|[0-9]{1,4})"
_PLAIN_WORDS = re.compile(rf"{_WORD}(?:[-_./]{_WORD})*")


def forms(piece: str) -> list[str]:
    """A piece's forms, as looked for in a text with its ASCII letters in lower case: as it
    is, reversed and as hex (its bytes apart, `74:6f:6b`, `0x74, 0x6f`, are this hex once
    `_joined_hex_at` joins them: one rule for every separator, no form of each)."""
    low = piece.translate(_ASCII_LOWER)
    return list(dict.fromkeys([low, low[::-1], hex_form(piece)]))


def hex_form(piece: str) -> str:
    """A piece's hex, as looked for in a text (lower case)."""
    return piece.encode("utf-8", "surrogatepass").hex()


#: The characters of a base64 text, standard or URL-safe (a base32 text's among them).
_B64_CHARS = frozenset(string.ascii_letters + string.digits + "+/-_")
_URLSAFE = str.maketrans("+/", "-_")
#: How many characters of a base64 text carry bits of the 0, 1 or 2 bytes of a piece's
#: encoding in the group of 3 bytes its core does not fill, before or after it; of a base32
#: text, of the 0 to 4 bytes in a group of 5. Then the most `=` of its padding.
_PARTIAL = (0, 2, 3)
_PARTIAL_B32 = (0, 2, 4, 5, 7)
_PADDING, _PADDING_B32 = 2, 6
_B32HEX = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789ABCDEFGHIJKLMNOPQRSTUV")


def encoded_forms(piece: str) -> dict[str, tuple[int, int, int]]:
    """The base64 of a piece, of its hex (either case) and of its UTF-16LE text (PowerShell's
    `-EncodedCommand`), the base32 of the piece and of its hex (either case), and its
    base32hex, wherever the encoding starts in the bytes encoded: for each of the 3 places (5
    in base32), the characters no other byte changes (as `memory.b64_cores`), base64 standard
    and URL-safe, in lower case as a text is looked at (base32's either case). Each with how
    many characters before and after it carry bits of the piece too (`_PARTIAL`), hidden with
    it, and the most padding after them. The memory reads a base64 run only when it stands
    alone or after a `-`, `/`, `_` or `+` (of a long path, only the first and the last piece
    between them) and finds only the piece's UTF-8 text there, and no base32; these are found
    wherever they stand."""
    raw = piece.encode("utf-8", "surrogatepass")
    hexed = raw.hex()
    found: dict[str, tuple[int, int, int]] = {}
    for data in (
        raw,
        hexed.encode(),
        hexed.upper().encode(),
        piece.encode("utf-16-le", "surrogatepass"),
    ):
        for skip in range(3):
            whole = (len(data) - skip) // 3 * 3
            core = base64.b64encode(data[skip : skip + whole]).decode("ascii")
            reach = (_PARTIAL[skip], _PARTIAL[len(data) - skip - whole], _PADDING)
            for text in (core, core.translate(_URLSAFE)):
                found.setdefault(text.translate(_ASCII_LOWER), reach)
    for data in (raw, hexed.encode(), hexed.upper().encode()):
        for skip in range(5):
            whole = (len(data) - skip) // 5 * 5
            if whole:
                core = base64.b32encode(data[skip : skip + whole]).decode("ascii")
                after = _PARTIAL_B32[len(data) - skip - whole]
                reach = (_PARTIAL_B32[skip], after, _PADDING_B32)
            else:  # a piece of 8 bytes fills no group of 5 from its 5th: across two groups
                core, reach = _b32_across(data, (5 - skip) % 5)
                if len(core) < 8:  # (as short as a group's: no form of its own)
                    continue
            found.setdefault(core.translate(_ASCII_LOWER), reach)
            if data is raw:  # base32hex (RFC 4648 section 7): the same bits, another alphabet
                found.setdefault(core.translate(_B32HEX).translate(_ASCII_LOWER), reach)
    return found


def _b32_across(raw: bytes, before: int) -> tuple[str, tuple[int, int, int]]:
    """The base32 characters of `raw` after `before` other bytes of its group that only
    `raw`'s bits make (each character is 5 bits: those inside `raw`'s 8 * len bits), with how
    many characters before and after them carry some of its bits too."""
    padded = bytes(before) + raw + bytes(-(before + len(raw)) % 5)
    text = base64.b32encode(padded).decode("ascii")
    first, last = 8 * before, 8 * (before + len(raw))  # `raw`'s bits
    inside = [i for i in range(len(text)) if first <= 5 * i and 5 * i + 5 <= last]
    if not inside:
        return "", (0, 0, 0)
    core = text[inside[0] : inside[-1] + 1]
    partial_before = sum(1 for i in range(inside[0]) if 5 * i + 5 > first)
    partial_after = sum(1 for i in range(inside[-1] + 1, len(text)) if 5 * i < last)
    return core, (partial_before, partial_after, _PADDING_B32)


def _widened(text: str, start: int, end: int, reach: tuple[int, int, int]) -> tuple[int, int]:
    """The stretch `start`-`end` of `text` (a core of `encoded_forms`) with the base64 or
    base32 characters around it that carry bits of the piece too (up to `reach`), and its
    padding."""
    before, after, most = reach
    while before and start and text[start - 1] in _B64_CHARS:
        start, before = start - 1, before - 1
    while after and end < len(text) and text[end] in _B64_CHARS:
        end, after = end + 1, after - 1
    padding = text[end : end + most]
    return start, end + len(padding) - len(padding.lstrip("="))


class OwnSecrets:
    """The command's own secrets, and where a text holds one of their forms."""

    def __init__(self) -> None:
        self._secrets: dict[str, None] = {}
        self._owner: dict[str, str] = {}  # a form -> the secret it is of
        self._reach: dict[str, tuple[int, int, int]] = {}  # a core -> `encoded_forms`' reach
        self._hexes: set[str] = set()  # the pieces' hex (`_hex_in`)
        self._shortest_hex = 0  # and the shortest of them
        self._matcher: LiteralMatcher | None = None

    def __bool__(self) -> bool:
        return bool(self._owner)

    def __contains__(self, secret: object) -> bool:
        return secret in self._secrets

    def add(self, secret: str) -> bool:
        """Look for `secret`'s forms from now on; True when it was new (and has some)."""
        if secret in self._secrets:
            return False
        self._secrets[secret] = None
        runs = pieces(secret)
        for piece in runs:
            for form in forms(piece):
                self._owner.setdefault(form, secret)
            self._hexes.add(hex_form(piece))
            self._shortest_hex = min(len(h) for h in self._hexes)
            for form, reach in encoded_forms(piece).items():
                self._owner.setdefault(form, secret)
                # a core two pieces share (`ab` of `xab` from its 2nd byte, of `abc` from its
                # 1st) carries bits of the secret as far as either reaches
                had = self._reach.get(form, reach)
                self._reach[form] = (
                    max(had[0], reach[0]),
                    max(had[1], reach[1]),
                    max(had[2], reach[2]),
                )
        self._matcher = None
        return bool(runs)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """The stretches of `text` holding a form of an own secret, whatever the case of its
        letters, with white space inside it, a character written as an HTML character
        reference, its hex bytes apart (`_joined_hex_at`) or percent-encoded (`_unescaped`):
        (start, end, the secret), in order, none overlapping (stretches that overlap are
        one)."""
        if not self._owner or len(text) < MIN_WINDOW:
            return []
        if self._matcher is None:
            self._matcher = literal_matcher(self._owner)
        low = text.translate(_ASCII_LOWER)
        found = [(at, at + n, low[at : at + n]) for at, n in self._matcher.spans(low)]
        if found:
            found = [
                (*_widened(text, *f[:2], self._reach[f[2]]), f[2]) if f[2] in self._reach else f
                for f in found
            ]
        # (`_joined_hex_at` may find a piece's hex: 24 digits at least, most often)
        apart = len(low) >= self._shortest_hex and self._hex_in(_hex_digits(low))
        if apart or _GAPS.search(low) or "&" in low:
            if not apart:
                skeleton = _GAPS.sub("", low)
                if "&" in skeleton:
                    skeleton = html.unescape(skeleton)
            if apart or (skeleton != low and self._matcher.search(skeleton)):
                found += self._skeleton_spans(text)
        if "%" in low and _ESCAPE.search(low):
            found += self._escaped_spans(low)
        merged: list[tuple[int, int, str]] = []
        for start, end, form in sorted(found, key=lambda f: (f[0], -f[1])):
            if merged and start < merged[-1][1]:
                first, last, owner = merged[-1]
                merged[-1] = (first, max(end, last), owner)
            else:
                merged.append((start, end, self._owner[form]))
        return merged

    def _hex_in(self, text: str) -> bool:
        """Whether `text` holds the hex of a piece (only those are looked for in hex joined: of
        a secret of hex digits, `aa:bb:cc:dd:ee:ff` joined is no run of it)."""
        assert self._matcher is not None
        if len(text) < self._shortest_hex or not self._matcher.search(text):
            return False
        hexes = self._hexes
        return any(text[at : at + n] in hexes for at, n in self._matcher.spans(text))

    def _skeleton_spans(self, text: str) -> list[tuple[int, int, str]]:
        """The forms found in `text` without its white space and with its HTML character
        references read, and the hex forms with its hex bytes apart joined too
        (`_joined_hex_at`, before the white space goes: `and 74-6f` is no hex `d74`), each as
        the stretch of `text` it spans."""
        assert self._matcher is not None
        chars: list[str] = []  # the text in lower case, its references read, a space a gap
        starts: list[int] = []  # where each of those characters starts in `text`
        ends: list[int] = []  # and ends
        gaps: set[int] = set()  # which are white space
        for m in _UNIT.finditer(text):
            unit = m[0]
            if unit[0].isspace():
                gaps.add(len(starts))
                chars.append("\n" if "\n" in unit else " ")  # (`_HEX_APART`: a wrapped dump)
                starts.append(m.start())
                ends.append(m.end())
                continue
            if unit[0] == "&" and len(unit) > 1:
                decoded = html.unescape(unit).translate(_ASCII_LOWER)
                chars.append(decoded)
                starts += [m.start()] * len(decoded)
                ends += [m.end()] * len(decoded)
                continue
            chars.append(unit.translate(_ASCII_LOWER))
            starts.extend(range(m.start(), m.end()))
            ends.extend(range(m.start() + 1, m.end() + 1))
        spaced = "".join(chars)
        kept = [i for i in range(len(spaced)) if i not in gaps]
        skeleton = "".join([spaced[i] for i in kept])
        found = [
            (starts[kept[at]], ends[kept[at + n - 1]], skeleton[at : at + n])
            for at, n in self._matcher.spans(skeleton)
        ]
        if _HEX_APART.search(spaced):
            joined, first, last = _joined_hex_at(spaced)
            found += [
                (starts[first[at]], ends[last[at + n - 1]], form)
                for at, n in self._matcher.spans(joined)
                if (form := joined[at : at + n]) in self._hexes
            ]
        return found

    def _escaped_spans(self, low: str) -> list[tuple[int, int, str]]:
        """The forms found in `low` (a text in lower case) URL-decoded, once and twice
        (`%255F`), each as the stretch of `low` it spans: the memory finds the whole secret
        so, but not a part of it beside a value a detector took (`tok%255F[secret …]`)."""
        assert self._matcher is not None
        once = _unescaped(low)
        twice = _unescaped(once) if "%" in once and _ESCAPE.search(once) else once
        if not (self._matcher.search(once) or (twice is not once and self._matcher.search(twice))):
            return []
        found: list[tuple[int, int, str]] = []
        text, starts, ends = low, list(range(len(low))), list(range(1, len(low) + 1))
        for _ in range(2 if twice is not once else 1):
            text, starts, ends = _unescaped_at(text, starts, ends)
            for at, n in self._matcher.spans(text):
                form = text[at : at + n]
                start, end = at, at + n
                if form in self._reach:
                    start, end = _widened(text, start, end, self._reach[form])
                found.append((starts[start], ends[end - 1], form))
        return found


def _hex_digits(low: str) -> str:
    """The hex digits of `low` (a text in lower case) but those of a `0x`: what
    `_joined_hex_at` joins is in them, so a text whose hex digits hold no piece's hex needs no
    closer look. A few passes in C: most texts hold hex apart (a date, a UUID, `be added`),
    and a search for those runs in each doubled the time of `spans` on the emulator's data."""
    data = (low.replace("0x", "") if "0x" in low else low).encode("ascii", "ignore")
    return data.translate(None, _NOT_HEX).decode("ascii")


_NOT_HEX = bytes(c for c in range(128) if chr(c) not in string.hexdigits.lower())


def _joined_hex_at(skeleton: str) -> tuple[str, list[int], list[int]]:
    """`skeleton` (a text in lower case) with its hex bytes apart joined (`_HEX_APART`: no
    `0x`, `\\x`, a separator or white space between them, so a hex form is found
    whatever separates its bytes: one rule for every notation, no form of each), and where
    each of its characters is in `skeleton`: from (a character right after a `0x` or `\\x`
    from the prefix's start, so no `0x` is left before a marker), and to."""
    chars: list[str] = []
    first: list[int] = []
    last: list[int] = []
    at = 0
    for m in _HEX_APART.finditer(skeleton):
        pos, lead = at, -1
        for cut in [*_HEX_NOISE.finditer(skeleton, m.start(), m.end()), None]:
            upto = m.end() if cut is None else cut.start()
            if upto > pos:
                chars.append(skeleton[pos:upto])
                first += [pos if lead < 0 else lead, *range(pos + 1, upto)]
                last += range(pos, upto)
                lead = -1
            if cut is not None:
                if cut[0].endswith("x"):
                    lead = cut.start()
                pos = cut.end()
        at = m.end()
    chars.append(skeleton[at:])
    first += range(at, len(skeleton))
    last += range(at, len(skeleton))
    return "".join(chars), first, last


def _unescaped(text: str) -> str:
    """`text` with its percent-escapes of ASCII characters read (in lower case)."""
    return _ESCAPE.sub(_escaped_char, text)


def _escaped_char(m: re.Match[str]) -> str:
    return chr(int(m[1], 16)).translate(_ASCII_LOWER)


def _unescaped_at(
    text: str, starts: list[int], ends: list[int]
) -> tuple[str, list[int], list[int]]:
    """`_unescaped(text)`, with where each of its characters starts and ends in the text
    `text`'s characters start and end in (`starts`, `ends`)."""
    chars: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    at = 0
    for m in _ESCAPE.finditer(text):
        chars.append(text[at : m.start()])
        new_starts += starts[at : m.start()]
        new_ends += ends[at : m.start()]
        chars.append(_escaped_char(m))
        new_starts.append(starts[m.start()])
        new_ends.append(ends[m.end() - 1])
        at = m.end()
    chars.append(text[at:])
    new_starts += starts[at:]
    new_ends += ends[at:]
    return "".join(chars), new_starts, new_ends
