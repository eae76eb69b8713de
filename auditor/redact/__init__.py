"""Redact: any JSON value or text in, the same with every secret replaced by a marker out.

Every input passes through here before anything stores or prints it: API items, proposed and
live settings files, policy test inputs, error bodies. Four layers, each catching what the
others miss, top-down: `names` (where secrets live by meaning and by key name), `values` (what
is a secret by its form: `detect-secrets` plugins, URL credentials, command-line passwords),
`memory` (every secret once found, recognised wherever it shows up later, by value in this
process and by keyed fingerprint across runs), and `redactor` (the two-pass walk, the markers
`[secret fp:1a2b3c4d len:40]` and the caches that make it cheap).
"""

from __future__ import annotations

from auditor.redact.memory import MIN_SECRET_LEN, SecretMemory, encoded_forms
from auditor.redact.names import NON_SECRET_NAMES, is_secret_key, words
from auditor.redact.plain import MARKER_RE, is_env_reference, is_marker, marker_fingerprint
from auditor.redact.redactor import Redactor

__all__ = [
    "MARKER_RE",
    "MIN_SECRET_LEN",
    "NON_SECRET_NAMES",
    "Redactor",
    "SecretMemory",
    "encoded_forms",
    "is_env_reference",
    "is_marker",
    "is_secret_key",
    "marker_fingerprint",
    "words",
]
