"""Secrets by value: what in a string is a credential, whatever key it sits under.

Takes one string, gives the secret substrings in it. The maintained `detect-secrets` plugins
(used as a library: cloud keys, GitHub/GitLab/Slack/Stripe/npm/PyPI tokens, JWTs, private-key
blocks, basic-auth URLs, high-entropy strings) do most of it; a few patterns of our own cover
what they cannot know: credentials by their place in a URL, a header line or a command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain

from auditor.common import lazy
from auditor.common.lazyre import lazy_regex

# detect-secrets' plugins import `requests` only to verify a secret online, which is never asked
# here: it loads on first use, not with them (`lazy.deferring`); so do `multiprocessing` and
# `subprocess`, which its package imports to scan files and git history in a pool.
with lazy.deferring("requests"), lazy.deferring("multiprocessing"), lazy.deferring("subprocess"):
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
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

from auditor.redact.commands import (
    DASH_NAME,
    PASS_NAME,
    PATH,
    SECRET_NAME,
    SUBSTITUTION,
    command_secrets,
    continued_forms,
    has_nested_quotes,
    is_pass_flag,
    joined_lines,
    option_takes,
    quoted_forms,
    unquoted_readings,
)
from auditor.redact.memory import cookie_values, credential_like
from auditor.redact.names import names_a_secret
from auditor.redact.plain import MARKER_START, between_markers, is_env_reference, is_marker

# Format detectors: each yields the secret itself. (The keyword, IP and IBM plugins are left
# out: keys are our `names` layer's job, and an allowed IP is not a secret. So is the npm
# plugin: its pattern, `//.+/:_authToken=…`, takes quadratic time on a run of slashes (30 KB
# of `/` took 2.9 s); `_authToken=X` is a secret-named assignment below, `npm_…` a known form.)
_DETECTORS: tuple[BasePlugin, ...] = (
    AWSKeyDetector(),
    AzureStorageKeyDetector(),
    BasicAuthDetector(),
    DiscordBotTokenDetector(),
    GitHubTokenDetector(),
    GitLabTokenDetector(),
    JwtTokenDetector(),
    MailchimpDetector(),
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
_PEM_BLOCK = lazy_regex(
    globals(),
    "_PEM_BLOCK",
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*-----|\Z)"
    r"|PuTTY-User-Key-File-\d.*\Z",
    re.DOTALL,
)
_ENTROPY = Base64HighEntropyString()
_ENTROPY_RUN = re.compile(r"[A-Za-z0-9+/=_\-]{20,}")
_ENTROPY_LIMIT = 4.5  # detect-secrets' default for base64-like strings
# An identifier: lower-case prefix, underscore, then a ULID/UUID-like body (`tmpl_01HZX…`).
_PREFIXED_ID = re.compile(r"^[a-z]{2,8}_[0-9A-HJKMNP-TV-Z]{20,32}$")

_VALUE = r"(?P<v>[^\s'\"&;|,)]+)"
# an assignment's unquoted value, up to a space, a quote or a backslash before one (`X\"`: the
# end of `sh -c \"… --password=X\"`), or a separator
_RUN = r"(?:[^\s'\"&;|\\]|\\(?![\"']))+"
# The word after `Bearer`, `Basic` or `token` (`Authorization: Bearer X`, `token X`), the
# space maybe escaped for the shell (`--header=Authorization:Bearer\ X`).
# (`--token X` is an option: its value is judged as `_ARGUMENTS` judge it, `--token github` kept)
_AFTER_WORD = re.compile(
    r"(?i)\b(?:bearer|basic|(?<!-)token)(?:\\?\s)+(?P<v>[A-Za-z0-9_\-.~+/=:]{6,})"
)
# In a text that is only shown (`find_secrets(shown=True)`), one of these words after
# `_AFTER_WORD`'s words says what went wrong (`401 Unauthorized: token expired`, `token
# unknown`, `Bearer token missing`): not a secret unless another detector or the memory says
# so. Only these: any word of lower-case letters let through showed a passphrase (`Bearer
# correct_horse_battery_staple`) in the message and in the analytics access the state file
# keeps. (`_AFTER_WORD` takes words of 6 characters or more only.)
# In running text, one word of lower-case letters after `token`, maybe capitalised
# (`_PROSE_WORD`: no digit, `_` or `-`), is prose, not a credential (`token absent`, `env token
# unchanged`, `Token Rotation Required` in a rule's title): taken, it was hidden there and,
# learned, in every text holding the word, the state file's memory keeping it for every later
# run (tester T93 #4). Not after `Bearer` or `Basic`, and not where `token` begins a value: on
# a header's line (`Authorization: token X`, GitHub's form; `curl -H "X-Auth: token X"`), right
# after a quote, `=` or `:` (`H="token X"`), or on the line after a key (`Authorization:⏎  token
# X`): there one word is a credential, however weak (`Bearer changeme`: reviews R67 #2, R71).
# A passphrase of words (`correct_horse_battery_staple`), a word with a digit or a second
# capital is taken everywhere (but, in a shown text, the words of `_STATUS_WORDS` in any case:
# `TOKEN EXPIRED`).
_PROSE_WORD = re.compile(r"[A-Za-z][a-z]{5,15}:?")
_HEADER_BEFORE = re.compile(r"(?i)authori[sz]ation|header|(?<![\w-])-H\b")
_VALUE_BEFORE = frozenset("\"'`=:([{,]")


def _prose_after_token(text: str, m: re.Match[str], value: str) -> bool:
    """`_AFTER_WORD`'s `m` is `token` and a word of prose, in running text (see above)."""
    if m[0][:5].lower() != "token" or not _PROSE_WORD.fullmatch(value):
        return False
    line = text.rfind("\n", 0, m.start()) + 1
    before = text[line : m.start()].rstrip()
    if _HEADER_BEFORE.search(before) or (before and before[-1] in _VALUE_BEFORE):
        return False
    if before:  # words before it on its line: running text
        return True
    above = text[:line].rstrip()  # `token` begins its line: not as a key's value
    return not above or above[-1] not in _VALUE_BEFORE


