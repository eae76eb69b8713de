"""Secrets by their place on a command line, read word by word.

A hook command or a status line is a shell line: split at `|`, `;`, `&` and new lines into
simple commands, each split into words (a quoted stretch stays in its word; a command
substitution's opening, `$(docker`, names the command after it).
A word is then a secret by where it stands in its command: the value of a tool's password
option (`docker login -p X`, `mysql -pX`), a positional password (`vault login X`,
`mysqladmin password X`, `net use \\\\host\\share X`), the value of a secret-named setting
(`npm config set //r/:_authToken X`, `aws configure set aws_secret_access_key X`), or the
password part of a `user:password` argument (`http -a user:X`, `sqlplus user/X@db`).

Quoted stretches are read as command lines too (`bash -c "docker login -p X"`). Words, not
regular expressions over the whole line: a word that names the command again (the
user `docker` in `docker login -u docker -p X`) or a path to it (`/usr/bin/docker`,
`C:\\bin\\docker.exe`) cannot hide what follows, and each simple command is read once (twice
inside quotes), so a long hostile line costs linear time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain

from auditor.common.lazyre import lazy_regex
from auditor.redact.memory import credential_like
from auditor.redact.names import is_secret_key

# Where one simple command ends and the next begins (a command substitution, `$(docker login
# -p X)`, is read as part of the words around it: see `_name`).
_SEPARATOR = re.compile(r"[|;&\n]")
# A word: quoted stretches and plain characters, up to unquoted white space. An unclosed quote
# is a character of its word (each alternative starts with a distinct character: linear time).
_WORD = re.compile(r"""(?:"[^"\n]*"|'[^'\n]*'|[^\s"']+|["'])+""")
# Cheap first look: a line naming none of the commands below has none of their secrets.
_COMMANDS = (
    r"docker|podman|buildah|skopeo|nerdctl|helm|oras|crane|regctl|az|sshpass|mysql|mysqldump|"
    r"mysqladmin|mariadb|mariadb-dump|redis-cli|mongo|mongosh|mongodump|mongorestore|"
    r"mongoexport|mongoimport|sqlcmd|bcp|osql|ldap\w+|zip|unzip|zipcloak|7z|7za|7zr|openssl|"
    r"ssh-keygen|vault|cargo|gh|lftp|ncftp|twine|dotnet|nuget|http|https|xh|xhs|sqlplus|rman|"
    r"expdp|impdp|sqlldr|mc|net|config|configure"
)
_MENTION = re.compile(rf"(?<![\w\-])(?:{_COMMANDS})(?![\w\-])")

# The words that name a secret in an option or a setting (`--password`, `--api-key`, `-storepass`).
NAME_WORD = (
    r"(?:token|secret|passw(?:or)?d|passphrase|pwd|api[_\-]?key|apikey|access[_\-]?key|"
    r"private[_\-]?key|credential|auth|signature|sig|key|storepass|keypass)"
)
SECRET_NAME = rf"[A-Za-z0-9_\-]*{NAME_WORD}"
# An option named for a password by a word too short for `NAME_WORD`, which finds it inside
# other words (`--bypass`, `--spin`): `pass`, `passcode` or `pin` as a whole word of its name
# (`--pass`, `--db-pass`, `--auth-pass`, `--pin`, `--passcode`).
PASS_NAME = r"(?:[A-Za-z0-9]+[_\-])*(?:pass|passcode|pin)"
# A single-dash option named for a secret (`-password X`, `-storepass X`): its name is the word,
# maybe after other words (`-db-password`), so an attached value (`-pS3cretpassword`) is not
# taken for an option named `pS3cretpassword` (whose "value" would be the next argument).
DASH_NAME = rf"(?:[A-Za-z]+[_\-])*{NAME_WORD}"

# A line continuation (`\` at a line's end): the shell reads the next line on as the same
# command, the backslash and the line break gone. After `=` or `:` (`--password=\`, `-u ci:\`)
# the next line's indent goes too: the value is glued to its option there.
_CONTINUATION = lazy_regex(globals(), "_CONTINUATION", r"(?<=[=:])\\\r?\n[ \t]*|\\\r?\n")


def joined_lines(text: str) -> str:
    """`text` with its line continuations read as the shell does (`docker login -p \\⏎  X`
    is `docker login -p   X`)."""
    return _CONTINUATION.sub("", text) if "\\\n" in text or "\\\r\n" in text else text


def continued_forms(text: str, value: str) -> list[str]:
    """The stretches of `text` (which has line continuations) that read as `value` once
    joined (`P\\⏎W` for `PW`): what to replace in `text` itself."""
    if len(value) > 200:  # (a pattern per character: bounded)
        return [value] if value in text else []
    gap = r"(?:\\\r?\n[ \t]*)?"
    pattern = gap.join(map(re.escape, value))
    return list(dict.fromkeys(m[0] for m in re.finditer(pattern, text)))


class _Option:
    """The value of `option` given to one of `commands`, after the word `then` if one is named:
    `-p X`, `-p=X`, and with `attached` also `-pX`. With `after`, only the part of the value
    after that character is the secret (`-u user,X`, `-a user:X`)."""

    __slots__ = ("_compiled", "_glued", "_option", "after", "command", "then")

    def __init__(
        self, commands: str, option: str, attached: bool = False, then: str = "", after: str = ""
    ) -> None:
        self.command = re.compile(commands)
        # the option's patterns are compiled when a command line first names the command
        self._option = option
        glue = r"(?:=|(?=.))" if attached else "="
        self._glued = rf"(?:{option}){glue}(.+)"
        self._compiled: tuple[re.Pattern[str], re.Pattern[str]] | None = None
        self.then = then
        self.after = after

    def _patterns(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """The option alone (`-p`) and the option with its value glued (`-p=X`, `-pX`)."""
        if self._compiled is None:
            self._compiled = (re.compile(self._option), re.compile(self._glued, re.S))
        return self._compiled

    def values(self, words: list[str], names: list[str]) -> Iterator[str]:
        return (value for _, value in self.places(words, names))

    def places(self, words: list[str], names: list[str]) -> Iterator[tuple[int, str]]:
        """Each value, with the place of the word that holds it."""
        start = _after_command(names, self.command, self.then)
        if start is None:
            return
        option, glued = self._patterns()
        for i in range(start, len(words)):
            word = words[i]
            if option.fullmatch(word):
                at = i + 1
                value = words[at] if at < len(words) else ""
            elif m := glued.fullmatch(word):
                at, value = i, m.group(1)
            else:
                continue
            if self.after:
                value = value.partition(self.after)[2]
            if value:
                yield at, value


def _after_command(names: list[str], command: re.Pattern[str], then: str) -> int | None:
    """Where the options of `command` (after its `then` word, if any) start in the words."""
    for i, name in enumerate(names):
        if command.fullmatch(name):
            if not then:
                return i + 1
            for j in range(i + 1, len(names)):
                if names[j] == then:
                    return j + 1
            return None
    return None


def _name(word: str) -> str:
    """The command a word names: its last path part, unquoted, out of a command substitution
    or a sub-shell, without Windows' `.exe` (`/usr/bin/docker`, `out=$(docker`,
    `C:\\bin\\docker.exe` → `docker`)."""
    for opening in ("$(", "(", "`"):
        word = word.rpartition(opening)[2]
    name = word.strip("'\"").replace("\\", "/").rpartition("/")[2]
    return name[:-4] if name[-4:].lower() == ".exe" else name


_OPTIONS: tuple[_Option, ...] = (
    _Option("sshpass", "-p", attached=True),
    _Option("mysql|mysqldump|mysqladmin|mariadb|mariadb-dump", "-p", attached=True),
    _Option("redis-cli", "-a"),
    _Option(
        "docker|podman|buildah|skopeo|nerdctl|helm|oras|crane|regctl|az",
        "-p",
        attached=True,
        then="login",
    ),
    _Option("mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport", "-p"),
    _Option("sqlcmd|bcp|osql", "-P", attached=True),
    _Option(r"ldap\w+", "-w", attached=True),
    _Option(r"ldap\w+", "-y"),
    _Option("zip|unzip|zipcloak", "-P"),
    _Option("7z|7za|7zr", "-p", attached=True),
    _Option("openssl", "-k"),
    _Option("ssh-keygen", "-[NP]"),
    _Option("gh", "-b|--body", then="secret"),
    _Option("lftp", "-u|--user", after=","),
    _Option("ncftp|ncftpput|ncftpget", "-p"),
    _Option("twine", "-p"),
    _Option("dotnet|nuget", "-k", then="push"),
    _Option("http|https|xh|xhs", "-a|--auth", after=":"),
)


def _positional(words: list[str], start: int) -> list[str]:
    """The words from `start` on that are not options (`-x`, `--name`, `/user:x`)."""
    return [w for w in words[start:] if not w.startswith(("-", "/"))]


_TOOL = {name: re.compile(name) for name in ("vault", "cargo", "mysqladmin", "mc", "net")}
_DRIVE = lazy_regex(globals(), "_DRIVE", r"[A-Za-z]:|\*")
_ORACLE = re.compile("sqlplus|rman|expdp|impdp|sqlldr")


def _positionals(words: list[str], names: list[str]) -> Iterator[str]:
    head = names[0] if names else ""
    # `vault login X`, `cargo login X`: a token given as the argument (not `-method=…`, not `k=v`)
    for tool in ("vault", "cargo"):
        start = _after_command(names, _TOOL[tool], "login")
        if start is not None and start < len(words):
            word = words[start]
            if not word.startswith("-") and "=" not in word:
                yield word
    # `mysqladmin -u root password X`
    start = _after_command(names, _TOOL["mysqladmin"], "password")
    if start is not None and start < len(words):
        yield words[start]
    # `mc alias set NAME URL ACCESS SECRET` (and the older `mc config host add …`)
    for then in ("set", "add"):
        start = _after_command(names, _TOOL["mc"], then)
        if start is not None:
            args = _positional(words, start)
            if len(args) >= 4:
                yield args[3]
    # `net use [X:] \\host\share PASSWORD /user:NAME`
    start = _after_command(names, _TOOL["net"], "use")
    if start is not None:
        args = _positional(words, start)
        if args and _DRIVE.fullmatch(args[0]):
            args = args[1:]
        if len(args) >= 2 and args[0].startswith("\\\\") and args[1] != "*":
            yield args[1]
    # `sqlplus user/X@db` (and Oracle's other tools that take a connect string first)
    if _ORACLE.fullmatch(head):
        for word in words[1:]:
            if not word.startswith("-"):
                user, slash, rest = word.partition("/")
                if slash and user and rest and not rest.startswith("/"):
                    yield rest.partition("@")[0]
                break


# The last part of a setting's name that says it holds no secret, though an earlier part
# names one (`credential.helper store`: where credentials go, which policies must see).
_NOT_SECRET_SETTINGS = frozenset(
    {"helper", "username", "user", "usehttppath", "provider", "type", "method", "url", "path"}
    | {"file", "mode", "email", "name", "enabled", "store", "cache", "timeout"}
)


def _settings(words: list[str], names: list[str]) -> Iterator[str]:
    """`npm config set KEY X`, `aws configure set KEY X`, `poetry config KEY X`, `git config KEY
    X`: the value of a setting whose name is a secret's."""
    for i, name in enumerate(names):
        if name in ("config", "configure"):
            args = [w for w in words[i + 1 :] if not w.startswith("-")]
            if args and args[0] in ("set", "add"):
                args = args[1:]
            key = args[0].strip("'\"") if args else ""
            last = re.split(r"[.:/]", key)[-1].lower()
            if (
                len(args) >= 2
                and "=" not in key
                and "://" not in key
                and last not in _NOT_SECRET_SETTINGS
                and is_secret_key(key)
            ):
                yield args[1]
            return


