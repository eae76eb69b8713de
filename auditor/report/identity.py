"""Who wrote a report: the project's own address, where package metadata declares one.

Reports handed to auditors and code scanning name the tool. A made-up address (an organisation
that is not ours) must never stand in for it, so the address comes only from the installed
package's metadata (`[project.urls]` in pyproject.toml: `Homepage`, else `Repository` or
`Source`, https only). Without one, SARIF leaves out `informationUri` (optional in SARIF 2.1.0;
code scanning names the tool by `tool.driver.name` and version) and OSCAL properties use
`FALLBACK_NS`.
"""

from __future__ import annotations

import functools
import importlib.metadata
from urllib.parse import urlsplit

#: Labels of `Project-URL` metadata taken as the project's home, best first.
HOME_LABELS = ("homepage", "repository", "source")
#: The OSCAL namespace while the package declares no home: `.invalid` is reserved (RFC 6761) and
#: can never be registered, so the URI names no organisation; it is an identifier, never fetched.
#: An http(s) URI rather than a URN: OSCAL allows any URI, but compliance-trestle's 1.1.3 models,
#: which GRC pipelines load documents with, accept only URLs with a scheme and host.
FALLBACK_NS = "https://auditor.invalid/ns/oscal"


@functools.cache
def project_home() -> str | None:
    """The project's https home page from the installed package's metadata, None without one."""
    try:
        entries = importlib.metadata.metadata("auditor").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    found: dict[str, str] = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        key = "".join(c for c in label.lower() if c.isalnum())
        parts = urlsplit(url.strip())
        if parts.scheme == "https" and parts.hostname and not parts.query and not parts.fragment:
            found.setdefault(key, url.strip().rstrip("/"))
    return next((found[k] for k in HOME_LABELS if k in found), None)


def oscal_namespace() -> str:
    """The `ns` of every OSCAL property auditor defines: `<home>/ns/oscal`, else `FALLBACK_NS`."""
    home = project_home()
    return f"{home}/ns/oscal" if home else FALLBACK_NS
