"""Who wrote a report: the project's own address, where package metadata declares one.

Reports handed to auditors and code scanning name the tool. A made-up address (an organisation
that is not ours) must never stand in for it, so the address comes only from the installed
package's metadata (`[project.urls]` in pyproject.toml: `Homepage`, else `Repository` or
`Source`, https only). Without one, SARIF leaves out `informationUri` (optional in SARIF 2.1.0;
code scanning names the tool by `tool.driver.name` and version) and OSCAL properties use
`FALLBACK_NS`.

The metadata is read as `importlib.metadata.metadata("auditor")` reads it, but without loading
`importlib.metadata` (and the `email` package it parses with: 17 ms of a nightly run's imports,
and 5-10 ms more to find and parse the file) where the answer is plain: the package's
`.dist-info` folder found the way that module's finder finds it, and a `METADATA` file of simple
one-line headers (`_plain_urls`). Anything else (a zip or egg on the path, another finder of
distributions, a folded header line, or `importlib.metadata` loaded already) is asked of
`importlib.metadata` itself.
"""

from __future__ import annotations

import functools
import os
import sys
from urllib.parse import urlsplit

#: Labels of `Project-URL` metadata taken as the project's home, best first.
HOME_LABELS = ("homepage", "repository", "source")
#: The OSCAL namespace while the package declares no home: `.invalid` is reserved (RFC 6761) and
#: can never be registered, so the URI names no organisation; it is an identifier, never fetched.
#: An http(s) URI rather than a URN: OSCAL allows any URI, but compliance-trestle's 1.1.3 models,
#: which GRC pipelines load documents with, accept only URLs with a scheme and host.
FALLBACK_NS = "https://auditor.invalid/ns/oscal"

#: The distribution whose metadata names the project's home.
DISTRIBUTION = "auditor"


@functools.cache
def project_home() -> str | None:
    """The project's https home page from the installed package's metadata, None without one."""
    entries = _project_urls()
    if entries is None:
        return None
    found: dict[str, str] = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        key = "".join(c for c in label.lower() if c.isalnum())
        parts = urlsplit(url.strip())
        if parts.scheme == "https" and parts.hostname and not parts.query and not parts.fragment:
            found.setdefault(key, url.strip().rstrip("/"))
    return next((found[k] for k in HOME_LABELS if k in found), None)


def _project_urls() -> list[str] | None:
    """The `Project-URL` entries of the installed package's metadata (None: no such package)."""
    plain = None if "importlib.metadata" in sys.modules else _plain_urls()
    if plain is not None:
        return plain[0]
    import importlib.metadata

    try:
        return importlib.metadata.metadata(DISTRIBUTION).get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        return None


#: The characters of a header's name as `email`'s parser takes one: printable ASCII but `:`.
_NAME_CHARS = frozenset(map(chr, range(0x21, 0x7F))) - {":"}


def _plain_urls() -> tuple[list[str] | None] | None:
    """`_project_urls()`'s answer, as a 1-tuple, where it is plain to read without
    `importlib.metadata`; None where that module must be asked.

    That module asks each finder in `sys.meta_path` that finds distributions: here only the
    standard `PathFinder` may (another one: None). It looks in each `sys.path` entry in turn,
    a folder's entries in the order the system lists them, for `<name>-….dist-info` or
    `<name>.egg-info` (any case) whose name is the package's, and takes the first found; an
    entry that is not a folder but exists (a zip file) or an egg is left to it (None). The
    first found must be a `.dist-info` folder with a `METADATA` file of UTF-8 text holding
    one-line headers (a line `Name: value` each, up to the first empty line) for this to
    answer: else None. No folder found: the package is not installed, (None,)."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and getattr(finder, "find_distributions", None) is not None:
            return None
    for entry in sys.path:
        if not isinstance(entry, str):
            return None
        if os.path.basename(entry).lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(entry or ".")
        except OSError:
            if os.path.exists(entry or "."):
                return None  # a zip file (or a folder not listed): its own reader's
            continue
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            if low.rpartition(".")[0].partition("-")[0] != DISTRIBUTION:
                continue
            if not low.endswith(".dist-info"):
                return None
            return _plain_headers(os.path.join(entry, child, "METADATA"))
    return (None,)


def _plain_headers(path: str) -> tuple[list[str] | None] | None:
    """The `Project-URL` values of the metadata file at `path`, as `email`'s parser gives them
    for one-line headers (the text after `:`, leading blanks dropped), as a 1-tuple; None when
    the file cannot be read or is not all such headers up to its first empty line."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    if not text or text.startswith("From "):
        return None
    end = text.find("\n\n")  # the headers end at the first empty line (the description after)
    urls: list[str] = []
    for line in (text if end < 0 else text[:end]).split("\n"):
        if not line:
            break
        name, colon, value = line.partition(":")
        if not colon or not name or not _NAME_CHARS.issuperset(name):
            return None  # folded, or not a header: `email` knows what it means
        if name.lower() == "project-url":
            urls.append(value.lstrip(" \t"))
    return (urls,)


def oscal_namespace() -> str:
    """The `ns` of every OSCAL property auditor defines: `<home>/ns/oscal`, else `FALLBACK_NS`."""
    home = project_home()
    return f"{home}/ns/oscal" if home else FALLBACK_NS
