"""How an exception that ends a command is shown: one line on stderr and an exit code, never 1
for an error and never a traceback unless asked for. Used by the top-level guard and by each
organization of an `--orgs` run, so both say the same thing the same way."""

from __future__ import annotations

import errno
import re
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO, cast

from auditor.common.escape import terminal_text
from auditor.common.lazyre import lazy_regex
from auditor.errors import EXIT_ERROR, OUT_OF_MEMORY, AuditorError, PolicyError, UsageError


def report_failure(
    exc: Exception,
    stderr: TextIO,
    secrets: Iterable[str],
    *,
    debug: bool = False,
    paths: Iterable[str] = (),
    states: Iterable[tuple[Path, bytes | None]] = (),
) -> int:
    """Print `exc` as the command's last word on `stderr` and return its exit code; none of
    `secrets` (the tokens the command loaded) is shown, nor a part of one of `paths` (its
    state file's, its report folder's) that looks like a secret, nor a secret one of the state
    files of `states` remembers (`remembered_screen`: a leaked key quoted from a policy)."""
    secrets = list(secrets)
    paths = list(paths)
    from auditor.cli import out_of_memory

    if out_of_memory(exc) and not debug:  # (an error wrapping it: "damaged", "not valid JSON")
        print(f"auditor: error: {OUT_OF_MEMORY}", file=stderr)
        return EXIT_ERROR
    screen = remembered_screen(states)
    if screen is not None:
        stderr = cast(TextIO, _Screened(stderr, screen))
    if isinstance(exc, PolicyError):
        for line in problem_lines(exc.problems, secrets):
            print(line, file=stderr)
        count = len(exc.problems)
        print(f"auditor: error: {count} problem(s) in input files (listed above)", file=stderr)
        return exc.exit_code
    if isinstance(exc, AuditorError):
        text = str(exc)
        if isinstance(exc, UsageError):  # it quotes what was typed (`--at $AUDITOR_TOKEN`)
            (text,) = problem_lines([text], secrets)
        else:  # one may quote a path typed as the token (`--state "$AUDITOR_TOKEN"`)
            text = hidden_paths(scrubbed(text, secrets), paths)
        print(f"auditor: error: {terminal_text(text)}", file=stderr)
        return exc.exit_code
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG and exc.filename:
        # A path given that the file system cannot hold, wherever it was first looked at
        # (`Path.exists` raises on it): the user's input, not a bug.
        shown = hidden_paths(scrubbed(str(exc.filename), secrets), paths)
        print(f"auditor: error: {terminal_text(shown)}: {exc.strerror}", file=stderr)
        return EXIT_ERROR
    if debug:  # the last guard: a bug must not look like findings (exit 1)
        for line in "".join(traceback.format_exception(exc)).splitlines():
            print(terminal_text(hidden_paths(scrubbed(line, secrets), paths)), file=stderr)
    print(
        f"auditor: error: {hidden_paths(unexpected(exc, secrets, debug=debug), paths)}", file=stderr
    )
    return EXIT_ERROR


def remembered_screen(states: Iterable[tuple[Path, bytes | None]]) -> Callable[[str], str] | None:
    """A function leaving out of a text what the SQLite state files of `states` remember as a
    secret (`<not shown: looks like a secret>`): a value caught by its place (an `apiKey`, a
    hook's `-p` password), which no detector sees by its looks, quoted back from a policy, a
    waiver or a proposed file with a typo in it. None when no file has a memory to read."""
    from auditor.store.file import remembered_memory

    memories = [m for path, key in states if (m := remembered_memory(path, key)) is not None]
    if not memories:
        return None
    from auditor.redact.shown import NOT_SHOWN

    def screen(text: str) -> str:
        for memory in memories:  # (in every form it is written in: base64, URL-encoded …)
            text = memory.hidden(text, NOT_SHOWN)
        return text

    return screen


