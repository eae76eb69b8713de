"""A path as a command shows it where it succeeds (`reports: …`, the policy files a report
names): each name in it that the value detectors take for a secret reads
`<not shown: looks like a secret>`, as an error shows it; ordinary names stay as written."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.common.lazyre import lazy_regex
from auditor.common.spans import merge_spans
from auditor.redact.plain import MARKER_RE, MARKER_START

if TYPE_CHECKING:
    from auditor.redact.redactor import Redactor

NOT_SHOWN = "<not shown: looks like a secret>"

#: A name in a path shown without asking the detectors: under 12 characters, or short
#: lowercase words or numbers joined by `-`, `_` or `.` (`data-retention-rules.yaml`,
#: `2026-11-29-nightly`), so an ordinary run loads no detector. No token the detectors know
#: is made of such parts alone (each has a run of 12 or more, a capital, or a `:`, `/`, `=`).
_ORDINARY_NAME = re.compile(r".{0,11}|[a-z0-9]{1,11}(?:[-_.][a-z0-9]{1,11})*")


def ordinary_name(name: str) -> bool:
    """Whether a name in a path is one the detectors are not asked about (`_ORDINARY_NAME`)."""
    return _ORDINARY_NAME.fullmatch(name) is not None


def printed_path(path: Path | str, tokens: Iterable[str] = ()) -> str:
    """`path` with each name in it that looks like a secret left out (`x<token>y/o` reads
    `<not shown: looks like a secret>/o`), and each of `tokens` (the command's own: its
    `AUDITOR_TOKEN`, a token file's) as `[token]` (`named_tokens`)."""
    text = named_tokens(str(path), tokens)
    if "=" in text or "@" in text:  # (a NUL, which no path holds, stands for each till the end)
        text = _without_passwords(text, "\0")
    parts = re.split(r"([/\\])", text)
    if not all(map(ordinary_name, parts[::2])):
        for at in range(0, len(parts), 2):
            if not ordinary_name(parts[at]):
                parts[at] = not_shown(parts[at])
        text = "".join(parts)
    return text.replace("\0", NOT_SHOWN)


def shown_address(url: str, tokens: Iterable[str] = ()) -> str:
    """A service address (`base_url`, `app_url`) as a command shows and stores it: a name in
    its path that looks like a secret (`https://host/bot<token>/`, a key pasted in the wrong
    place) reads `<not shown: looks like a secret>`, the command's own token `[token]`, a
    `user:password@` is left out (`printed_path`). An ordinary address stays as written, and
    its host and port (`127.0.0.1:8080`, `api.example.com`) are judged name by name, so one
    loads no detector (`run --offline` names the address it would sync from)."""
    text = named_tokens(url, tokens)
    split = _ADDRESS.fullmatch(text)
    if split is None:
        return printed_path(text)
    scheme, place, rest = split.groups()
    if not all(map(ordinary_name, re.split(r"[:@\[\]]", place))):
        place = printed_path(place)
    return scheme + place + (printed_path(rest) if rest else "")


#: An address: its scheme and `//`, its host and port, and the rest (path, query, fragment).
_ADDRESS = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/\\]*)(.*)", re.DOTALL)


#: A password as a connection string writes it, shown in no path: libpq's `password=…` (or
#: `sslpassword=`, a driver's `Password=` or `Pwd=`), to the next white space, not the next
#: `/` (a path splits there, the password does not end there), quoted too (`password='a b'`).
_PASSWORD_PAIR = lazy_regex(
    globals(),
    "_PASSWORD_PAIR",
    r"((?:^|(?<=[\s;?&/\\]))[\w.-]*(?:password|pwd)\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)",
    re.IGNORECASE,
)
#: A URL's `user:password@` (a `//` normalised to `/` too: `postgresql:/user:pw@host`): the
#: password runs from the `:` after a name (not a `/` at once: that is a scheme's) to the
#: last `@` before white space, so one holding a `/` or an `@` is hidden whole.
_USER_PASSWORD = lazy_regex(
    globals(), "_USER_PASSWORD", r"((?:^|(?<=[\s/\\]))[^\s/\\:@]*:)([^\s/\\@]\S*)@"
)


