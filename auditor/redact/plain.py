"""What is never a secret: environment references (`${VAR}`, `${{ secrets.X }}`) and markers."""

from __future__ import annotations

import re

from auditor.common.lazyre import lazy_regex

MARKER_START = "[secret fp:"  # how every marker begins (a quick test before MARKER_RE)
MARKER_RE = re.compile(r"\[secret fp:(?P<fp>[0-9a-f]{8}) len:(?P<len>\d+)\]")
#: A marker as a text writes it, or as a control id does (`[secret_fp:…_len:N]`: an id has no
#: space), as an evidence bundle's copy of a policy holds it.
ANY_MARKER_RE = re.compile(r"\[secret[ _]fp:(?P<fp>[0-9a-f]{8})[ _]len:(?P<len>[0-9]{1,9})\]")

_ENV_REF = re.compile(
    r"""^(?:\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[-=]|:?\?[^}]*)?\}  # ${VAR}, ${VAR:-}, ${VAR:?msg}
         |\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=+]\$[A-Za-z_][A-Za-z0-9_]*\}  # ${VAR:-$OTHER}
         |\$[A-Za-z_][A-Za-z0-9_]*                          # $VAR
         |\$\{\{\s*[A-Za-z0-9_.\-\[\]'"]+\s*\}\}            # ${{ secrets.X }}
         |\{env:[A-Za-z_][A-Za-z0-9_]*\}                    # {env:VAR}
         |%[A-Za-z_][A-Za-z0-9_]*%)$                        # %VAR%
    """,
    re.VERBOSE,
)


def is_env_reference(value: str) -> bool:
    """True for `${VAR}`, `$VAR`, `${{ secrets.X }}` and similar references, which are kept.
    With a default or alternative value (`${VAR-X}`, `${VAR:-X}`, `${VAR:+X}`, `${VAR=X}`),
    `X` is a literal the shell uses as the value: a reference while `X` is an ordinary value
    (`${PORT:-8080}`, `${LOG_LEVEL:-info}`, `${REGION:-eu-central-1}`, an address with no
    user-info), none when it may be a credential (`${LLM_TOKEN:-Zq8hVd2LmX0p}`). An empty
    default (`${VAR:-}`), an error message (`${VAR:?unset}`) or another reference as the
    default (`${VAR:-$OTHER}`) is a reference."""
    text = value.strip()
    if _ENV_REF.match(text):
        return True
    default = _WITH_DEFAULT.fullmatch(text)
    return default is not None and _ordinary_default(default["x"])


#: `${VAR-X}`, `${VAR:-X}`, `${VAR+X}`, `${VAR:+X}`, `${VAR=X}`, `${VAR:=X}`: `X` the literal.
_WITH_DEFAULT = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=+](?P<x>[^{}$]*)\}")
#: An address with no user-info (`https://api.example.com/v1`): no credential in it.
_PLAIN_ADDRESS = lazy_regex(globals(), "_PLAIN_ADDRESS", r"(?i)[a-z][a-z0-9+.\-]*://[^@\s]*")


def _ordinary_default(text: str) -> bool:
    """A default that cannot be a credential: a setting, a word, a short number, an address
    (`credential_like`, which decides what a header's value is the same way)."""
    from auditor.redact.memory import credential_like  # (memory imports this module)

    return bool(_PLAIN_ADDRESS.fullmatch(text)) or not credential_like(text)


# A header value that is a scheme and an environment reference (`Bearer ${LLM_TOKEN}`).
_SCHEME_REF = re.compile(r"(?i)\s*(?:bearer|token|basic)\s+(.+)")


def is_scheme_reference(value: str) -> bool:
    """True for `Bearer ${VAR}`, `Token $VAR`, `Basic {env:VAR}`: a scheme word and a reference
    only, kept as written as a reference alone is (a rule tells it from a literal credential)."""
    scheme = _SCHEME_REF.fullmatch(value)
    return scheme is not None and is_env_reference(scheme[1])


def is_marker(value: object) -> bool:
    """True when `value` is exactly one redaction marker."""
    return isinstance(value, str) and MARKER_RE.fullmatch(value) is not None


def marker_fingerprint(value: str) -> str | None:
    """The fingerprint inside a marker string, or None if `value` is not a marker."""
    m = MARKER_RE.fullmatch(value)
    return m["fp"] if m else None


def between_markers(text: str) -> list[str]:
    """The parts of `text` outside markers (a marker is never scanned for secrets)."""
    return MARKER_RE.split(text)[::3] if MARKER_START in text else [text]


#: Longer than any marker (`[secret fp:1a2b3c4d len:40]`): where a cut looks for one it splits.
MARKER_MAX = 64


def kept_before_cut(text: str, limit: int) -> str:
    """The first `limit` characters of redacted `text`, or fewer: a cut never falls inside a
    marker (it goes before it), as half a marker shows part of a fingerprint, and the command's
    own token, named `[token]` by its whole marker, could be known by that."""
    kept = text[:limit]
    for found in MARKER_RE.finditer(text, max(0, limit - MARKER_MAX), limit + MARKER_MAX):
        if found.start() < limit < found.end():
            kept = text[: found.start()]
    return kept


#: The longest author (an email address is at most 254 characters) an output names: the
#: service's text, repeated in every finding it attributes (a 1 MB email made 68 MB of
#: reports). Longer is cut with a count; the stored revision keeps it whole.
AUTHOR_SHOWN = 254


def shown_author(text: str) -> str:
    """An author's email, name or id as every output names it (`AUTHOR_SHOWN`)."""
    return cut_outside_markers(text, AUTHOR_SHOWN)


def author_of(*names: str) -> str:
    """The first of an author's `names` (email, then name, then id) that is more than blanks,
    as it was sent; empty when none is (an email of spaces is no author)."""
    return next((name for name in names if name.strip()), "")


def cut_outside_markers(text: str, limit: int) -> str:
    """Redacted `text` cut to `limit` characters (`kept_before_cut`), saying how many more
    there were."""
    if len(text) <= limit:
        return text
    kept = kept_before_cut(text, limit)
    return f"{kept}… ({len(text) - len(kept)} more characters)"