# A quoted stretch: a command line inside it is read too (`bash -c "docker login -p X"`,
# `out="$(docker login -p X)"`, `ssh host 'mysql -pX'`).
_QUOTED = re.compile(r""""([^"\n]*)"|'([^'\n]*)'""")


def command_secrets(text: str) -> Iterator[str]:
    """The secret words of the commands in `text` and in its quoted stretches (quotes kept:
    the caller unquotes)."""
    mention = _MENTION.search(text) is not None
    piped = _PIPED_MENTION.search(text) is not None
    if not (mention or piped):
        return
    if mention:
        yield from _line_secrets(text)
    if piped:
        yield from _piped_secrets(text)
    for m in _QUOTED.finditer(text):
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        if mention and _MENTION.search(inner):
            yield from _line_secrets(inner)
        if piped and _PIPED_MENTION.search(inner):
            yield from _piped_secrets(inner)


def _line_secrets(text: str) -> Iterator[str]:
    for command in _SEPARATOR.split(text):
        if not _MENTION.search(command):
            continue
        words = _WORD.findall(command)
        yield from _word_secrets(words, [_name(w) for w in words])


def _word_secrets(words: list[str], names: list[str]) -> Iterator[str]:
    for option in _OPTIONS:
        yield from option.values(words, names)
    yield from _positionals(words, names)
    yield from _settings(words, names)