def _without_passwords(text: str, shown: str = NOT_SHOWN) -> str:
    """`text` with each password written as a connection string writes it
    (`_PASSWORD_PAIR`, `_USER_PASSWORD`) as `shown`."""
    text = _PASSWORD_PAIR.sub(lambda m: m[1] + shown, text)
    return _USER_PASSWORD.sub(lambda m: m[1] + shown + "@", text)


def not_shown(text: str) -> str:
    """`text` with every secret the value detectors find in it replaced by `NOT_SHOWN` (longest
    first, `find_secrets`' order, so no part of a longer one is left): what an error or a line
    of a command may show of a value it was given. The one place that words a found secret so."""
    from auditor.redact.values import find_secrets  # detect-secrets: only when it is needed

    for secret in find_secrets(text):
        text = text.replace(secret, NOT_SHOWN)
    return text


def shown_value(text: str, tokens: Iterable[str] = ()) -> str:
    """A value typed on the command line (`--author`, `--sarif-category`) as the reports, the
    step summary and the command's lines show it: each of `tokens` (the command's own) as
    `[token]`, every secret the value detectors find in the rest as `NOT_SHOWN`. An ordinary
    value (`dev@example.com`, `auditor/acme/review`: no name in it the detectors are asked
    about, `ordinary_name`) stays as written and loads no detector."""
    text = named_tokens(text, tokens)
    if all(map(ordinary_name, re.split(r"[/\\@\s]", text))):
        return text
    return not_shown(text)


TOKEN_SHOWN = "[token]"


def markers_named(text: str, redactor: Redactor, tokens: Iterable[str]) -> str:
    """`text` (already redacted by `redactor`) with the marker of each of `tokens` (the
    command's own token, its proxy's password) reading `[token]`, as an error names them: a
    fingerprint and length of the caller's own token tell nothing a reader needs."""
    for token in tokens:
        text = text.replace(redactor.marker(token), TOKEN_SHOWN)
    return text


_SHORT_TOKEN = 8  # a token shorter than this is hidden only where it stands as a word of its own


def named_tokens(text: str, tokens: Iterable[str], shown: str = TOKEN_SHOWN) -> str:
    """`text` with each of `tokens` (the command's own: `AUDITOR_TOKEN`, a token file's, an
    organization's) replaced by `shown` (`[token]`, as an error names them too): also as a
    path normalises it (`a//b`, `./a`) and each part of it between `/` from 8 characters on;
    one of 4 to 7 characters only where it is a word of its own (a test's
    `AUDITOR_TOKEN=test` leaves `tests/` alone); one shorter is not looked for. One of 8
    characters or more reads `shown` in every other form the redactor hides a registered
    secret in too (`_other_forms`: its base64, base32, hex, another case, reversed, a run of
    12 of its characters …): a value typed on the command line (`--sarif-category ci/<base64>`, a
    folder named by the token's hex) is shown as the redactor would show a server's echo."""
    forms: set[str] = set()
    for token in tokens:
        if len(token) < 4:
            continue
        forms.add(token)
        if "/" in token:
            forms.add(os.path.normpath(token))
            forms.update(part for part in token.split("/") if len(part) >= _SHORT_TOKEN)
    for form in sorted(forms, key=len, reverse=True):  # a longer one first, whole
        if len(form) < 4 or form not in text:
            continue
        if len(form) >= _SHORT_TOKEN:
            text = text.replace(form, shown)
            continue
        # a word of its own: no letter or digit glued to an end that is one
        before = r"(?<![A-Za-z0-9])" if form[0].isalnum() else ""
        after = r"(?![A-Za-z0-9])" if form[-1].isalnum() else ""
        text = re.sub(before + re.escape(form) + after, lambda _m: shown, text)
    long = tuple(sorted(form for form in forms if len(form) >= _SHORT_TOKEN))
    return _other_forms(text, long, shown) if long and len(text) >= _SHORT_TOKEN else text