_STATUS_WORDS = frozenset(
    [
        "expired",
        "expires",
        "missing",
        "unknown",
        "invalid",
        "revoked",
        "required",
        "malformed",
        "rejected",
        "refused",
        "denied",
        "disabled",
        "blocked",
        "absent",
        "cannot",
        "should",
        "provided",
        "supplied",
        "header",
        "format",
        "scopes",
        "without",
        "mismatch",
    ]
)
# After a field's name in a YAML text, before its value on a later line: the colon, a tag or an
# anchor (`!!str`, `&a`), a comment (of 200 characters at most: each name's attempt reads no
# further, so `password: #` repeated with no line end is not read to its end once per name).
_YAML_AFTER_NAME = r"[ \t]*:(?:[ \t]+(?:!!?[\w\-]*|&[\w\-]+))*[ \t]*(?:#[^\n]{0,200})?"
# A netrc entry's separator (white space, or the `\n` and `\t` escapes `printf` reads) and word.
_NETRC_GAP = r"(?:\s|\\[nt])+"
_NETRC_WORD = r"[^\s'\"\\]+"
# Credentials by their place. Each pattern has one group `v`: the secret part.
_PLACED: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?i)(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*://[^\s/:@'\"]*:(?P<v>[^\s/@'\"]+)@"),
    re.compile(rf"(?i)[?&#;]{SECRET_NAME}={_VALUE}"),
    _AFTER_WORD,
    # A name is tried from the start of its run of name characters only: tried from every
    # letter of a long run (`a-a-a-…`), each attempt scans the rest of it (quadratic).
    # (the value on the name's line: under a nested YAML block, `auth:⏎  token: X`, the
    # next line's key is no value)
    # (not a reference's name, `${API_KEY:-$FALLBACK}`: its default is no field's value)
    re.compile(
        rf"(?i)(?<![A-Za-z0-9_\-/])(?<!\$\{{){SECRET_NAME}[ \t]*:[ \t]*(?P<v>[^\s'\"@]{{6,}})"
    ),
    # ... or on a later line (`password:⏎  X`, `Temporary password:⏎X`, blank lines between,
    # CRLF, a comment after the name or the value, quoted), the whole line one word: a key there
    # (`auth:⏎  token: X`, `password:⏎  enabled: true`) is no value, nor a list item or prose.
    # (One attempt per name, each scanning the white space after it: linear time.)
    re.compile(
        rf"(?im)(?<![A-Za-z0-9_\-/]){SECRET_NAME}{_YAML_AFTER_NAME}(?:\r?\n[ \t]*)+"
        r"['\"]?(?P<v>[^\s'\"@]{5,}[^\s'\"@:])['\"]?(?=(?:[ \t]+#[^\n]*|[ \t]*)\r?$)"
    ),
    # (`--auth=github`: an option's value, taken as `_ARGUMENTS` take it, `option_takes`)
    re.compile(rf"(?i)(?<![A-Za-z0-9_\-])(?P<o>{SECRET_NAME})=[\"']?(?P<v>{_RUN})"),
    # a quoted value of a secret-named field in a JSON, YAML or INI text held in a string
    # (`{"password": "X"}`, `secret_key = 'X'`), or of a secret-named entry assigned in code
    # (`os.environ['API_KEY'] = 'X'`, `ENV["DB_PASSWORD"]="X"`), the value at most 200
    # characters (linear time)
    re.compile(
        rf"(?i)(?<![A-Za-z0-9_\-/]){SECRET_NAME}(?:['\"][ \t]*\]|['\"])?[ \t]*[:=][ \t]*"
        r"(?P<q>['\"])(?P<v>(?:(?!(?P=q))[^\n]){4,200})(?P=q)"
    ),
    # `pass=X`, `pw=X`: too short a name for the word list (`bypass`, `compass`); a variable
    # named for a password by such a last word or by a name of its own (`DB_PASS=X`,
    # `SMTP_PASS=X`, `LDAP_BIND_PW=X`, `SSHPASS=X`, which `sshpass -e` reads, SonarQube's
    # `SONAR_LOGIN=X`, Terraform's `TF_TOKEN_app_terraform_io=X`, and in capitals, as
    # variables are named, a personal access token's `GH_PAT=X`, `CI_JOB_JWT=X`,
    # `GOOGLE_CREDENTIALS=X`: `credentials=include` is a setting), `export`ed or not; not a
    # flag (`ANSIBLE_ASK_PASS=true`: `commands.is_pass_flag`)
    re.compile(
        r"(?i)(?<![A-Za-z0-9_\-])(?P<e>(?:[A-Za-z0-9]+_)*(?:pass|pw)|sshpass|sonar_login|"
        r"tf_token_\w+|(?-i:(?:[A-Z0-9]+_)*(?:PAT|JWT|CREDENTIALS)))"
        rf"=[\"']?(?P<v>{_RUN})"
    ),
    # a netrc entry (`machine H login U password X`, on one line or several, or written with
    # `\n` escapes by `printf`): its password, any word when a `login` or `account` is given
    # (else one that may be a credential: `machine learning password reset` is prose)
    re.compile(
        rf"(?i)(?<![\w\-])machine{_NETRC_GAP}{_NETRC_WORD}"
        rf"(?P<l>(?:{_NETRC_GAP}(?:login|account|port){_NETRC_GAP}{_NETRC_WORD})*)"
        rf"{_NETRC_GAP}password{_NETRC_GAP}(?P<v>{_NETRC_WORD})"
    ),
    # the text of an XML element named for a secret itself (`<password>X</password>`,
    # `<token>`, `<secret>`, `<apiKey>`, `<SecretAccessKey>`, any case, with attributes or a
    # namespace: Maven's settings.xml, NuGet.Config): `names.names_a_secret` judges the name,
    # but a bare `<key>` (a plist's, S3's object key) holds none
    re.compile(
        r"<(?P<t>[A-Za-z_][\w.\-:]{0,60})(?:\s[^<>]{0,300})?>\s*"
        r"(?P<v>[^<>\s](?:[^<>]{0,500}[^<>\s])?)\s*</(?P=t)\s*>"
    ),
    # a password in an address written without a scheme (`ci:X@proxy:3128` in `HTTPS_PROXY`,
    # an `allowedDomains` entry `ci:X@proxy.example`, Go's `user:X@tcp(db:3306)/app`): its
    # host a domain name, an IPv4 address, `localhost`, or a name with a port; the password
    # one that may be a credential (`credential_like`: not `owner:jane.doe@acme.example`,
    # `npm:lodash@4.17.21`, `nginx:1.25@sha256:…`), its user no scheme (`mailto:`)
    re.compile(
        r"(?<![\w.+\-:/@%$])(?P<u>[A-Za-z0-9._~!*+\-]{1,64}):(?P<v>[^\s/@:'\"<>`]+)@"
        r"(?=(?:localhost|[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z][A-Za-z0-9\-]*"
        r"|[0-9]{1,3}(?:\.[0-9]{1,3}){3})(?::[0-9]{1,5})?(?![\w.\-:])"
        r"|[A-Za-z0-9.\-]+:[0-9]{1,5}(?![\w.\-:])|(?:tcp|unix)\()"
    ),
    re.compile(
        r"(?P<v>\b(?:sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{35}|xox[abposr]-[\w\-]{10,}|"
        r"npm_[A-Za-z0-9]{36}))"
    ),
)
# A secret-named field's block scalar in a YAML text (`password: |⏎  X⏎  Y`): every line of it,
# those indented under the field's line (at most `_BLOCK_LINES` lines read per field).
_BLOCK_HEAD = re.compile(
    rf"(?i)(?<![A-Za-z0-9_\-/]){SECRET_NAME}[ \t]*:(?:[ \t]+(?:!!?[\w\-]*|&[\w\-]+))*[ \t]*"
    r"[|>][-+0-9]*[ \t]*(?:#[^\n]{0,200})?\r?\n"
)
_BLOCK_LINES = 200
# A line that is a key (`enabled: true`, `password: |`): the block holds no such value, and one
# read as a value would be remembered and scrubbed everywhere after.
_KEY_LINE = lazy_regex(globals(), "_KEY_LINE", r"(?:-[ \t]+)?[^\s:#'\"][^:#'\"]*:(?:[ \t]|$)")


