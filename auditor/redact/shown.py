"""A path as a command shows it where it succeeds (`reports: …`, the policy files a report
names): each name in it that the value detectors take for a secret reads
`<not shown: looks like a secret>`, as an error shows it; ordinary names stay as written."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

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
_PASSWORD_PAIR = re.compile(
    r"((?:^|(?<=[\s;?&/\\]))[\w.-]*(?:password|pwd)\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)",
    re.IGNORECASE,
)
#: A URL's `user:password@` (a `//` normalised to `/` too: `postgresql:/user:pw@host`): the
#: password runs from the `:` after a name (not a `/` at once: that is a scheme's) to the
#: last `@` before white space, so one holding a `/` or an `@` is hidden whole.
_USER_PASSWORD = re.compile(r"((?:^|(?<=[\s/\\]))[^\s/\\:@]*:)([^\s/\\@]\S*)@")


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
_SHORT_TOKEN = 8  # a token shorter than this is hidden only where it stands as a word of its own


def named_tokens(text: str, tokens: Iterable[str], shown: str = TOKEN_SHOWN) -> str:
    """`text` with each of `tokens` (the command's own: `AUDITOR_TOKEN`, a token file's, an
    organization's) replaced by `shown` (`[token]`, as an error names them too): also as a
    path normalises it (`a//b`, `./a`) and each part of it between `/` from 8 characters on;
    one of 4 to 7 characters only where it is a word of its own (a test's
    `AUDITOR_TOKEN=test` leaves `tests/` alone); one shorter is not looked for."""
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
    return text


def own_secrets_hidden(lines: Iterable[str], data: object, file: str) -> list[str]:
    """Problem lines about the input file `file` with each secret its own data `data` reveals
    left out (`NOT_SHOWN`): one by its place (an `apiKey`, an `env` value, a header's value,
    a hook command's password) or by its looks (`X` of a `Bearer X` in a waiver's `reason`),
    which the file's reports show as a marker, in every form (URL-, JSON-, base64-encoded)
    where a problem quotes it (a key, a `duplicate key`, a waiver's `expires`). Each line's
    `file:line:col: ` is kept as it is (no `file`, `""`: a value of the file, whole).
    Learned by a redactor of its own, under a key of its own: nothing is remembered for
    later, and what the value detectors found is found again from their cache (a waiver
    file asked about each value it quotes)."""
    lines = list(lines)
    from auditor.redact.plain import MARKER_RE
    from auditor.redact.redactor import Redactor

    def textual(value: object) -> object:  # a key YAML read as other than text (`1:`), as text
        if isinstance(value, dict):
            return {k if isinstance(k, str) else str(k): textual(v) for k, v in value.items()}
        return [textual(v) for v in value] if isinstance(value, list) else value

    scratch = Redactor(b"auditor: a file's own secrets")  # its markers are never shown
    scratch.redact_json(textual(data))
    if not scratch.memory:
        return lines
    head = re.compile(re.escape(file) + r":\d+(?::\d+)?: ")
    out: list[str] = []
    for line in lines:
        at = head.match(line) if file else None
        start = at.end() if at else 0
        rest = line[start:]
        mine = {m[0] for m in MARKER_RE.finditer(rest)}
        scrubbed = scratch.scrub_known(rest)
        if scrubbed != rest:  # the markers the scratch redactor wrote read NOT_SHOWN
            for marker in {m[0] for m in MARKER_RE.finditer(scrubbed)} - mine:
                scrubbed = scrubbed.replace(marker, NOT_SHOWN)
        out.append(line[:start] + scrubbed)
    return out