# -- a password given on standard input ------------------------------------------------------

# What a password piped in or given as a here-string (`<<< X`) goes to: an option that reads it
# (`docker login --password-stdin`, `gh auth login --with-token`), `sudo -S`, or `base64` (the
# `user:X` of a Basic header made on the command line: `$(echo -n ci:X | base64)`).
_PIPED_MENTION = re.compile(r"--password-stdin|--with-token|--token-stdin|<<<|\bbase64\b|\bsudo\b")
_STDIN_OPTIONS = frozenset({"--password-stdin", "--with-token", "--token-stdin"})
# A list of commands ends at `;`, `&`, `||` or a line break; its commands are piped at `|`.
_LIST = lazy_regex(globals(), "_LIST", r"\|\||[;&\n]")
_ECHO_OPTION = lazy_regex(globals(), "_ECHO_OPTION", r"-[neE]+")
_NEW_LINE_ESCAPE = lazy_regex(globals(), "_NEW_LINE_ESCAPE", r"(?:\\r)?(?:\\n)+$")


def _unquoted(word: str) -> str:
    if len(word) >= 2 and word[0] in "'\"" and word[-1] == word[0]:
        return word[1:-1]
    return word


def _reads_stdin(words: list[str], names: list[str]) -> bool:
    """A command that reads a password on its standard input (`--password-stdin`, `sudo -S`)."""
    if any(w in _STDIN_OPTIONS for w in words):
        return True
    if "sudo" not in names:
        return False
    # `sudo [-u root] -S …`: an option of sudo's, before its command (the first sudo only)
    value_next = False
    for word in words[names.index("sudo") + 1 :]:
        if word.startswith("--"):
            continue
        if word.startswith("-"):
            if "S" in word[1:]:
                return True
            value_next = True  # (maybe the option's value next: `-u root`)
        elif value_next:
            value_next = False
        else:
            break
    return False