class _Screened:
    """`stderr` with every line written through a screen (`remembered_screen`)."""

    def __init__(self, stream: TextIO, screen: Callable[[str], str]) -> None:
        self._stream, self._screen = stream, screen

    def write(self, text: str) -> int:
        return self._stream.write(self._screen(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def hidden_paths(text: str, paths: Iterable[str]) -> str:
    """`text` with each name of `paths` (between `/` or `\\`) that looks like a secret to the
    value detectors (a token pasted as `--state` or `--out`) left out wherever it stands, as
    a config file's path is shown (`auditor.config.shown_path`); ordinary names, a CI
    workspace's (`/builds/Gx4nPz7Q/0/…`) too, stay readable."""
    from auditor.redact.shown import ordinary_name, printed_path

    # A connection string's password (`password=a/b`, `user:pw@host`) runs past a `/`: each
    # path holding one is shown as `printed_path` shows it, before its names are looked at.
    for path in sorted({p for p in paths if ("=" in p or "@" in p) and p in text}, key=len)[::-1]:
        text = text.replace(path, printed_path(path))
    names = {
        n
        for p in paths
        for n in re.split(r"[/\\]", p)
        if len(n) >= _SECRET_NAME and n in text and not ordinary_name(n)
    }
    if not names:  # (an ordinary name, `test_run_0`, loads no detector: see `printed_path`)
        return text
    from auditor.redact.shown import not_shown  # detectors: when an error names such a path

    for name in sorted(names, key=len, reverse=True):
        shown = not_shown(name)
        if shown != name:
            text = text.replace(name, shown)
    return text


_SECRET_NAME = 8  # a name shorter than this is never a secret to the detectors


def problem_lines(lines: Iterable[str], secrets: Iterable[str] = ()) -> list[str]:
    """Problems of input files (`file:line:col: error: $.path: …`) as printed: the files a
    problem quotes from are written by hand (a proposed settings file, a policy test case, a
    waiver), so a value or key in one that looks like a secret, or a token the command loaded,
    is left out (`<not shown: looks like a secret>`), as for a config file's values.

    The parts are judged apart: the location (the file the user named, and where in it) is
    searched only for the command's tokens, never read as a secret by its looks (a CI
    workspace path such as `/builds/Gx4nPz7Q/0/acme/…` would be); the JSON path alone (one
    ending in a secret's name, `$.rules[0].token: unknown key`, is not that secret's
    `name: value`); the message whole (a `name: value` inside a quoted value stays one)."""
    from auditor.config import shown_path, unshown, without_tokens  # detectors: when printed

    secrets = list(secrets)
    heads: list[str] = []
    judged: list[str] = []  # per line: its JSON path (maybe empty), then its message
    for line in lines:
        at = _LOCATION.match(line) or _FIRST_WORD.match(line)
        head = without_tokens(shown_path(at[1]) + at[0][len(at[1]) :], secrets) if at else ""
        rest = line[at.end() :] if at else line
        lead = _LEAD.match(rest)
        assert lead is not None  # every part of it is optional
        heads.append(head + (lead[1] or ""))
        judged += [lead[2] or "", rest[lead.end() :]]
    # All in one search (12,000 lines one by one took 1.3 s), NUL between them: the detectors
    # read no `name value` across it, and no line holds one (YAML allows none).
    shown = unshown("\0".join(judged), secrets).split("\0")
    if len(shown) != len(judged) or any("\0" in part for part in judged):
        shown = [unshown(part, secrets) for part in judged]  # a secret across the NULs
    return [terminal_text(head + shown[2 * n] + shown[2 * n + 1]) for n, head in enumerate(heads)]


# `file:line:col: ` (or `file:line: `) at the start of a problem, the file as named (spaces
# too, no `: `); else `file: `, a first word that is no JSON path and holds no space. The file
# is judged name by name between `/` (`shown_path`): a token typed as a path is left out, a
# CI workspace path (`/builds/Gx4nPz7Q/0/…`) is not.
_LOCATION = lazy_regex(globals(), "_LOCATION", r"((?:(?!: ).)+?):\d+(?::\d+)?: ")
_FIRST_WORD = lazy_regex(globals(), "_FIRST_WORD", r"([^\s$][^\s]*?): ")
# `error: ` (or `warning: `), then a JSON path `$.a.b[0]: `, each optional.
_LEAD = lazy_regex(globals(), "_LEAD", r"((?:error|warning|note): )?(\$\S*: )?")


def unexpected(exc: BaseException, secrets: Iterable[str], *, debug: bool) -> str:
    """One line for an unexpected exception, with no token shown; running out of memory says
    so (a `MemoryError` has no text of its own)."""
    from auditor.cli import out_of_memory

    if out_of_memory(exc):
        return OUT_OF_MEMORY
    text = scrubbed(f"unexpected {type(exc).__name__}: {exc}", secrets)
    hint = "" if debug else " (rerun with --debug or AUDITOR_DEBUG=1 for the traceback)"
    return terminal_text(" ".join(text.split())[:500]) + hint


def scrubbed(text: str, secrets: Iterable[str]) -> str:
    """`text` without the tokens or a database URL's password (the traceback too)."""
    from auditor.config import without_tokens
    from auditor.store.postgres import scrub_url_passwords  # not at start-up: `auditor --help`

    text = without_tokens(text, secrets)
    return scrub_url_passwords(text)  # a database URL's password, wherever it came from
