"""A path as a command shows it where it succeeds (`reports: …`, the policy files a report
names): each name in it that the value detectors take for a secret reads
`<not shown: looks like a secret>`, as an error shows it; ordinary names stay as written."""

from __future__ import annotations

import re
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


def printed_path(path: Path | str) -> str:
    """`path` with each name in it that looks like a secret left out (`x<token>y/o` reads
    `<not shown: looks like a secret>/o`)."""
    text = str(path)
    parts = re.split(r"([/\\])", text)
    if all(map(ordinary_name, parts[::2])):
        return text
    for at in range(0, len(parts), 2):
        if not ordinary_name(parts[at]):
            parts[at] = not_shown(parts[at])
    return "".join(parts)


def not_shown(text: str) -> str:
    """`text` with every secret the value detectors find in it replaced by `NOT_SHOWN` (longest
    first, `find_secrets`' order, so no part of a longer one is left): what an error or a line
    of a command may show of a value it was given. The one place that words a found secret so."""
    from auditor.redact.values import find_secrets  # detect-secrets: only when it is needed

    for secret in find_secrets(text):
        text = text.replace(secret, NOT_SHOWN)
    return text