def _block_lines(text: str) -> Iterator[str]:
    for m in _BLOCK_HEAD.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        head = text[line_start : m.start()]
        indent = len(head) - len(head.lstrip(" \t-"))
        at = m.end()
        for _ in range(_BLOCK_LINES):
            if at >= len(text):
                break
            end = text.find("\n", at)
            end = len(text) if end == -1 else end
            line = text[at:end].rstrip("\r")
            at = end + 1
            body = line.lstrip(" \t")
            if not body:
                continue
            if len(line) - len(body) <= indent or _KEY_LINE.match(body):
                break
            yield body.rstrip(" \t")


# A cookie header in a text (`curl -H "Cookie: session=X; theme=Y"`): each cookie's value
# (`memory.cookie_values`), the line read up to a quote or its end; a value may be quoted after
# its `=` (`sid="X"`, `sid=\\"X\\"` inside a double-quoted argument).
_COOKIE_LINE = re.compile(
    r"(?i)(?<![A-Za-z0-9_\-])(?:set-)?cookie:[ \t]*"
    r"(?P<v>(?:[^'\"\n\\]|\\(?!\")|(?<==)\"[^\"\n]*\"|(?<==)\\\"[^\"\n\\]*\\\")*)"
)
# an argument: quoted whole (spaces and all: `-p "pass word"`), or up to a space or quote
_ARG = r"""(?P<v>"[^"\n]+"|'[^'\n]+'|['"]?(?:[^\s'"\\]|\\(?!["']))+)"""


