"""The command's own secrets (its API token, a token file's, its proxy's password) in the forms
a server may echo them in, beyond the memory's (raw, URL-, JSON-, base64-encoded).

A service that quotes the caller's token back in an error may write it as hex (either case,
its bytes also apart: `74:6f:6b`), with its letters in another case, split by a space or a line
break, with a character written as an HTML character reference (`&#x74;ok_…`, `&#116;`),
reversed, as the base64 of its hex or of its UTF-16LE text (PowerShell's `-EncodedCommand`),
as its base32, or only in part. The token
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
    is, reversed and as hex, its bytes also apart (`74:6f:6b:5f`, `74-6f-6b-5f`, as a dump or
    a fingerprint is written: split by spaces, it is the skeleton's hex)."""
    low = piece.translate(_ASCII_LOWER)
    raw = piece.encode("utf-8", "surrogatepass")
    return list(dict.fromkeys([low, low[::-1], raw.hex(), raw.hex(":"), raw.hex("-")]))


#: The characters of a base64 text, standard or URL-safe (a base32 text's among them).
_B64_CHARS = frozenset(string.ascii_letters + string.digits + "+/-_")
_URLSAFE = str.maketrans("+/", "-_")
#: How many characters of a base64 text carry bits of the 0, 1 or 2 bytes of a piece's
#: encoding in the group of 3 bytes its core does not fill, before or after it; of a base32
#: text, of the 0 to 4 bytes in a group of 5. Then the most `=` of its padding.
_PARTIAL = (0, 2, 3)
_PARTIAL_B32 = (0, 2, 4, 5, 7)
_PADDING, _PADDING_B32 = 2, 6


def encoded_forms(piece: str) -> dict[str, tuple[int, int, int]]:
    """The base64 of a piece, of its hex (either case) and of its UTF-16LE text (PowerShell's
    `-EncodedCommand`), and the base32 of the piece, wherever the encoding starts in the bytes
    encoded: for each of the 3 places (5 in base32), the characters no other byte changes (as
    `memory.b64_cores`), base64 standard and URL-safe, in lower case as a text is looked at
    (base32's either case). Each with how many characters before and after it carry bits of
    the piece too (`_PARTIAL`), hidden with it, and the most padding after them. The memory
    reads a base64 run only when it stands alone or after a `-`, `/`, `_` or `+` (of a long
    path, only the first and the last piece between them) and finds only the piece's UTF-8
    text there, and no base32; these are found wherever they stand."""
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
    for skip in range(5):
        whole = (len(raw) - skip) // 5 * 5
        if whole:
            core = base64.b32encode(raw[skip : skip + whole]).decode("ascii")
            reach = (_PARTIAL_B32[skip], _PARTIAL_B32[len(raw) - skip - whole], _PADDING_B32)
        else:  # a piece of 8 bytes fills no group of 5 from its 5th: across two groups
            core, reach = _b32_across(raw, (5 - skip) % 5)
            if len(core) < 8:  # (as short as a group's: no form of its own)
                continue
        found.setdefault(core.translate(_ASCII_LOWER), reach)
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
        letters, with white space inside it or a character written as an HTML character
        reference: (start, end, the secret), in order, none overlapping (stretches that
        overlap are one)."""
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
        if _GAPS.search(low) or "&" in low:
            skeleton = _GAPS.sub("", low)
            if "&" in skeleton:
                skeleton = html.unescape(skeleton)
            if skeleton != low and self._matcher.search(skeleton):
                found += self._skeleton_spans(text)
        merged: list[tuple[int, int, str]] = []
        for start, end, form in sorted(found, key=lambda f: (f[0], -f[1])):
            if merged and start < merged[-1][1]:
                first, last, owner = merged[-1]
                merged[-1] = (first, max(end, last), owner)
            else:
                merged.append((start, end, self._owner[form]))
        return merged

    def _skeleton_spans(self, text: str) -> list[tuple[int, int, str]]:
        """The forms found in `text` without its white space and with its HTML character
        references read, each as the stretch of `text` it spans."""
        assert self._matcher is not None
        chars: list[str] = []
        starts: list[int] = []  # where each character of the skeleton starts in `text`
        ends: list[int] = []  # and ends
        for m in _UNIT.finditer(text):
            unit = m[0]
            if unit[0].isspace():
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
        skeleton = "".join(chars)
        return [
            (starts[at], ends[at + n - 1], skeleton[at : at + n])
            for at, n in self._matcher.spans(skeleton)
        ]