def _other_forms(text: str, tokens: tuple[str, ...], shown: str) -> str:
    """`text` with each stretch that a redactor knowing `tokens` alone hides reading `shown`:
    the memory's forms (URL-encoded, JSON-escaped, base64 at any byte offset, a base64 run
    holding one hidden whole) and the command's own secrets' (`own.OwnSecrets`: hex, base32,
    another case, reversed, a run of 12 characters …). No detector runs: only these values are
    looked for, and a marker `text` already held is left as it is."""
    out = _token_redactor(tokens).scrub_known(text)
    if out == text:
        return text
    held = {m[0] for m in MARKER_RE.finditer(text)} if MARKER_START in text else set()
    return MARKER_RE.sub(lambda m: m[0] if m[0] in held else shown, out)


@functools.lru_cache(maxsize=4)
def _token_redactor(tokens: tuple[str, ...]) -> Redactor:
    """A redactor that registered `tokens` and knows nothing else, made once per command (each
    path or value it shows is looked at with the same tokens), under a key of its own: its
    markers never show."""
    from auditor.redact.redactor import Redactor

    return Redactor(b"auditor: the command's own tokens", known=tokens)


def own_secrets_hidden(lines: Iterable[str], data: Callable[[], object], file: str) -> list[str]:
    """Problem lines about the input file `file` with each secret its own data reveals left
    out (`NOT_SHOWN`) where the line quotes the file (`_quoted`: a JSON path, a backquoted
    key or value, a waiver's `expires` value, a long token of letters and digits), never in
    auditor's own words: one by its place (an `apiKey`, an `env` value, a header's value, a
    hook command's password) or by its looks (`X` of a `Bearer X` in a waiver's `reason`),
    which the file's reports show as a marker, in every form (URL-, JSON-, base64-encoded).
    Only a value that may be a credential is (`may_be_credential`): a word (`auditor`,
    `production`) or a placeholder at a secret place is quoted as it is written. Each line's
    `file:line:col: ` is kept as it is (no `file`, `""`: each line is a value of the file,
    whole).

    `data` gives the file's data, asked for only when a quoted text may hold a credential.
    The secrets are looked for only where the file may hold what a line quotes
    (`_bearing`): the values and keys sharing 6 characters with a quoted text (or with one of
    its decodings) and the keys above them, redacted by a redactor of their own (nothing is
    remembered for later), so the detectors never read the rest of the file. When more of the
    file than `_KEPT_TEXTS` texts or `_KEPT_CHARS` characters shares a piece with what a line
    quotes (a `sk-live-…` key among thousands of `sk-live-…` values), none of it is read:
    each word of a quoted text a piece of which may be a credential reads `NOT_SHOWN`
    (`_hidden_words`)."""
    lines = list(lines)
    heads = [_head(line, file) for line in lines]
    spans = [_quoted(line, start) for line, start in zip(lines, heads, strict=True)]
    quoted = [line[a:b] for line, found in zip(lines, spans, strict=True) for a, b in found]
    grams = _grams(quoted)
    if not grams:
        return lines
    from auditor.redact.commands import may_be_credential
    from auditor.redact.memory import literal_matcher
    from auditor.redact.plain import MARKER_RE
    from auditor.redact.redactor import Redactor

    try:
        bearing = _bearing(data(), literal_matcher(grams).search)
    except _TooMuch:
        return [_hidden_words(line, found) for line, found in zip(lines, spans, strict=True)]
    if bearing is None:
        return lines
    scratch = Redactor(_OWN_KEY)
    scratch.redact_json(bearing)
    hider = Redactor(_OWN_KEY)  # what may be a credential of what was learned, alone
    for secret in scratch.memory.values:
        if may_be_credential(secret):
            hider.memory.add(secret)
    if not hider.memory:
        return lines
    out: list[str] = []
    for line, found in zip(lines, spans, strict=True):
        pieces, at = [], 0
        for a, b in found:
            text = line[a:b]
            mine = {m[0] for m in MARKER_RE.finditer(text)}
            scrubbed = hider.scrub_known(text)
            if scrubbed != text:  # the markers the scratch redactor wrote read NOT_SHOWN
                for marker in {m[0] for m in MARKER_RE.finditer(scrubbed)} - mine:
                    scrubbed = scrubbed.replace(marker, NOT_SHOWN)
            pieces += [line[at:a], scrubbed]
            at = b
        out.append("".join([*pieces, line[at:]]))
    return out