_LINE = r"|;&\n"  # a `then` word is looked for on the command's own line


def _same(commands: str, stop: str = "|;&") -> str:
    """Further on in the same command as one of `commands` (not past a pipe or `;`/`&&`), up to
    the next mention of one of them at most: a match attempt starts at that mention and sees
    the rest, so each attempt scans only its own stretch and a long string of mentions costs
    linear time (scanning to the end from each mention was quadratic, cubic with `login`)."""
    return rf"\b(?:(?![\s(`](?:{commands})\b)[^{stop}])*?\s"


# curl's cookies on its command line (`curl -b 'sid=X; theme=Y'`, `--cookie sid=X`); a value
# without `=` is the file curl reads them from, no cookie.
# (each curl command to its pipe or `;`/`&` outside quotes, then each option in it: linear).
# curl may follow any separator or quote (`bash -c "curl …"`, `cd x;curl`, `/usr/bin/curl`,
# `curl.exe`), runs on over `\` line continuations, and takes `-b` among other short options
# (`-sb X`).
_CURL_COMMAND = re.compile(
    r"""(?:^|(?<=[\s(`'"|;&/\\]))curl(?:\.exe)?\b"""
    r"""(?:[^|;&\n'"\\]|\\\r?\n|\\.|'[^'\n]*'|"[^"\n]*"|['"\\])*"""
)
_CURL_COOKIE = re.compile(rf"\s(?:-[A-Za-z]*b\s*|--cookie(?:\s+|=)){_ARG}")
_SMB = "smbclient|rpcclient|smbmap|smbcacls|net"
# Command-line arguments that carry a password: any option named for one (`--password X`,
# `--token=X`, `-storepass X`); the tools' own options and positional passwords are read word
# by word (`auditor.redact.commands`).
_ARGUMENTS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"(?i)(?:^|\s)(?P<o>--(?:{SECRET_NAME}|{PASS_NAME}))(?:=|\s+){_ARG}"),
    re.compile(rf"(?i)(?:^|\s)(?P<o>-{DASH_NAME})(?:=|\s+){_ARG}"),
    re.compile(r"(?i)(?:^|\s)-pass(?:in|out|word)?\s+['\"]?pass:(?P<v>[^\s'\"]+)"),
    re.compile(
        rf"(?:^|\s)(?:curl|wget){_same('curl|wget')}(?:-u|--user|-U|--proxy-user)(?:\s*|=)"
        r"['\"]?[^\s:'\"]*:['\"]?(?P<v>(?:[^\s'\"\\]|\\(?![\"']))+)"
    ),
    # an API key given as curl's user, its password empty (`curl -u KEY:`, `--user KEY:`,
    # `-uKEY:`: Stripe's idiom): a user of 16 characters or more, as for Basic's user with no
    # password (a short one is a user's name: `-u ci:`)
    re.compile(
        rf"(?:^|\s)(?:curl|wget){_same('curl|wget')}(?:-u|--user|-U|--proxy-user)(?:=|\s*)"
        r"['\"]?(?P<v>[^\s:'\"\\]{16,}):(?=['\"]?(?:\s|$))"
    ),
    re.compile(
        rf"(?:^|\s)(?:{_SMB}){_same(_SMB)}(?:-U|--user)"
        r"(?:\s*|=)['\"]?[^\s%'\"]+%['\"]?(?P<v>(?:[^\s'\"\\]|\\(?![\"']))+)"
    ),
    # `echo X | docker login --password-stdin`, `echo X | sudo -S …`: a password piped in
    # (`printf`, `cat <<< X` and here-strings: `commands._piped_secrets`)
    re.compile(
        r"(?:^|\s)echo\s+(?:-\w+\s+|'%s'\s+|\"%s\"\s+)*['\"]?"
        r"(?P<v>[^\s'\"|]+)['\"]?\s*\|(?:[^|;&]*--password-stdin|\s*sudo\s+"
        r"(?:-\w+\s+(?:\w+\s+)?)*-[a-zA-Z]*S\b)"
    ),
    # positional passwords: `htpasswd -b FILE USER PASS` (`-nb USER PASS`),
    # `rabbitmqctl add_user USER PASS` / `change_password USER PASS`
    re.compile(
        r"(?:^|\s)htpasswd\s+(?:-[a-zA-Z]+\s+(?:\d+\s+)?)*-[a-mo-zA-Z]*b[a-mo-zA-Z]*\s+"
        r"(?:-[a-zA-Z]+\s+(?:\d+\s+)?)*\S+\s+\S+\s+" + _ARG
    ),
    re.compile(
        r"(?:^|\s)htpasswd\s+(?:-[a-zA-Z]+\s+(?:\d+\s+)?)*-[a-zA-Z]*(?:nb|bn)[a-zA-Z]*\s+"
        r"(?:-[a-zA-Z]+\s+)*\S+\s+" + _ARG
    ),
    re.compile(
        rf"(?:^|\s)rabbitmqctl{_same('rabbitmqctl')}(?:add_user|change_password)\s+\S+\s+{_ARG}"
    ),
)
_REPAIRED = "\ufffd"  # what a byte that was not UTF-8 was read as
# Every placed or argument pattern needs one of these; most strings (names, ids) have none.
_TRIGGER = re.compile(
    r"[=:@]|-[-a-zA-Z]|sk-|AIza|xox|(?i:bearer|basic|token)\s|add_user|change_password|</"
    r"|(?i:password)[\s\\]"
)
_MIN_LEN = 6