def _here_string(words: list[str]) -> Iterator[str]:
    """The word given as a here-string (`<<< X`, `<<<X`, `<<<"X"`)."""
    for i, word in enumerate(words):
        if word.startswith("<<<"):
            rest = word[3:] or (words[i + 1] if i + 1 < len(words) else "")
            if rest:
                yield rest


def _written(words: list[str], names: list[str]) -> list[str]:
    """What the last `echo`/`printf`/`cat <<<` of a command writes: its words (quotes kept)."""
    for i in range(len(names) - 1, -1, -1):
        if names[i] == "echo":
            args = words[i + 1 :]
            while args and _ECHO_OPTION.fullmatch(args[0]):
                args = args[1:]
            return [a for a in args if not a[:1].isdigit() and ">" not in a[:2]]
        if names[i] == "printf":
            args = words[i + 1 :]
            if args and args[0] == "--":
                args = args[1:]
            if not args or args[0] == "-v":  # `printf -v NAME …` sets a variable
                return []
            fmt = _unquoted(args[0])
            if "%" in fmt:  # `printf %s X`, `printf '%s\n' X`
                return args[1:2]
            return [_NEW_LINE_ESCAPE.sub("", fmt)]  # `printf 'X\n'`
        if names[i] == "cat":
            return list(_here_string(words[i + 1 :]))
    return []


def _piped_secrets(text: str) -> Iterator[str]:
    """Passwords written into a command that reads one on standard input: `echo X | docker
    login --password-stdin`, `printf %s X | …`, `cat <<< X | …`, `gh auth login --with-token
    <<< X`; and the password of a `user:X` piped to `base64` (a Basic header's value)."""
    for command_list in _LIST.split(text):
        stages = [_WORD.findall(stage) for stage in command_list.split("|")]
        named = [[_name(w) for w in words] for words in stages]
        for n, (words, names) in enumerate(zip(stages, named, strict=True)):
            if _reads_stdin(words, names):
                if n > 0:
                    yield from map(_payload, _written(stages[n - 1], named[n - 1]))
                yield from map(_payload, _here_string(words))
            elif n > 0 and names and names[0].rstrip(")\"'`") == "base64":
                for data in _written(stages[n - 1], named[n - 1]):
                    user, colon, password = _payload(data).partition(":")
                    if colon and password:
                        yield password
                    elif colon and len(user) >= 16:  # `TOKEN:`, an API key as the user
                        yield user


def _payload(word: str) -> str:
    """A written word without its quotes and a closing `)` (`$(echo -n X)`), nor a trailing
    `\\n` escape (`printf 'X\\n'`)."""
    word = _unquoted(word.rstrip(")") if word.count(")") > word.count("(") else word)
    return _NEW_LINE_ESCAPE.sub("", word)


# -- argv-style arrays -----------------------------------------------------------------------