_OWN_KEY = b"auditor: a file's own secrets"  # the scratch redactors' key: its markers never show


#: A word of a quoted text (`_hidden_words`): a marker as a problem shows it (`[secret fp:…
#: len:…]`, no file text), or a text up to white space, a quote or a backquote; its pieces
#: are split at a JSON path's `$`, `.`, `[` and `]`.
_WORD = lazy_regex(globals(), "_WORD", r"\[secret fp:[^\]]*\]|[^\s'\"`]+")
_PATH_STEP = lazy_regex(globals(), "_PATH_STEP", r"[$.\[\]]")


def _hidden_words(line: str, found: list[tuple[int, int]]) -> str:
    """`line` with each word of its quoted stretches (`found`) a piece of which may be a
    credential (`may_be_credential`: `sk-live-Qw8Er5Ty2Ui9`, `$.env.sk-live-Qw8Er5Ty2Ui9`,
    not `$.permissions.allow[3]` or `production`) as `NOT_SHOWN`, whole: what a line shows
    when the file is not read for its secrets (`_TooMuch`)."""
    from auditor.redact.commands import may_be_credential

    def hidden(m: re.Match[str]) -> str:
        if m[0].startswith("[secret fp:"):
            return m[0]
        word = m[0].rstrip(":,;")  # (a path's `: ` after it, kept)
        hides = any(map(may_be_credential, _PATH_STEP.split(word)))
        return NOT_SHOWN + m[0][len(word) :] if hides else m[0]

    pieces, at = [], 0
    for a, b in found:
        pieces += [line[at:a], _WORD.sub(hidden, line[a:b])]
        at = b
    return "".join([*pieces, line[at:]])


def _head(line: str, file: str) -> int:
    """Where a problem line's text starts, after its `file:line:col: ` and `error: `."""
    if not file:
        return -1  # the line is a value of the file, whole
    at = re.match(re.escape(file) + r":\d+(?::\d+)?: (?:(?:error|warning): )?", line)
    return at.end() if at else 0


#: The parts of a problem's text (after its place) that are the file's own text: a key
#: written twice (to the line's end: a key may hold a backquote), a value that is no date
#: (`` `V` is not a valid date/time ``), a waiver's `expires` as Python quotes it (`got
#: '…'`), a YAML anchor's, alias's or tag's name, a rule id and a subject of a waiver named
#: twice, and any backquoted text (from a backquote after a space or a bracket, to one before
#: a space, a bracket, a punctuation mark or the end).
_QUOTES = lazy_regex(
    globals(),
    "_QUOTES",
    r"""duplicate\ key\ `(?P<dup>.*)`\Z
      | \A`(?P<date>.*)`\ is\ not\ a\ valid\ date/time\ \(
      | \bgot\ (?P<got>'.*'|".*")\Z
      | \bYAML\ (?:anchor\ &|alias\ \*|tag\ )(?P<yaml>\S+)\ is\ not\ allowed
      | \Aduplicate\ waiver\ for\ rule\ (?P<rule>.+?)\ and\ subject\ (?P<subject>.+)\ \(first\ at
      | (?:(?<=[\s(\[])|\A)`(?P<code>[^`].*?)`(?=[\s)\]:,;.?!]|\Z)
    """,
    re.VERBOSE | re.DOTALL,
)
#: A long token of letters and digits anywhere in a line (a key pasted as a subject's URL
#: glob): no word of auditor's own is one.
_TOKEN_RUN = lazy_regex(globals(), "_TOKEN_RUN", r"[A-Za-z0-9+/=_.~%:@-]{12,}")
_LETTER_AND_DIGIT = lazy_regex(
    globals(), "_LETTER_AND_DIGIT", r"(?=[^0-9]*[0-9])[^A-Za-z]*[A-Za-z]"
)


