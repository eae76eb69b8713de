"""Secrets by value: what in a string is a credential, whatever key it sits under.

Takes one string, gives the secret substrings in it. The maintained `detect-secrets` plugins
(used as a library: cloud keys, GitHub/GitLab/Slack/Stripe/npm/PyPI tokens, JWTs, private-key
blocks, basic-auth URLs, high-entropy strings) do most of it; a few patterns of our own cover
what they cannot know: credentials by their place in a URL, a header line or a command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from auditor.redact.plain import between_markers, is_env_reference

# Format detectors: each yields the secret itself. (The keyword, IP and IBM plugins are left
# out: keys are our `names` layer's job, and an allowed IP is not a secret.)
_DETECTORS: tuple[BasePlugin, ...] = (
    AWSKeyDetector(),
    AzureStorageKeyDetector(),
    BasicAuthDetector(),
    DiscordBotTokenDetector(),
    GitHubTokenDetector(),
    GitLabTokenDetector(),
    JwtTokenDetector(),
    MailchimpDetector(),
    NpmDetector(),
    OpenAIDetector(),
    PypiTokenDetector(),
    SendGridDetector(),
    SlackDetector(),
    SquareOAuthDetector(),
    StripeDetector(),
    TelegramBotTokenDetector(),
    TwilioKeyDetector(),
)
_PRIVATE_KEY = PrivateKeyDetector()
_PEM_BLOCK = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*-----|\Z)"
    r"|PuTTY-User-Key-File-\d.*\Z",
    re.DOTALL,
)
_ENTROPY = Base64HighEntropyString()
_ENTROPY_RUN = re.compile(r"[A-Za-z0-9+/=_\-]{20,}")
_ENTROPY_LIMIT = 4.5  # detect-secrets' default for base64-like strings
# An identifier: lower-case prefix, underscore, then a ULID/UUID-like body (`tmpl_01HZX…`).
_PREFIXED_ID = re.compile(r"^[a-z]{2,8}_[0-9A-HJKMNP-TV-Z]{20,32}$")

_SECRET_NAME = (
    r"[A-Za-z0-9_\-]*(?:token|secret|passw(?:or)?d|pwd|api[_\-]?key|apikey|access[_\-]?key|"
    r"private[_\-]?key|credential|auth|signature|sig|key)"
)
_VALUE = r"(?P<v>[^\s'\"&;|,)]+)"
# Credentials by their place. Each pattern has one group `v`: the secret part.
_PLACED: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s/:@'\"]*:(?P<v>[^\s/@'\"]+)@"),
    re.compile(rf"(?i)[?&#;]{_SECRET_NAME}={_VALUE}"),
    re.compile(r"(?i)\b(?:bearer|basic|token)\s+(?P<v>[A-Za-z0-9_\-.~+/=:]{6,})"),
    re.compile(rf"(?i)\b(?<![-/]){_SECRET_NAME}\s*:\s*(?P<v>[^\s'\"@]{{6,}})"),
    re.compile(rf"(?i)\b{_SECRET_NAME}=[\"']?(?P<v>[^\s'\"&;|]+)"),
    re.compile(
        r"(?P<v>\b(?:sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{35}|xox[abposr]-[\w\-]{10,}))"
    ),
)
# Command-line arguments that carry a password (`--password X`, `sshpass -p X`, `mysql -pX`).
_ARGUMENTS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"(?i)(?:^|\s)--?{_SECRET_NAME}(?:=|\s+)['\"]?{_VALUE}"),
    re.compile(r"(?:^|\s)sshpass\s+(?:-\w+\s+)*-p\s*['\"]?(?P<v>[^\s'\"]+)"),
    re.compile(r"(?:^|\s)(?:mysql|mysqldump|mariadb)\b[^|;&]*?\s-p['\"]?(?P<v>[^\s'\"]+)"),
    re.compile(r"(?:^|\s)redis-cli\b[^|;&]*?\s-a\s+['\"]?(?P<v>[^\s'\"]+)"),
    re.compile(
        r"(?:^|\s)(?:curl|wget)\b[^|;&]*?\s(?:-u|--user)\s+['\"]?[^\s:'\"]+:(?P<v>[^\s'\"]+)"
    ),
)
_MARKER_START = "[secret fp:"
# Every placed or argument pattern needs one of these; most strings (names, ids) have none.
_TRIGGER = re.compile(r"[=:@]|-[-a-z]|sk-|AIza|xox|(?i:bearer|basic|token)\s")
_MIN_LEN = 6


def _keep(value: str) -> bool:
    return len(value) >= 4 and not value.startswith(_MARKER_START) and not is_env_reference(value)


def _placed(text: str) -> Iterator[str]:
    if not _TRIGGER.search(text):
        return
    for pattern in (*_PLACED, *_ARGUMENTS):
        for m in pattern.finditer(text):
            yield m["v"].rstrip("'\".,")


def _detected(text: str) -> Iterator[str]:
    for detector in _DETECTORS:
        if isinstance(detector, RegexBasedDetector) and not isinstance(detector, JwtTokenDetector):
            yield from _matches(detector, text)
        else:
            yield from detector.analyze_string(text)
    if any(_PRIVATE_KEY.analyze_string(text)):
        found = [m.group(0) for m in _PEM_BLOCK.finditer(text)]
        yield from found or [text]


def _matches(detector: RegexBasedDetector, text: str) -> Iterator[str]:
    """A detector's matches; its `analyze_string` gives only the first group, which for some
    patterns is the prefix (`ghp`), not the token."""
    for regex in detector.denylist:
        for m in regex.finditer(text):
            group = m.group(m.lastindex) if m.lastindex else None
            yield group if group and len(group) >= _MIN_LEN else m.group(0).strip(" =:\"'")


def _high_entropy(text: str) -> Iterator[str]:
    for m in _ENTROPY_RUN.finditer(text):
        run = m.group(0).strip("=-_")
        if (
            len(run) >= 20
            and not _PREFIXED_ID.match(run)
            and _ENTROPY.calculate_shannon_entropy(run) > _ENTROPY_LIMIT
        ):
            yield run


def find_secrets(text: str) -> list[str]:
    """The secret substrings of `text`, longest first (markers and `${VAR}` references skipped)."""
    found: set[str] = set()
    for part in between_markers(text):
        if len(part) >= _MIN_LEN:
            found.update(s for s in (*_placed(part), *_detected(part), *_high_entropy(part)))
    return sorted(filter(_keep, found), key=len, reverse=True)
