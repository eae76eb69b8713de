"""Errors the user sees, each with the exit code the command line maps it to (design §9).

Every message says what and where: `file:line:col` for policies, a JSON path and the URL for
API data. Messages must already be redacted when constructed (see `auditor.redact`).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

#: The line (after `auditor: error: `) of a command that ran out of memory: written from
#: `auditor.__main__` too, where nothing else of auditor may be loaded.
OUT_OF_MEMORY = (
    "out of memory: the command needed more than this process may use (a `ulimit -v` or a "
    "container's memory limit); give it more and run it again"
)


class AuditorError(Exception):
    """Base of every error shown to the user as one line on stderr; exits with `exit_code`."""

    exit_code = EXIT_ERROR


class UsageError(AuditorError):
    """Bad command line or configuration."""


class ConfigError(AuditorError):
    """A configuration file or environment value is invalid."""


class ApiError(AuditorError):
    """The platform API answered with an error, a malformed body, or not at all."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class DataError(AuditorError):
    """Data from the API or the store is not what it must be (names the JSON path)."""


class StoreError(AuditorError):
    """The state file cannot be opened, is locked, or is from an unknown schema version."""


class StoreWriteError(StoreError):
    """A write to the state file failed for a reason of the machine's, not of the data: a full
    disk, an input/output error, a lock held by another program."""


class ReportError(AuditorError):
    """A report folder or file cannot be written."""


class PolicyError(AuditorError):
    """One or more policy (or waiver) files are invalid; `problems` lists them all."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        count = len(problems)
        summary = problems[0] if count == 1 else f"{count} problems in input files"
        super().__init__(summary)