def _quoted(line: str, start: int) -> list[tuple[int, int]]:
    """Where `line`'s text from `start` quotes the file: its JSON path (`$.a['b: c']: …`),
    `_QUOTES`' parts and `_TOKEN_RUN`s, as sorted stretches none overlapping; the whole line
    for `start` -1."""
    if start < 0:
        return [(0, len(line))]
    found: list[tuple[int, int]] = []
    text = start
    if line.startswith("$", start):
        end = _path_end(line, start)
        found.append((start, end))
        text = end
    for m in _QUOTES.finditer(line, text):
        found += [m.span(name) for name, value in m.groupdict().items() if value is not None]
    for m in _TOKEN_RUN.finditer(line, start):
        if _LETTER_AND_DIGIT.match(m[0]):
            found.append(m.span())
    return merge_spans(found)


def _path_end(line: str, start: int) -> int:
    """The end of the JSON path at `start` (`render`'s: `.key`, `[3]`, `['a: b']` with `\\'`
    escapes): the first `: ` outside a quoted key, or the line's end."""
    at, quoted = start, False
    while at < len(line):
        if quoted:
            if line[at] == "\\":
                at += 2
                continue
            quoted = not line.startswith("']", at)
        elif line.startswith("['", at):
            quoted, at = True, at + 2
            continue
        elif line.startswith(": ", at):
            return at
        at += 1
    return len(line)


_GRAM = 6  # `MIN_SECRET_LEN`, the shortest text `credential_like` takes
#: A text no piece of which may be a credential (`credential_like`): letters with two
#: capitals at most.
_PLAIN_WORD = lazy_regex(globals(), "_PLAIN_WORD", r"[a-z]*(?:[A-Z][a-z]*){0,2}")


def _grams(quoted: Iterable[str]) -> set[str]:
    """Every 6 characters of each quoted text and of its decodings (URL-, JSON-, base64-)
    that may hold a credential: a secret a memory finds in a quoted text holds one of them.
    None of a plain word (`sandbox`): no secret of the file is looked for there."""
    grams: set[str] = set()
    for text in quoted:
        text = _MARKED.sub("\0", text)  # a marker (`[secret fp:… len:…]`) is no file text
        if len(text) < _GRAM or _PLAIN_WORD.fullmatch(text):
            continue
        for form in _decoded(text):
            grams.update(form[i : i + _GRAM] for i in range(len(form) - _GRAM + 1))
    return {gram for gram in grams if "\0" not in gram}


#: A marker, or one as a problem shows it (`[secret fp:… len:…]`).
_MARKED = lazy_regex(globals(), "_MARKED", r"\[secret fp:[^\]]*\]")


def _decoded(text: str) -> set[str]:
    """`text`, and as it reads URL-decoded, JSON-unescaped, and each base64 run decoded (the
    memory of secrets' own readings, `memory.decodings`), each long enough for a piece."""
    from auditor.redact.memory import decodings

    return {form for form in decodings(text) if len(form) >= _GRAM}