def _keep(value: str) -> bool:
    return len(value) >= 4 and not value.startswith(MARKER_START) and not is_env_reference(value)


def _placed(text: str, shown: bool = False) -> Iterator[str]:
    """Credentials by their place in `text`, read with its line continuations joined as the
    shell joins them (`--password \\⏎  X`), and behind nested quotes or `\\u` escapes
    (`_unquoted`); each given as the stretch of `text` it is."""
    joined = joined_lines(text)
    found: Iterable[str] = _placed_joined(joined, shown)
    if "\\u" in joined or has_nested_quotes(joined):  # (substring tests: most have neither)
        found = chain(found, _unquoted(joined, shown))
    if joined is text:
        yield from found
        return
    for value in set(found):
        yield from continued_forms(text, value)


_UNICODE_ESCAPE = lazy_regex(globals(), "_UNICODE_ESCAPE", r"\\u([0-9a-fA-F]{4})")


def _unquoted(text: str, shown: bool) -> Iterator[str]:
    """Credentials that nested quoting hides from `_placed_joined`, found in the readings of
    `text` with one level of it undone (`commands.unquoted_readings`: `bash -c "deploy
    --password=\\"X\\""`, `$'X'`, `'"'"'X'"'"'`), and a secret-named field whose name is written
    with `\\u` escapes in a JSON text (`{"pass\\u0077ord": "X"}`); each given as the stretch of
    `text` it is written as (`commands.quoted_forms`)."""
    readings = unquoted_readings(text) if has_nested_quotes(text) else []
    if "\\u" in text:
        decoded = _UNICODE_ESCAPE.sub(lambda m: chr(int(m[1], 16)), text)
        if decoded != text:  # (`C:\\users`: no escape, nothing more to read)
            readings.append(decoded)
    for reading in dict.fromkeys(readings):
        if reading == text:  # (`bash -c "npm test"`, read as it stands already)
            continue
        for value in set(_placed_joined(reading, shown)):
            yield from quoted_forms(text, value)


