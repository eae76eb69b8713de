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


class _Option:
    """The value of `option` given to one of `commands`, after the word `then` if one is named:
    `-p X`, `-p=X`, and with `attached` also `-pX`. With `after`, only the part of the value
    after that character is the secret (`-u user,X`, `-a user:X`)."""

    __slots__ = ("after", "command", "glued", "option", "then")

    def __init__(
        self, commands: str, option: str, attached: bool = False, then: str = "", after: str = ""
    ) -> None:
        self.command = re.compile(commands)
        self.option = re.compile(option)
        glue = r"(?:=|(?=.))" if attached else "="
        self.glued = re.compile(rf"(?:{option}){glue}(.+)", re.S)
        self.then = then
        self.after = after

    def values(self, words: list[str], names: list[str]) -> Iterator[str]:
        start = _after_command(names, self.command, self.then)
        if start is None:
            return
        for i in range(start, len(words)):
            word = words[i]
            if self.option.fullmatch(word):
                value = words[i + 1] if i + 1 < len(words) else ""
            elif m := self.glued.fullmatch(word):
                value = m.group(1)
            else:
                continue
            if self.after:
                value = value.partition(self.after)[2]
            if value:
                yield value


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
    _Option("docker|podman|buildah|skopeo|nerdctl|helm|oras|crane|regctl|az", "-p", then="login"),
    _Option("mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport", "-p"),
    _Option("sqlcmd|bcp|osql", "-P"),
    _Option(r"ldap\w+", "-[wy]"),
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
_DRIVE = re.compile(r"[A-Za-z]:|\*")
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
    if not _MENTION.search(text):
        return
    yield from _line_secrets(text)
    for m in _QUOTED.finditer(text):
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        if _MENTION.search(inner):
            yield from _line_secrets(inner)


def _line_secrets(text: str) -> Iterator[str]:
    for command in _SEPARATOR.split(text):
        if not _MENTION.search(command):
            continue
        words = _WORD.findall(command)
        names = [_name(w) for w in words]
        for option in _OPTIONS:
            yield from option.values(words, names)
        yield from _positionals(words, names)
        yield from _settings(words, names)