_LONG_SECRET = lazy_regex(globals(), "_LONG_SECRET", rf"(?i)--(?:{SECRET_NAME}|{PASS_NAME})")
_DASH_SECRET = lazy_regex(globals(), "_DASH_SECRET", rf"(?i)-{DASH_NAME}")
# An option turning a secret's use off (`--no-auth`, `--disable-auth`): its value is no secret.
_NEGATED = lazy_regex(
    globals(), "_NEGATED", r"(?i)--?(?:no|disable|disabled|skip|without|ignore)[_\-]"
)
# A short lower-case word and a number (`sha256`, `rsa4096`, `md5`): an algorithm, no credential.
_NAMED_WORD = lazy_regex(globals(), "_NAMED_WORD", r"[a-z]{2,8}[0-9]{1,4}")
# An option named for a password (whatever its value looks like, a word too).
_STRONG = lazy_regex(
    globals(),
    "_STRONG",
    r"(?i)--?(?:[A-Za-z0-9]+[_\-])*(?:secret|passw(?:or)?d|passphrase|passcode|pass|pwd|credentials?|"
    r"storepass|keypass|api[_\-]?key|access[_\-]?key|private[_\-]?key)",
)
# An option named for a PIN (`--pin`, `--db-pin`) takes a value that is not one too: a version or
# a ref (`gh extension install --pin v1.2.0`, `--pin main`, a commit, `requests==2.31.0`,
# `ruff@0.4.1`, `HEAD~1`, `^1.2.0`), which is kept; a PIN is digits or looks like a credential.
_PIN_OPTION = lazy_regex(globals(), "_PIN_OPTION", r"(?i)--?(?:[A-Za-z0-9]+[_\-])*pin")
_PIN_DIGITS = lazy_regex(globals(), "_PIN_DIGITS", r"[0-9]{4,12}")
_NOT_A_PIN = lazy_regex(
    globals(),
    "_NOT_A_PIN",
    r"[A-Za-z]+|v?[0-9]++(?:\.[0-9]+)++[\w.+\-]*+"  # a word, a version (possessive: linear)
    r"|(?:sha[0-9]+:)?[0-9a-fA-F]{7,64}"  # a commit, a digest
    r"|[\w.\-]*(?:==|~=|[<>!]=)[\w.*+\-]*"  # a requirement: `requests==2.31.0`, `~=1.4`
    r"|[\w.\-/]+@(?:v?[0-9][\w.+\-]*|latest|lts|stable|next|main|master)"  # `ruff@0.4.1`
    r"|[\w.\-/]*[~^][0-9]*(?:\.[0-9]+)*|[~^]v?[0-9][\w.+\-]*"  # `HEAD~1`, `^1.2.0`
    r"|[a-z0-9]+(?:[\-_.][a-z0-9]+)*(?:/[a-z0-9]+(?:[\-_.][a-z0-9]+)*)+"  # `feature/pin-deps`
    r"|[a-z]{2,}+[a-z0-9]*+(?:[\-_.][a-z0-9]++)++",  # a named version: `node-20`, `gpt-4o`
)
# An option whose last word is `pass` that is a flag, taking no value (ansible's `--ask-pass`,
# `--ask-become-pass`, an encoder's `--two-pass`, `--render-pass`): a word before `pass` says so.
_PASS_FLAG_WORDS = frozenset(
    {"ask", "two", "three", "multi", "single", "one", "first", "second", "final", "render"}
    | {"lint", "double", "extra"}
)
_OPTION_WORD = lazy_regex(globals(), "_OPTION_WORD", r"[_\-]+")
_PASS_OPTION = lazy_regex(globals(), "_PASS_OPTION", rf"(?i)--?{PASS_NAME}")
_AN_OPTION = lazy_regex(globals(), "_AN_OPTION", r"--?[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def is_pass_flag(option: str) -> bool:
    """Whether an option or a variable whose last word is `pass` is a flag, which holds no
    password (`--ask-pass`, `--two-pass`, `ANSIBLE_ASK_PASS`)."""
    parts = _OPTION_WORD.split(option.strip("-").lower())
    return len(parts) > 1 and parts[-1] == "pass" and not _PASS_FLAG_WORDS.isdisjoint(parts)


# The options named only `auth`, `key`, `token` or `sig` (a word that names a kind of thing as
# often as a secret: `--auth github`, `--key production`, `--signature sha256`): a value is
# taken only when it may be a credential. One naming a secret or a key by more words
# (`--secret-key`, `--encryption-key`, `--api-token`) takes any value.
_BARE_JUDGED = lazy_regex(globals(), "_BARE_JUDGED", r"(?i)--?(?:auth|key|token|sig|signature)")
# A file named as an option's value (`--ssh-key ~/.ssh/id_ed25519`, `-key key.pem`) is where a
# secret is, not the secret; a command substitution runs one.
PATH = re.compile(
    r"(?:~|\.{1,2})?/[^\s]*/[^\s]*|[~.]{1,2}/\S+|\S+\.(?:pem|key|crt|cer|der|p8|p12|pfx|jks|"
    r"keystore|pub|asc|gpg|json|ya?ml|txt|env|conf|cfg|ini)"
)
SUBSTITUTION = re.compile(r"\$\(|`")


#: `is_argv_trigger`'s answers for words of up to `_KEPT_WORD` characters: the arrays of a
#: history hold the same words revision after revision, and each changed array is read again
#: (56,000 calls in a sync of 10,000 revisions). At most `_KEPT_WORDS` are kept (~5 MB).
_TRIGGERS: dict[str, bool] = {}
_KEPT_WORD = 256
_KEPT_WORDS = 16_384


def is_argv_trigger(word: str) -> bool:
    """A word without which an array holds no password option's value (`argv_secrets`): an
    option named for a secret (`--api-key`), a command that takes one (`sshpass`, `docker`,
    `/usr/bin/mysql`) or `login`."""
    known = _TRIGGERS.get(word)
    if known is None:
        known = _is_trigger(word)
        if len(word) <= _KEPT_WORD and len(_TRIGGERS) < _KEPT_WORDS:
            _TRIGGERS[word] = known
    return known


def _is_trigger(word: str) -> bool:
    if word[:1] == "-":
        return _LONG_SECRET.fullmatch(word) is not None or _DASH_SECRET.fullmatch(word) is not None
    return word == "login" or _MENTION.fullmatch(_name(word)) is not None


def may_be_credential(value: str) -> bool:
    """Whether a password a person may have chosen (an `--auth` / `--token` option's value, the
    proxy's) may be a credential rather than a word (`github`, `proxy`, `sha256`): only such a
    value is remembered and scrubbed from every key and value after (`credential_like`, and no
    lower-case word and number)."""
    return credential_like(value) and not _NAMED_WORD.fullmatch(value)


def option_takes(option: str, value: str) -> bool:
    """Whether `value`, given to the secret-named `option` (`--password`, `--auth`, `--pin`),
    is taken as a secret: any value of an option named for a password or a key (`--password`,
    `--pass`, `--api-key`, `--secret-key`, `--encryption-key`, `--api-token`); of one named
    only `auth`, `key`, `token` or `sig`, only a value that may be a credential
    (`may_be_credential`: not `--auth github`, `--signature sha256`, `--key production`, which
    remembered would be scrubbed from every key and value after), or, for `token`, a word a
    password is made of (`--token hunter2`, not `--token github`); of a PIN's, a PIN only
    (`is_pin`: not `--pin v1.2.0`, `--pin node@20`); of a negated one (`--no-auth`) or a flag
    (`--ask-pass`, `--two-pass`), none."""
    if _NEGATED.match(option) or is_pass_flag(option):
        return False
    if _PIN_OPTION.fullmatch(option):
        return is_pin(value)
    if _PASS_OPTION.fullmatch(option) and _AN_OPTION.fullmatch(value):
        return False  # `--pass --verbose`: the next option, no value
    if _STRONG.fullmatch(option):
        return True
    if not _BARE_JUDGED.fullmatch(option) and is_secret_key(option.lstrip("-")):
        return True
    if _TOKEN_OPTION.fullmatch(option) and _PASSWORD_WORD.fullmatch(value):
        return True  # `--token hunter2`: a password made of a word (T99 #2), not a token's name
    return may_be_credential(value)


# An option named `token` alone: its value is a token's name (`--token github`, `--token main`)
# or the token; a word with digits after it (`hunter2`, `admin123`) or one word of 16 letters
# or more (`correcthorsebatterystaple`) names no token, so it is one.
_TOKEN_OPTION = lazy_regex(globals(), "_TOKEN_OPTION", r"(?i)--?token")
_PASSWORD_WORD = lazy_regex(globals(), "_PASSWORD_WORD", r"[a-z]{2,8}[0-9]{1,4}|[A-Za-z]{16,}")


def is_pin(value: str) -> bool:
    """Whether a PIN option's or key's value may be a PIN: digits (4 to 12), or a value that
    may be a credential and is no version, ref or option (`v1.2.0`, `main`, a commit,
    `requests==2.31.0`, `node@20`, `HEAD~1`, `node-20`, `--verbose`)."""
    if _PIN_DIGITS.fullmatch(value):
        return True
    if value[:1] == "-" or _NOT_A_PIN.fullmatch(value):
        return False
    return may_be_credential(value)


def argv_secrets(items: list[object]) -> dict[int, str]:
    """In an argv-style array (`["sshpass", "-p", X, "ssh", "h"]`, an MCP server's `args:
    ["login", "-u", "ci", "-p", X]`), the places of the elements that are a password option's
    value, each with the secret it holds (the whole element, or its part: `["mysql", "-pX"]`).
    Read as the words of one command line are; `-p` after `login` is a password (the command,
    `docker`, may be given elsewhere)."""
    words = [v if type(v) is str else "" for v in items]
    if len(words) - words.count("") < 2 or not any(map(is_argv_trigger, words)):
        return {}
    names = [_name(w) for w in words]
    found: dict[int, str] = {}

    def take(at: int, value: str) -> None:
        if (
            0 <= at < len(words)
            and value
            and len(value) >= 4
            and value in words[at]
            and not (value == words[at] and value.startswith("-"))
            and not PATH.fullmatch(value)
            and not SUBSTITUTION.match(value)
        ):
            found.setdefault(at, value)

    login = names.index("login") if "login" in names else len(names)
    for i, word in enumerate(words[:-1]):
        named = _LONG_SECRET.fullmatch(word) or _DASH_SECRET.fullmatch(word)
        if named:
            # a password may be a word; an option named `auth`, `key`, `token` or `sig` often
            # takes one that is not a secret (`--auth github`, `--signature sha256`)
            if option_takes(word, words[i + 1]):
                take(i + 1, words[i + 1])
        elif word == "-p" and i > login:
            take(i + 1, words[i + 1])
    for i in range(login + 1, len(words)):  # `-pX`, `-p=X` after `login` (`docker login -pX`)
        word = words[i]
        if word[:2] == "-p" and word[2:3] not in ("", "-"):
            take(i, word[3:] if word[2] == "=" else word[2:])
    for option in _OPTIONS:
        for at, value in option.places(words, names):
            take(at, value)
    for value in chain(_positionals(words, names), _settings(words, names)):
        for at, word in enumerate(words):
            if value in word:
                take(at, value)
                break
    return found


# -- one level of quoting undone -------------------------------------------------------------

# Quoting the readings above take as it stands, which hides a password from them: `\"` (a quote
# inside a double-quoted argument: `bash -c "deploy --password=\"X\""`, `-p\"X\"`), bash's
# ANSI-C quoting (`--password $'X'`) and a single quote written inside single quotes (`'"'"'`,
# `'\''`), and a command line given to a shell (`bash -c "curl -u ci:X"`, `sh -lc '…'`, `bash
# -xc`, `BASH -C`, any white space before the quote, or a JSON array's `"-c", "…"`), whose
# `curl` follows a quote. A text holding none of these is read as it stands only (substring
# tests and one pattern: the common case costs little more).
_NESTED_QUOTES = ('\\"', "$'", "'\"'", "'\\''")
# (`-c`, `-lc`, `-ce`, `-cex`, then `--` or an array's `","`: one way to read each run, so a
# long run of blanks or flags without a quote after it is read once)
_SHELL_FLAG = re.compile(
    r"(?i)(?<![\w\-])-(?=[a-z]*c)[a-z]++['\"]?[ \t]*+(?:,[ \t]*+)?(?:--[ \t]++)?['\"]"
)


def has_nested_quotes(text: str) -> bool:
    """Whether `text` holds quoting that only `unquoted_readings` reads (`\\"`, `$'`, `'"'"'`,
    `-c "…"`, `sh -lc '…'`)."""
    return any(quote in text for quote in _NESTED_QUOTES) or _SHELL_FLAG.search(text) is not None


# One part of a shell word: a double-quoted stretch (with its escapes), an ANSI-C quoted one, a
# single-quoted one, an escaped character, white space between words, or plain characters (a
# quote left open is a character). The escaped bodies are bounded: an attempt that finds no
# closing quote scans at most that far, so a hostile text costs linear time. A longer quoted
# stretch (a long script: `bash -c "curl …; <5 KB of steps>"`) is read on to its end by
# `_LONG_BODY`, within a budget of characters per text (`_LONG_BUDGET` times its length).
_SHELL_PART = lazy_regex(
    globals(),
    "_SHELL_PART",
    r'"(?P<dq>(?:[^"\\]|\\.){0,4000})"'
    r"|\$'(?P<ansi>(?:[^'\\]|\\.){0,4000})'"
    r"|'(?P<sq>[^']*)'"
    r"|\\(?P<esc>.)"
    r"|(?P<space>\s+)"
    r"|(?P<plain>[^\s\"'\\$]+|.)",
    re.S,
)
_LONG_BODY = {
    "dq": re.compile(r'(?:[^"\\]|\\.)*', re.S),
    "ansi": re.compile(r"(?:[^'\\]|\\.)*", re.S),
}
_LONG_BUDGET = 4
_DQ_ESCAPE = lazy_regex(
    globals(), "_DQ_ESCAPE", r'\\([\\"$`])'
)  # what a backslash escapes between double quotes
_ANSI_ESCAPE = lazy_regex(
    globals(), "_ANSI_ESCAPE", r"\\([\\'\"?])"
)  # (`$'…'`'s other escapes, `\n`, are kept)
_DQ_SPECIAL = lazy_regex(globals(), "_DQ_SPECIAL", r'[\\"$`]')
_SPACE = lazy_regex(globals(), "_SPACE", r"\s")
_READINGS = 32  # at most so many readings of one text (inner command lines included)
_DEPTH = 3  # `bash -c "sh -c \"…\""`: command lines inside command lines, so deep


def shell_words(text: str, inner: list[str] | None = None) -> list[str]:
    """The words of a command line as the shell passes them on, one level of quoting undone:
    `bash -c "deploy --password=\\"X\\""` → `bash`, `-c`, `deploy --password="X"`;
    `-p'X'` and `$'X'` → `-pX`, `X`. With `inner`, each quoted stretch holding white space
    that is only part of its word (a JSON array's `["bash","-c","curl -u ci:X"]`) is added
    to it, unquoted."""
    words: list[str] = []
    word: list[str] = []
    started = False
    budget = _LONG_BUDGET * len(text)
    at, end = 0, len(text)
    while at < end:
        m = _SHELL_PART.match(text, at)
        assert m is not None  # (`.` matches any character)
        kind = m.lastgroup or "plain"
        at = m.end()
        if kind == "space":
            if started:
                words.append("".join(word))
                word, started = [], False
            continue
        started = True
        part = m[kind]
        opening = m.start() + (2 if text.startswith("$'", m.start()) else 1)
        if (
            kind == "plain"
            and part in '"$'
            and budget > 0
            and text.startswith(('"', "$'"), m.start())
        ):
            kind = "dq" if part == '"' else "ansi"
            body = _LONG_BODY[kind].match(text, opening)
            assert body is not None
            budget -= body.end() - opening
            if body.end() < end:  # closed: a long quoted stretch, read whole
                part, at = body[0], body.end() + 1
            else:
                kind = "plain"
        if kind == "dq":
            part = _DQ_ESCAPE.sub(r"\1", part)
        elif kind == "ansi":
            part = _ANSI_ESCAPE.sub(r"\1", part)
        if inner is not None and kind in ("dq", "ansi", "sq") and _SPACE.search(part):
            inner.append(part)
        word.append(part)
    if started:
        words.append("".join(word))
    return words


# What a word's value follows: an option's `=` or a user's `:` (`--password=X`, `ci:X`).
_BEFORE_VALUE = lazy_regex(globals(), "_BEFORE_VALUE", r"(?:-{1,2}[\w\-]+|[\w\-]+)[=:]")
_QUOTING = lazy_regex(globals(), "_QUOTING", r"[\s\"']")


def _requoted(word: str) -> str:
    """A word as one word of a line the readings above take as it stands: its value quoted
    when it holds white space or a quote (`-p "a b"`, `--password='a"b'`); one between quotes
    that are its own characters is left so (`deploy --password=\\"X\\"` passes `"X"`: read
    as `X`)."""
    if not _QUOTING.search(word):
        return word
    before = _BEFORE_VALUE.match(word)
    head, value = (word[: before.end()], word[before.end() :]) if before else ("", word)
    wrapped = len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]
    if wrapped and not _QUOTING.search(value[1:-1]):
        return word
    for quote in "\"'":
        if quote not in value:
            return head + quote + value + quote
    return word  # (read as a command line of its own too: `unquoted_readings`)


