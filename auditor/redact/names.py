"""Where secrets live by name and by meaning: which JSON keys hold a secret string.

Takes a key (and whether its parent map holds secrets by meaning), gives a yes or no. Key names
are split into words (camelCase, snake_case, kebab-case, digits), so `apiKeys`, `X-Api-Key`,
`tokenValue` and `db_passwd` match while `maxOutputTokens`, `tokenUsage` and `templateId` do not.
"""

from __future__ import annotations

import functools
import re

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b|_|$)|[A-Z]?[a-z]+|[A-Z]+|\d+")

# One word that says "the value is a secret".
_SECRET_WORDS = frozenset(
    {
        "token",
        "secret",
        "secrets",
        "password",
        "passwords",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "credential",
        "credentials",
        "creds",
        "private",
        "apikey",
        "apikeys",
        "auth",
        "authentication",
        "authorization",
        "bearer",
        "cookie",
        "signature",
        "sig",
        "kubeconfig",
        "sshpass",  # the variable `sshpass -e` reads its password from
    }
)
# Words that say so as a key's last word only (`pin`, `dbPin`, `db_passcode`): elsewhere they
# name a setting about one (`pinCount`, `pinPolicy`: metadata words end those anyway).
_SECRET_LAST_WORDS = frozenset({"pin", "passcode"})
# Words before `pin` that make it a version pin, no PIN (`versionPin: v1.2.0`, `commitPin`).
_VERSION_PIN_WORDS = frozenset(
    {"version", "versions", "tag", "ref", "commit", "release", "sha", "digest", "revision"}
    | {"package", "dependency", "dependencies", "image", "tool", "runtime", "sdk", "plugin"}
    | {"action", "chart", "branch", "model", "node", "python", "ruby", "go", "rust", "java"}
)
# Two words in a row that say so (`api key`, `access key`, `client secret` is already `secret`).
_SECRET_PAIRS = frozenset(
    {
        *(
            (word, key)
            for key in ("key", "keys")
            for word in (
                "api",
                "access",
                "secret",
                "signing",
                "encryption",
                "master",
                "hmac",
                "account",
                "storage",
                "subscription",
                "app",
                "client",
                "consumer",
                "license",
                "session",
                "shared",
                "decryption",
                "wrapping",
            )
        ),
        ("connection", "string"),
        ("connection", "strings"),
        ("account", "json"),
        ("totp", "seed"),
        ("mfa", "seed"),
        ("otp", "seed"),
        ("recovery", "code"),
        ("recovery", "codes"),
        ("backup", "codes"),
        ("sonar", "login"),  # SonarQube's token, `SONAR_LOGIN`
    }
)
# A last word that turns a secret-sounding name into metadata about the secret.
_METADATA_TAILS = frozenset(
    {
        "id",
        "ids",
        "usage",
        "usages",
        "count",
        "counts",
        "limit",
        "limits",
        "type",
        "types",
        "name",
        "names",
        "mode",
        "url",
        "urls",
        "uri",
        "endpoint",
        "provider",
        "policy",
        "file",
        "path",
        "env",
        "var",
        "ref",
        "refresh",
        "expires",
        "expiry",
        "at",
        "ttl",
        "length",
        "len",
        "fingerprint",
        "enabled",
        "required",
        "scanning",
        "management",
        "rotation",
        "managers",
        "method",
        "methods",
        "scheme",
        "scope",
        "scopes",
        "host",
        "server",
        "region",
        "profile",
        "days",
        "hours",
        "minutes",
        "seconds",
        "version",
        "versions",
        "algorithm",
        "size",
        "bits",
        "format",
        "arn",
        "alias",
        "label",
    }
)
# Names that look like secrets and are not, kept as a table so each one is a reviewed decision.
NON_SECRET_NAMES = frozenset(
    {
        "templateid",
        "tokenusage",
        "inclusivetokenusage",
        "lasttokenusage",
        "lastcalltokenusage",
        "maxoutputtokens",
        "thinkingmaxtokens",
        "maxtokens",
        "inputtokens",
        "outputtokens",
        "cachereadtokens",
        "cachecreationtokens",
        "thinkingtokens",
        "billabletokens",
        "cloudauthrefresh",
        "restrictapikeycreationtomanagers",
        "secretscanning",
        "secretsmanagement",
        "authorname",
        "sessionid",
        "sessionretentiondays",
        "sessiondefaultsettings",
        "cloudsessionsync",
        "sessionsettings",
    }
)
# Maps whose every string value is a secret by meaning (the spec's `env`, `extraHeaders`).
SECRET_MAPS = frozenset({"env", "environment", "headers", "extraheaders", "httpheaders"})
# Hosted custom models: every string is a credential except these.
HOSTED_MAP = "hosted"
HOSTED_PLAIN = frozenset({"cloudProfile", "cloudRegion", "hostedBaseUrl", "cloudAuthRefresh"})
# Keys whose string value is a command line: scanned for `-p`/`--password` style arguments.
COMMAND_KEYS = frozenset({"command", "commands", "cmd", "args", "statusline"})