#: The strings of a list kept beside one that may bear a quoted text, so an argv-style
#: array's password (`["sshpass", "-p", X]`, `["mysql", "-u", "root", "-pX"]`, `["docker",
#: "login", …70 options…, "-p", X]`) is read as it is written: all of a list of up to
#: `_ARGV_ITEMS` or holding a word that makes an array argv-style (`is_argv_trigger`: `login`,
#: `sshpass`, `--password`), whatever its length; of a longer one without, its first and the
#: two before each (no password option's value is read in it).
_ARGV_ITEMS = 64
_ARGV_BEFORE = 2
#: The most texts (keys, strings, numbers) and characters of the file kept for a problem's
#: quoted texts (`_bearing`): more, and the file is not read for its secrets (`_TooMuch`).
#: 256 values of 4,000 characters are redacted and learned in about 0.5 s.
_KEPT_TEXTS = 256
_KEPT_CHARS = 1 << 20


class _TooMuch(Exception):
    """More of the file than `_KEPT_TEXTS` or `_KEPT_CHARS` may bear what a problem quotes."""


class _Budget:
    def __init__(self) -> None:
        self.texts = _KEPT_TEXTS
        self.chars = _KEPT_CHARS

    def take(self, text: str) -> None:
        self.texts -= 1
        self.chars -= len(text)
        if self.texts < 0 or self.chars < 0:
            raise _TooMuch


def _bearing(data: object, hit: Callable[[str], bool]) -> object:
    """The part of `data` that may bear what a problem quotes: each key, string or number
    that holds 6 characters of a quoted text (`hit`), as written, URL-decoded or as a
    `Basic` header's password decodes, with the keys above it (its place: under `env`, an
    `apiKey`), the strings beside it in a list, and None for the rest; None when nothing
    does. `_TooMuch` when more than `_KEPT_TEXTS` texts or `_KEPT_CHARS` characters would be
    kept."""
    kept, out = _bears(data, hit, _Budget())
    return out if kept else None


def _bears(value: object, hit: Callable[[str], bool], budget: _Budget) -> tuple[bool, object]:
    if isinstance(value, dict):
        found: dict[str, object] = {}
        for k, v in value.items():
            key = k if isinstance(k, str) else str(k)  # a key YAML read as other than text
            kept, out = _bears(v, hit, budget)
            if kept or _hits(key, hit):
                budget.take(key)
                found[key] = out
        return bool(found), found
    if isinstance(value, list):
        items = [_bears(v, hit, budget) for v in value]
        marks = [i for i, (kept, _) in enumerate(items) if kept]
        if not marks:
            return False, None
        from auditor.redact.commands import is_argv_trigger

        strings = {i: v for i, v in enumerate(value) if isinstance(v, str)}
        near = (
            set(strings)
            if len(value) <= _ARGV_ITEMS or any(map(is_argv_trigger, strings.values()))
            else {0} | {j for i in marks for j in range(i - _ARGV_BEFORE, i)}
        )
        kept_items: list[object] = [kept_out for _, kept_out in items]
        for i in sorted(near):
            if i in strings and not items[i][0]:
                budget.take(strings[i])
                kept_items[i] = strings[i]
        return True, kept_items
    if isinstance(value, str):
        if _hits(value, hit):
            budget.take(value)
            return True, value
        return False, None
    if isinstance(value, int | float) and not isinstance(value, bool):
        from auditor.redact.redactor import number_text  # as a secret number is remembered

        text = number_text(value)
        if hit(text):
            budget.take(text)
            return True, value
        return False, None
    return False, None


_BASIC = lazy_regex(globals(), "_BASIC", r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})")


def _hits(text: str, hit: Callable[[str], bool]) -> bool:
    """Whether `text` holds 6 characters of a quoted text: as written, URL-decoded (a
    secret's decoding is remembered too), or a `Basic X` in it as `X` decodes."""
    if hit(text):
        return True
    if "%" in text:
        import urllib.parse

        if hit(urllib.parse.unquote(text)) or hit(urllib.parse.unquote_plus(text)):
            return True
    if "asic" in text.lower():
        import base64
        import binascii

        for encoded in _BASIC.findall(text):
            try:
                pair = base64.b64decode(encoded + "=" * (-len(encoded) % 4))
            except (binascii.Error, ValueError):
                continue
            if hit(pair.decode("utf-8", "replace")):
                return True
    return False