def unquoted_readings(text: str) -> list[str]:
    """`text` with one level of shell quoting undone (`deploy --password=\\"X\\"` →
    `deploy --password="X"`, `--password $'X'` → `--password X`), and each word of it that
    is a command line itself (`bash -c "…"`, `sh -c '…'`) so read in turn: the lines to read
    for passwords where `text` hides them behind nested quotes."""
    readings: list[str] = []
    _read(text, readings, 0)
    return readings


def _read(text: str, readings: list[str], depth: int) -> None:
    inner: list[str] = []
    words = shell_words(text, inner)
    readings.append(" ".join(map(_requoted, words)))
    if depth < _DEPTH:
        # a command line inside: `bash -c "…"` (a word), `["bash","-c","…"]` (part of one)
        for word in dict.fromkeys(chain((w for w in words if _SPACE.search(w)), inner)):
            if len(readings) >= _READINGS:
                return
            _read(word, readings, depth + 1)


def quoted_forms(text: str, value: str) -> list[str]:
    """The stretches of `text` that `value`, found in one of its `unquoted_readings`, is
    written as: itself, or with the escapes of a double-quoted argument (once or twice
    nested: `\\"`, `\\\\`), of ANSI-C quoting (`\\'`), or a single quote written inside single
    quotes (`'"'"'`, `'\\''`)."""
    forms = [value]
    escaped = value
    for _ in range(2):
        escaped = _DQ_SPECIAL.sub(r"\\\g<0>", escaped)
        forms.append(escaped)
    if "'" in value:
        forms += [value.replace("'", "'\"'\"'"), value.replace("'", "'\\''")]
        forms.append(value.replace("\\", "\\\\").replace("'", "\\'"))
    return [form for form in dict.fromkeys(forms) if form in text]
