"""Redact: any JSON value or text in, the same with every secret replaced by a marker out.

Every input passes through here before anything stores or prints it: API items, proposed and
live settings files, policy test inputs, error bodies (these through `Redactor.redact_shown`,
which learns nothing: only what is audited teaches the memory). Four layers, each catching what the
others miss, top-down: `names` (where secrets live by meaning and by key name), `values` (what
is a secret by its form: `detect-secrets` plugins, URL credentials, command-line passwords),
`memory` (every secret once found, recognised wherever it shows up later, by value in this
process and by keyed fingerprint across runs), and `redactor` (the two-pass walk, the markers
`[secret fp:1a2b3c4d len:40]` and the caches that make it cheap).
"""

from __future__ import annotations

from auditor.redact.memory import MIN_SECRET_LEN, SecretMemory, encoded_forms
from auditor.redact.names import NON_SECRET_NAMES, is_secret_key, words
from auditor.redact.plain import (
    MARKER_RE,
    MARKER_START,
    between_markers,
    is_env_reference,
    is_marker,
    marker_fingerprint,
)
from auditor.redact.redactor import Redactor

# What the layers catch, as a number: raise it whenever a layer catches more. A store whose
# rows were redacted under other rules (or by another auditor release) is redacted again when
# next opened for writing, and redacted as it is read until then (`auditor.store`), so a secret
# a newer auditor catches does not stay in plain text in rows an older one stored.
RULES_VERSION = 11  # 11: a password made of a word given to `--token` (T99 #2)
# 10: a remembered secret's hex (and, by the process that learned it,
# the secret reversed) is hidden (T97 #3); 9: repairs analytics days a re-fetch wrote back in
# clear (T95 #1: a secret learned after the day was first stored, kept from the stored copy)
# (8: curl -u KEY:, SSHPASS/…_PASS=, netrc, XML elements, user:pw@host, …)
# (7: quoted command lines, pin/passcode, base64 after a separator, twice encoded)
# (6: numbers where a secret is; percent-escapes in any case)

__all__ = [
    "MARKER_RE",
    "MARKER_START",
    "MIN_SECRET_LEN",
    "NON_SECRET_NAMES",
    "RULES_VERSION",
    "Redactor",
    "SecretMemory",
    "between_markers",
    "encoded_forms",
    "is_env_reference",
    "is_marker",
    "is_secret_key",
    "marker_fingerprint",
    "words",
]