def _placed_joined(text: str, shown: bool = False) -> Iterator[str]:
    arguments: Iterable[str] = ()
    if _TRIGGER.search(text):
        for pattern in _PLACED:
            for m in pattern.finditer(text):
                value = m["v"].rstrip("'\".,")
                if pattern is _AFTER_WORD and (
                    _prose_after_token(text, m, value)
                    or (shown and value.rstrip(":").lower() in _STATUS_WORDS)
                ):
                    continue  # `token absent`; `token expired`, in a message: what went wrong
                if not _taken(m):
                    continue
                if not SUBSTITUTION.match(value):  # `TOKEN=$(vault read …)` holds none
                    yield value
        yield from _block_lines(text)
        for m in _COOKIE_LINE.finditer(text):
            yield from cookie_values(m["v"], folded=m[0][:4].lower() == "set-")
        for command in _CURL_COMMAND.finditer(text):
            for m in _CURL_COOKIE.finditer(command.group()):
                yield from cookie_values(m["v"].strip("'\""))
        arguments = (m["v"] for pattern in _ARGUMENTS for m in pattern.finditer(text) if _taken(m))
    for value in chain(arguments, command_secrets(text)):
        if len(value) > 2 and value[0] in "'\"" and value[-1] == value[0]:
            value = value[1:-1]  # quoted whole
        elif len(value) > 3 and value[:2] == "$'" and value[-1] == "'":
            value = value[2:-1]  # bash's ANSI-C quoting, `$'X'`
        else:
            value = value.lstrip("'\"").rstrip("'\".,;")  # (an unquoted `;` ends a command)
        if not PATH.fullmatch(value) and not SUBSTITUTION.match(value):
            yield value
            if value.endswith(")") and "(" not in value:  # `$(docker login -p X)`: X too
                yield value.rstrip(")")
            if ">" in value[1:]:  # `-p X>/dev/null`: X too
                yield value[: value.index(">", 1)]


