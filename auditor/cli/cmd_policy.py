"""`auditor policy lint|test|schema`: check policy files, run their tests, print the schema.

`lint PATH…` validates files or folders (every problem at once, `file:line:col: level: …`)
and warns of secret-looking text and of tests a redacted value cannot decide, and, when a
state file exists, of rule paths that no stored revision has; exit 2 on errors. `test PATH…`
runs the `<name>.tests.yaml` cases beside the policies; exit 1 on any failing case, 2 on
invalid files. Without a PATH both check what `run` and `review` would load from the same
configuration (`--config`, `pyproject.toml`): its `policies`, else the shipped packs, and
their last line says which. `schema` prints the JSON Schema for editors.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.cli.common import config_from_args, named_inputs, open_store
from auditor.cli.failure import problem_lines, remembered_screen, scrubbed
from auditor.common.escape import terminal_text
from auditor.config import Config
from auditor.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, AuditorError, PolicyError
from auditor.policy import SHIPPED_POLICY_DIR, PolicySet, load_policies, sort_problems
from auditor.policy.lint import (
    LintProblem,
    history_warnings,
    static_warnings,
)
from auditor.policy.loader import PolicyProblems
from auditor.policy.schema import SCHEMA_PATH
from auditor.store import Store

if TYPE_CHECKING:
    from auditor.cli import Context


def _paths(args: argparse.Namespace, ctx: Context, config: Config | None) -> tuple[list[Path], str]:
    """The files and folders to check, and which they are (`""` for the PATHs given). With no
    PATH, the ones `run` and `review` would load from `config` (its `policies`, else the
    shipped packs): a policy author's `lint` (or a CI step's) passed the shipped packs while
    the configured files it never read stopped the nightly."""
    cwd = Path(ctx.cwd)
    here = cwd.resolve() == Path.cwd().resolve()  # names kept as typed in every message
    if args.paths:
        given: list[Path] = args.paths
        return (given if here else [p if p.is_absolute() else cwd / p for p in given]), ""
    if config is None or not config.policies:
        return [SHIPPED_POLICY_DIR], "the shipped packs (no PATH given, no `policies` configured)"
    named = named_inputs(config, ctx)[0]  # as a PATH would be (the configuration resolved them)
    from auditor.redact.shown import printed_path

    shown = ", ".join(printed_path(p, ctx.secrets()) for p in named)
    return named, terminal_text(f"the configured `policies`: {shown}")


def _of(scope: str) -> str:
    """`; checked …`, naming what was checked when no PATH was given, for a summary line."""
    return f"; checked {scope}" if scope else ""


def run_lint(args: argparse.Namespace, ctx: Context) -> int:
    """Print every problem of the policy files; exit 2 when any is an error."""
    from auditor.policy.cases import find_test_files, test_file_problems  # no rule engine

    # the state file first, as `run` reads it (flag, AUDITOR_STATE, a config file's `state`, the
    # default `.auditor/state.db`): a line quoting a policy's value leaves out what its memory
    # holds as a secret (an `env` value, a header's credential a sync learned), errors and
    # warnings alike. A config that cannot be read is said only once the policies given are
    # valid (as before): their problems come first; with no PATH, it names the policies.
    config: Config | AuditorError
    try:
        config = config_from_args(args, ctx)
    except AuditorError as exc:
        if not args.paths:
            raise
        config = exc
    paths, scope = _paths(args, ctx, config if isinstance(config, Config) else None)
    # a `<name>.tests.yaml` given (a pre-commit hook passes the files changed) is linted as
    # the test file it is, with the policy beside it, as `policy test` reads it
    tests, policies = find_test_files(paths)
    screen = remembered_screen(ctx.state_files)
    problems: list[str] = []
    loaded: PolicySet | None = None  # the rules that did load, when some did not
    try:
        policy: PolicySet | None = load_policies(policies)
    except PolicyError as exc:
        problems += exc.problems
        policy = None
        loaded = exc.loaded if isinstance(exc, PolicyProblems) else None
    # the `<name>.tests.yaml` files too, each case checked as `policy test` would (not run)
    problems += test_file_problems(tests, policy, ctx.clock())
    # every problem of every file at once: the warnings of the rules that did load are
    # listed beside the errors (a typo'd path seen with the first round's errors, not after)
    checked = policy if policy is not None else loaded
    found: list[LintProblem] = static_warnings(checked) if checked is not None else []
    if isinstance(config, AuditorError) and not problems:
        raise config  # (said once the policies are valid: their problems come first)
    if checked is not None and isinstance(config, Config):
        found += _history_warnings(checked, config, given=not problems)
    errors = [p for p in found if p.level == "error"]
    warned = len(found) - len(errors)
    # a warning quotes a rule's path (`… appears in none of the stored revisions`), which may
    # hold a secret: printed as errors are, nothing that looks like one or is remembered shown
    listed = sort_problems([*problems, *(p.text for p in found)])
    _print_screened(problem_lines(listed, ctx.secrets()), screen, ctx)
    if problems or policy is None:
        count = len({*problems, *(p.text for p in errors)})  # (each line once, as listed)
        also = f" and {warned} warning(s)" if warned else ""
        print(
            f"auditor: exit 2: {count} error(s){also} in policy files (listed above){_of(scope)}",
            file=ctx.stderr,
        )
        return EXIT_ERROR
    files, rules = len(policy.files), len(policy.rules)
    counts = f"{len(errors)} error(s), {warned} warning(s)"
    print(f"{files} file(s), {rules} rule(s): {counts}{_of(scope)}", file=ctx.stderr)
    if errors:
        print(
            f"auditor: exit 2: {len(errors)} error(s) in policy files (listed above)",
            file=ctx.stderr,
        )
        return EXIT_ERROR
    return EXIT_OK


def _history_warnings(policy: PolicySet, config: Config, *, given: bool) -> list[LintProblem]:
    """The warnings of rule paths no stored revision has. A store named (flag, AUDITOR_STATE,
    a config file's `state`, whatever its value) must be there: `no state file at …`, exit 2,
    rather than the history check silently left out; the default one only when it exists (one
    no sync completed into has no history to lint against). Beside the policies' errors
    (`given` false), a store that cannot be opened is passed over: those come first."""
    if not (config.state_given or Store.exists(config.state, org=config.org)):
        return []
    try:
        with open_store(config, readonly=True, synced=False) as store:
            return history_warnings(policy, store.iter_revisions())
    except AuditorError:
        if given:
            raise
        return []


def _print_screened(
    lines: Iterable[str], screen: Callable[[str], str] | None, ctx: Context
) -> None:
    """Print `lines` on stdout, each through `screen` (`remembered_screen`: what the state
    file remembers as a secret left out), as `run` prints the same problems on stderr."""
    for line in lines:
        print(screen(line) if screen is not None else line, file=ctx.stdout)


def run_test(args: argparse.Namespace, ctx: Context) -> int:
    """Run every policy test case; one line per case and a summary."""
    from auditor.evaluate.testing import run_policy_tests  # the rule engine: not for `lint`

    # the configuration is read as `run` and `review` read it (`--config`, else
    # `auditor.toml` / `pyproject.toml`; a file named that is not there is said): it names the
    # policies when no PATH does, and its `diff_keys` say how a change case's lists compare, as
    # in `review` (they were ignored with a PATH: review R71 #2)
    config = config_from_args(args, ctx)
    paths, scope = _paths(args, ctx, config)
    try:
        cases = run_policy_tests(paths, now=ctx.clock(), list_table=config.list_table)
    except PolicyError as exc:
        for line in problem_lines(exc.problems, ctx.secrets()):
            print(line, file=ctx.stdout)
        count = len(exc.problems)
        print(
            f"auditor: exit 2: {count} error(s) in policy files (listed above){_of(scope)}",
            file=ctx.stderr,
        )
        return EXIT_ERROR
    from auditor.redact.shown import printed_path

    for case in cases:
        verdict = "PASS" if case.passed else "FAIL"
        # a test file's name that looks like a secret (or holds the command's token) not shown
        line = f"{verdict} {printed_path(case.file, ctx.secrets())}: {case.name}"
        if case.passed:
            print(terminal_text(scrubbed(line, ctx.secrets())), file=ctx.stdout)
        else:  # a rule's message quotes the case's value, which no redaction has seen
            shown = problem_lines([f"{line}: {'; '.join(case.mismatches)}"], ctx.secrets())
            print(shown[0], file=ctx.stdout)
        # what a sync would warn of in the case's usage rows (read as absent, as in a run)
        warned = [f"  data quality: {w}" for w in case.warnings]
        for warning in problem_lines(warned, ctx.secrets()):
            print(warning, file=ctx.stdout)
    failed = sum(not c.passed for c in cases)
    print(f"{len(cases) - failed} passed, {failed} failed", file=ctx.stdout)
    if failed:
        print(
            f"auditor: exit 1: {failed} of {len(cases)} test case(s) failed{_of(scope)}",
            file=ctx.stderr,
        )
        return EXIT_FINDINGS
    print(f"auditor: exit 0: all {len(cases)} test case(s) passed{_of(scope)}", file=ctx.stderr)
    return EXIT_OK


def run_schema(args: argparse.Namespace, ctx: Context) -> int:
    """Print the policy JSON Schema (point an editor's YAML support at it)."""
    ctx.stdout.write(SCHEMA_PATH.read_text())
    return EXIT_OK