def words(name: str) -> list[str]:
    """The lower-case words of a key name: `X-Api-Key` → [x, api, key], `apiKeys` → [api, keys]."""
    return [w.lower() for w in _WORD.findall(name)]


@functools.lru_cache(maxsize=8192)
def is_secret_key(name: str) -> bool:
    """True when a JSON key's name says its string value is a secret.

    The words are read one at a time, never listed: every string of a settings document is
    asked (`Redactor` tells keys from values later), and the list of a 4 MB value's 2 million
    words (`a-a-a-…`) took 130 MB."""
    flat = _flat(name)
    if flat in NON_SECRET_NAMES:
        return False
    last: str | None = None
    before: str | None = None
    secret_word = paired = False
    for match in _WORD.finditer(name):
        word = match.group(0).lower()
        secret_word = secret_word or word in _SECRET_WORDS
        paired = paired or (last is not None and (last, word) in _SECRET_PAIRS)
        before, last = last, word
    if last is None or last in _METADATA_TAILS or last.endswith("tokens"):
        return False
    if last == "pin" and before in _VERSION_PIN_WORDS and not (secret_word or paired):
        return False
    return flat in {"key", "keys"} or secret_word or paired or last in _SECRET_LAST_WORDS


_NOT_ALNUM = bytes(b for b in range(128) if not chr(b).isalnum() or chr(b).isupper())


def _flat(name: str) -> str:
    """`name` lower-cased, only its ASCII letters and digits kept (`re.sub(r"[^a-z0-9]", "",
    name.lower())`, without a piece per match)."""
    return name.lower().encode("ascii", "ignore").translate(None, _NOT_ALNUM).decode()


def _last_word(name: str) -> str | None:
    """The last of `words(name)`, without listing them (see `is_secret_key`)."""
    last = None
    for last in _WORD.finditer(name):  # noqa: B007 (the last one is wanted)
        pass
    return last.group(0).lower() if last is not None else None


# The last words of a key that names a secret itself, whose number value is one too: the
# secret words but those naming a kind of credential or header rather than its value, and the
# nouns that name a secret only as a key's last word (`apiKey`, `pin`).
_SECRET_TAILS = (
    _SECRET_WORDS
    - {"auth", "authentication", "authorization", "bearer", "cookie", "kubeconfig", "private"}
    - {"sig", "signature"}
) | {"key", "keys", "passcode", "pin"}


@functools.lru_cache(maxsize=8192)
def names_a_secret(name: str) -> bool:
    """A secret key (`is_secret_key`) whose last word names the secret itself (`apiKey`,
    `dbPassword`, `pin`), not a setting about one (`passwordMaxAge`, `authRetries`)."""
    last = _last_word(name)
    return last is not None and last in _SECRET_TAILS and is_secret_key(name)


@functools.lru_cache(maxsize=8192)
def is_secret_map(name: str) -> bool:
    """True when every string under a map of this name is a secret (`env`, `extraHeaders`)."""
    return name.lower() in SECRET_MAPS


def is_command_key(name: str) -> bool:
    """True when the value under this key is a command line."""
    return name.lower() in COMMAND_KEYS