def _taken(m: re.Match[str]) -> bool:
    """Whether the value a pattern found is a secret by what else it found: the value of an
    option (its group `o`: `--auth github`) as `commands.option_takes` judges it (an option
    named `auth`, `key`, `token` or `sig` takes a word that is no credential, `--auth github`,
    `--signature sha256`, which would be remembered and scrubbed from every key and value
    after); a variable's (`e`) unless it is a flag (`ANSIBLE_ASK_PASS=true`); an XML
    element's text (`t`) when its name names a secret itself (`password`, `apiKey`, not
    `key`, `passwordPolicy`); a netrc password with no `login` (`l`) and the password of an
    address with no scheme (`u`) when it may be a credential, the latter not after a scheme
    such as `mailto:`."""
    groups = m.re.groupindex
    if "o" in groups:
        return m["o"][:1] != "-" or option_takes(m["o"], m["v"].strip("'\""))
    if "e" in groups:
        return not is_pass_flag(m["e"])
    if "t" in groups:
        name = m["t"].rpartition(":")[2]
        return name.lower() not in ("key", "keys") and names_a_secret(name)
    if "l" in groups:
        return bool(m["l"]) or credential_like(m["v"])
    if "u" in groups:
        return m["u"].lower() not in _OPAQUE_SCHEMES and credential_like(m["v"])
    return True


# The schemes of addresses written with no `//` (`mailto:jsmith1987@acme.example`): what comes
# after one and before an `@` is a user's name, no password.
_OPAQUE_SCHEMES = frozenset(
    {"mailto", "sip", "sips", "xmpp", "im", "pres", "acct", "tel", "urn", "news", "nntp"}
    | {"geo", "data", "cid", "mid", "jabber", "skype", "callto", "facetime", "msteams"}
)


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


def _in(part: str, shown: bool = False) -> Iterator[str]:
    yield from _placed(part, shown)
    yield from _detected(part)
    yield from _high_entropy(part)


def _across_repairs(part: str, shown: bool = False) -> Iterator[str]:
    """Secrets that a byte which was not UTF-8 split (the API text was read with U+FFFD in its
    place, `auditor.fetch.text`): found in the text without the U+FFFD, given as the stretch
    of `part` they span, so the marker covers the whole damaged secret."""
    kept = [i for i, ch in enumerate(part) if ch != _REPAIRED]
    joined = "".join(part[i] for i in kept)
    for secret in set(_in(joined, shown)):
        start = joined.find(secret)
        while start != -1:
            yield part[kept[start] : kept[start + len(secret) - 1] + 1]
            start = joined.find(secret, start + 1)


# A quoted option value an earlier release redacted only in part (0.1.0 replaced its first word):
# `--password "[secret fp:1a2b3c4d len:7] horse battery staple"`. The whole quoted value is the
# secret, marker included (each side bounded, so a long string costs linear time).
_PART_REDACTED = lazy_regex(
    globals(),
    "_PART_REDACTED",
    rf"(?i)(?:^|\s)--?{SECRET_NAME}(?:=|\s+)(?P<q>['\"])"
    r"(?P<v>[^'\"\n]{0,200}?\[secret fp:[0-9a-f]{8} len:\d+\][^'\"\n]{0,200}?)(?P=q)",
)


def _part_redacted(text: str) -> Iterator[str]:
    if MARKER_START not in text:
        return
    for m in _PART_REDACTED.finditer(text):
        if not is_marker(m["v"]):  # more than the marker alone
            yield m["v"]


def find_secrets(text: str, shown: bool = False) -> list[str]:
    """The secret substrings of `text`, longest first (markers and `${VAR}` references skipped).
    `shown`: `text` is only shown (an error body, a message), so a word after `token`,
    `Bearer` or `Basic` that says what went wrong (`token expired`, `_STATUS_WORDS`) is not a
    secret."""
    found: set[str] = set()
    for part in between_markers(text):
        if len(part) >= _MIN_LEN:
            found.update(_in(part, shown))
            if _REPAIRED in part:
                found.update(_across_repairs(part, shown))
    found = set(filter(_keep, found))
    found.update(_part_redacted(text))
    return sorted(found, key=len, reverse=True)
