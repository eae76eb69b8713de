"""The command line's parsers: every subcommand's options and help, without its work.

Building the parser (`auditor --help`, `auditor --version`, any `auditor <cmd> --help`) imports
only this module and the standard library: a command's handler is `auditor.cli.cmd_<name>`,
imported when that command runs, so help and version never load the rule engine, the report
writers, the HTTP client, the secret scanner or a database driver, and each command loads only
what it runs.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.common.collector import loading
from auditor.common.lazyre import lazy_regex
from auditor.config import FAIL_ON_VALUES

if TYPE_CHECKING:
    from auditor.cli import Context

#: `auditor.report.OUTPUTS` and `DEFAULT_OUTPUTS`, named here so the help does not import the
#: report writers (tests/test_startup.py checks they stay the same).
OUTPUT_NAMES = ("html", "md", "json", "sarif", "junit", "oscal", "pdf")
DEFAULT_OUTPUT_NAMES = ("html", "md", "json", "sarif", "junit")

Handler = Callable[[argparse.Namespace, "Context"], int]


def _handler(command: str, name: str) -> Handler:
    """The handler `auditor.cli.cmd_<command>.<name>`, imported when the command runs."""

    def run(args: argparse.Namespace, ctx: Context) -> int:
        with loading():  # the command's modules: alive as long as the process
            module = importlib.import_module(f"auditor.cli.cmd_{command}")
        handler: Handler = getattr(module, name)
        return handler(args, ctx)

    run.__qualname__ = run.__name__ = name
    return run


#: Where the reports go and which: a wrapper's own values come first and the user's after
#: (the pre-commit hook's `entry` passes `--output md,json --out …` and `args:` follow it),
#: so the last one given is taken, as argparse does.
OVERRIDABLE = frozenset({"out_dir", "out", "outputs"})


class SingleValue(argparse._StoreAction):
    """argparse's `store`, except that a flag given a second time (`--waivers A --waivers B`,
    `--config A --config B`) is a usage error naming it, not the last value silently kept
    (`--out` and `--output` excepted: `OVERRIDABLE`)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given: set[str] = namespace.__dict__.setdefault("_given_once", set())
        if self.option_strings and self.dest in given and self.dest not in OVERRIDABLE:
            raise argparse.ArgumentError(self, "given more than once; give it once")
        given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


#: Flags whose value is a file name (or a store's URL), which may hold bytes that are not
#: UTF-8 (a Latin-1 file name): Python carries them as escapes, and the file opens.
_FILE_NAMES = frozenset({"state", "against"})


def value_problem(action: argparse.Action, text: str) -> str | None:
    """What is wrong with a value as given on the command line, before it is converted: empty
    (`--out ''`, `--at "$UNSET"`: never read as the flag left out), or, for a flag whose value
    is text rather than a file name, bytes that are not UTF-8 (`--author $'a\xff@b.c'`: the
    value cannot be written to a report or a line of output). None when it is fine."""
    if isinstance(action, argparse._SubParsersAction):  # the rest of the line, for the command
        return None
    if text == "" and action.type in (None, Path):  # (a checked type says what it expects)
        return "expected a value, got an empty one"
    if action.type is None and action.dest not in _FILE_NAMES and not _is_utf8(text):
        return "not UTF-8 text (it holds a byte that no UTF-8 character starts with)"
    return None


def _is_utf8(text: str) -> bool:
    """False when `text` carries bytes that are not UTF-8 (as Python decodes argv and the
    environment: a lone surrogate for each such byte)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Add --config, --state, --base-url, --app-url, --token-file and --org."""
    group = parser.add_argument_group("configuration")
    group.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="TOML config file (overrides [tool.auditor] in ./pyproject.toml)",
    )
    group.add_argument(
        "--state",
        metavar="FILE|URL",
        help="state file (default .auditor/state.db), or a PostgreSQL store "
        "postgresql://user@host/db (password from PGPASSWORD or ~/.pgpass); env AUDITOR_STATE",
    )
    group.add_argument("--base-url", metavar="URL", help="service address (env AUDITOR_BASE_URL)")
    group.add_argument(
        "--app-url",
        metavar="URL",
        help="address of the readiness-report endpoint (env AUDITOR_APP_URL)",
    )
    group.add_argument(
        "--token-file",
        metavar="FILE",
        type=Path,
        help="file holding the API token (or set AUDITOR_TOKEN)",
    )
    group.add_argument("--org", metavar="NAME", help="organization label (default 'default')")


def add_usage_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add --no-usage (skip the usage analytics)."""
    parser.add_argument(
        "--no-usage",
        action="store_true",
        help="do not read the usage analytics (and do not evaluate `usage` rules)",
    )


def add_readiness_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add --no-readiness (skip the readiness reports)."""
    parser.add_argument(
        "--no-readiness",
        action="store_true",
        help="do not read the readiness reports (and do not evaluate `readiness` and `org` "
        "rules): for an organization without the readiness app, whose runs are otherwise "
        "incomplete (exit 2)",
    )


def add_audit_options(parser: argparse.ArgumentParser, command: str) -> None:
    """Add --policy, --waivers, --readiness-model, --out, --fail-on, --soft-fail, --offline,
    --sarif-include-waived, --sarif-category (its default as `command`, `run` or `review`,
    makes it), --output, --quiet."""
    group = parser.add_argument_group("audit")
    group.add_argument(
        "--policy",
        dest="policies",
        metavar="PATH",
        type=Path,
        action="append",
        help="policy file or folder (repeatable; default: the shipped packs)",
    )
    group.add_argument("--waivers", metavar="FILE", type=Path, help="waivers YAML file")
    group.add_argument(
        "--readiness-model",
        metavar="FILE",
        type=Path,
        help="readiness model YAML (criterion → level)",
    )
    group.add_argument("--out", dest="out_dir", metavar="DIR", type=Path, help="report folder")
    group.add_argument(
        "--fail-on",
        choices=FAIL_ON_VALUES,
        help="exit 1 when a failing finding is at or above this severity (default low)",
    )
    group.add_argument(
        "--soft-fail", action="store_true", help="exit 0 instead of 1 on findings (never hides 2)"
    )
    group.add_argument(
        "--offline", action="store_true", help="use the state file as it is; do not sync first"
    )
    add_output_options(group)
    group.add_argument(
        "--sarif-include-waived",
        action="store_true",
        help="list waived findings in findings.sarif as suppressed results (default: left out, "
        "as GitHub code scanning shows suppressed results as open alerts)",
    )
    group.add_argument(
        "--sarif-category",
        metavar="CATEGORY",
        type=_sarif_category,
        help="code scanning category of findings.sarif (its automationDetails.id before the run "
        f"id; codeql-action's category input does not override it). {_CATEGORY_HELP[command]}",
    )


#: The default SARIF category, as `cli.summary.with_report_options` and
#: `report.sarif.default_category` make it: an upload-sarif step set up from `--help` expects
#: the category it will get (T91 #9).
_CATEGORY_HELP = {
    "run": "Default auditor/<org or host>/run, followed by -as-of (--at), -all-revisions, "
    "-no-usage, -no-readiness for each that applies (the last two when the flag left rules "
    "out), e.g. auditor/acme/run-as-of-no-usage; with --orgs, <org> is each one's name and "
    "CATEGORY given becomes CATEGORY/<org>",
    "review": "Default auditor/<org or host>/review/<file>, <file> the reviewed file's path "
    "from the repository's root (auditor/acme/review/settings/prod.yaml); <org or host> is "
    "offline when there is no service address (--against FILE)",
}


def add_output_options(group: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    """Add -o/--output (which reports to write) and -q/--quiet."""
    group.add_argument(
        "-o",
        "--output",
        dest="outputs",
        metavar="LIST",
        type=_outputs,
        default=DEFAULT_OUTPUT_NAMES,
        help=f"reports to write, comma-separated, from {','.join(OUTPUT_NAMES)} "
        f"(default {','.join(DEFAULT_OUTPUT_NAMES)}; pdf needs pip install 'auditor[pdf]')",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print nothing but errors and the final 'auditor: exit N' line (stderr)",
    )


_CATEGORY = lazy_regex(globals(), "_CATEGORY", r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}")


def _sarif_category(text: str) -> str:
    """A code scanning category: letters, digits and `._:/-`, no trailing `/`."""
    if not _CATEGORY.fullmatch(text) or text.endswith("/") or "//" in text:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a category: use letters, digits and ._:/- (up to 200, starting "
            "with a letter or digit, no empty part between slashes), e.g. auditor-nightly"
        )
    return text


def _outputs(text: str) -> tuple[str, ...]:
    from auditor.report import parse_outputs
    from auditor.report.pdf import pdf_problem

    try:
        names = parse_outputs(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    problem = pdf_problem() if "pdf" in names else None  # said before a run starts
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return names


def _port(text: str) -> int:
    """A TCP port number, 0-65535 (0: any free one); argparse's usage error otherwise."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {port}")
    return port


#: `run --orgs`: how many organizations are audited at once without `--workers`.
DEFAULT_WORKERS = 4

DEMO_ORGS = ("acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell")


FORMATS = ("text", "json", "patch", "md")


def register_run(subparsers: Any) -> None:
    """Add the `run` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="nightly audit: sync, evaluate the policies, write the reports",
        description=(
            "Sync what is new (unless --offline), evaluate the policies against the settings, "
            "their changes and the readiness reports, compare with the previous complete run, "
            "and write report.html, report.md, findings.json, findings.sarif and junit.xml."
        ),
    )
    add_common_options(parser)
    add_audit_options(parser, "run")
    parser.add_argument(
        "--at",
        metavar="DATE",
        help="audit the settings in force at DATE (YYYY-MM-DD: end of day, UTC)",
    )
    parser.add_argument(
        "--all-revisions", action="store_true", help="also report every stored revision's results"
    )
    add_usage_option(parser)
    add_readiness_option(parser)
    many = parser.add_argument_group("many organizations")
    many.add_argument(
        "--orgs",
        metavar="FILE",
        type=Path,
        help="audit every organization of this TOML file ([[org]] name, base_url, app_url, "
        "token_env or token_file), each into <out>/<name>/, then print a summary table",
    )
    many.add_argument(
        "--workers",
        metavar="N",
        type=int,
        help=f"with --orgs: organizations audited at once (default {DEFAULT_WORKERS})",
    )
    parser.set_defaults(handler=_handler("run", "run_command"))


def register_review(subparsers: Any) -> None:
    """Add the `review` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "review",
        help="pre-change review of a proposed settings file (JSON or YAML)",
        description=(
            "Compare a proposed settings file with the live settings (or --against FILE), "
            "evaluate the settings and change rules, and report the findings the change would "
            "introduce, fix or leave unchanged."
        ),
    )
    parser.add_argument("proposed", metavar="PROPOSED", type=Path, help="proposed settings file")
    parser.add_argument(
        "--against",
        metavar="live|FILE",
        default="live",
        help="compare with the live settings (default; synced first unless --offline) or a file",
    )
    parser.add_argument(
        "--author",
        metavar="EMAIL",
        help="who proposes the change (default: $GITHUB_ACTOR as its GitHub no-reply address, "
        "else `git config user.email`, else unknown)",
    )
    add_common_options(parser)
    add_audit_options(parser, "review")
    parser.set_defaults(handler=_handler("review", "review_command"))


def register_sync(subparsers: Any) -> None:
    """Add the `sync` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sync",
        help="fetch new revisions and readiness reports into the state file",
        description="Fetch what is new from the service into the state file (all or nothing).",
    )
    add_common_options(parser)
    add_usage_option(parser)
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print no warnings and no progress (stderr), and the summary (stdout) only when "
        "it names integrity issues or data-quality warnings; errors are always printed",
    )
    parser.set_defaults(handler=_handler("sync", "run_sync"))


def register_diff(subparsers: Any) -> None:
    """Add the `diff` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "diff",
        help="show what changed between two stored settings revisions",
        description="Show what changed between two stored settings revisions "
        "(default: the latest revision against the one before it).",
    )
    parser.add_argument(
        "--from",
        dest="from_rev",
        type=int,
        metavar="REV",
        help="older revision (default: the stored revision before --to)",
    )
    parser.add_argument(
        "--to",
        dest="to_rev",
        type=int,
        metavar="REV",
        help="newer revision (default: the latest stored)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default), md (PR comment), json (change list), patch (RFC 6902)",
    )
    add_common_options(parser)
    parser.set_defaults(handler=_handler("diff", "run_diff"))


def register_history(subparsers: Any) -> None:
    """Add the `history` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "history",
        help="timeline of stored settings revisions: who changed what, and when",
        description="List stored settings revisions with their author, time and a one-line "
        "summary of what changed.",
    )
    parser.add_argument(
        "--since",
        metavar="DATE",
        help="only revisions at or after DATE (YYYY-MM-DD or ISO-8601 time, UTC)",
    )
    parser.add_argument(
        "--until",
        metavar="DATE",
        help="only revisions at or before DATE (a bare date includes that day)",
    )
    parser.add_argument(
        "--path",
        metavar="PATH",
        action="append",
        default=[],
        help="only revisions changing PATH or what holds it, as diff and history print paths "
        "(with or without '$.'), e.g. 'sandbox.*', \"customModels[?id=='x'].apiKey\"; "
        "'*' is any key, '[*]' any entry; repeatable",
    )
    parser.add_argument(
        "--author",
        metavar="EMAIL",
        help="only revisions by this author (case-insensitive; globs allowed)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_common_options(parser)
    parser.set_defaults(handler=_handler("history", "run_history"))


#: What `policy lint` and `policy test` check when no PATH is given: what `run` would load.
_POLICY_PATHS = (
    "files or folders (default: the `policies` of the configuration, --config or "
    "./pyproject.toml, else the shipped packs, as `run` and `review` load them)"
)


def register_policy(subparsers: Any) -> None:
    """Add the `policy` subcommand and its `lint`, `test` and `schema` actions."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "policy", help="lint and test policy files", description="Lint and test policy files."
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lint = actions.add_parser(
        "lint",
        help="validate policy files (and check rule paths against the stored history)",
        description="Validate policy files; with a state file, warn about rule paths that no "
        "stored revision contains. Exit 2 on errors.",
    )
    lint.add_argument("paths", nargs="*", type=Path, metavar="PATH", help=_POLICY_PATHS)
    add_common_options(lint)
    lint.set_defaults(handler=_handler("policy", "run_lint"))
    test = actions.add_parser(
        "test",
        help="run the test cases kept beside the rules (<name>.tests.yaml)",
        description=(
            "Run policy test cases; exit 1 on a failing case, 2 on invalid files or no cases."
        ),
    )
    test.add_argument("paths", nargs="*", type=Path, metavar="PATH", help=_POLICY_PATHS)
    test.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="TOML config file whose `policies` are tested when no PATH is given (overrides "
        "[tool.auditor] in ./pyproject.toml)",
    )
    test.set_defaults(handler=_handler("policy", "run_test"))
    schema = actions.add_parser("schema", help="print the policy file JSON Schema")
    schema.set_defaults(handler=_handler("policy", "run_schema"))


def register_export(subparsers: Any) -> None:
    """Add the `export` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "export",
        help="write an evidence bundle an auditor can check and re-run (`auditor verify`)",
        description=(
            "Write the evidence bundle: every stored revision and readiness report (JSON lines "
            "and CSV, with every change step in words), the run parameters, the exact policy, "
            "waiver and readiness-model files, the reports of evaluating the bundle itself, and "
            "a sha256 manifest, optionally signed with an Ed25519 key. Reads the state file "
            "only (run `auditor sync` first)."
        ),
    )
    add_common_options(parser)
    parser.add_argument(
        "--out", metavar="DIR", type=Path, default=None, help="output folder, new or empty "
        "(default ./evidence)"
    )  # fmt: skip
    group = parser.add_argument_group("evaluation (as for `auditor run`)")
    group.add_argument(
        "--policy", dest="policies", metavar="PATH", type=Path, action="append",
        help="policy file or folder (repeatable; default: the shipped packs)",
    )  # fmt: skip
    group.add_argument("--waivers", metavar="FILE", type=Path, help="waivers YAML file")
    group.add_argument("--readiness-model", metavar="FILE", type=Path, help="readiness model YAML")
    group.add_argument(
        "--at", metavar="DATE", help="audit the settings in force at DATE (YYYY-MM-DD: end of day)"
    )
    group.add_argument(
        "--all-revisions", action="store_true", help="also report every revision's results"
    )
    group.add_argument("--fail-on", choices=FAIL_ON_VALUES, help="recorded in the reports")
    add_usage_option(group)
    parser.add_argument(
        "--sign-key", metavar="PEM", type=Path,
        help="sign manifest.json with this Ed25519 private key (writes manifest.sig; needs "
        "pip install 'auditor[sign]')",
    )  # fmt: skip
    parser.set_defaults(handler=_handler("export", "run_export"))


def register_verify(subparsers: Any) -> None:
    """Add the `verify` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "verify",
        help="check an evidence bundle's hashes and signature and re-run its evaluation",
        description=(
            "Check every file of an evidence bundle against its manifest (naming any altered, "
            "missing or extra file), the manifest's Ed25519 signature with --key, and re-run "
            "the evaluation from the bundle alone, which must reproduce findings.json and the "
            "other reports byte for byte. Exit 0 when all holds, 2 otherwise."
        ),
    )
    parser.add_argument("bundle", metavar="BUNDLE", type=Path, help="the bundle's folder")
    parser.add_argument(
        "--key", metavar="PEM", type=Path,
        help="Ed25519 public key (PEM) the manifest must be signed with",
    )  # fmt: skip
    parser.add_argument("--no-rerun", action="store_true", help="check hashes and signature only")
    parser.set_defaults(handler=_handler("verify", "run_verify"))


def register_demo(subparsers: Any) -> None:
    """Add the `demo` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="run the nightly audit against the built-in emulator",
        description="Start the platform emulator, run `auditor run` against it, write the reports.",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="report folder (default reports/demo)"
    )
    parser.add_argument("--seed", type=int, default=7, help="emulator data seed (default 7)")
    parser.add_argument(
        "--revisions", type=int, default=240, help="settings revisions to serve (default 240)"
    )
    parser.add_argument("--repos", type=int, default=36, help="repositories (default 36)")
    parser.add_argument(
        "--orgs",
        metavar="N",
        type=int,
        default=None,
        help=f"audit N organizations at once (1-{len(DEMO_ORGS)}), each served by its own "
        "emulator with other seeded data: `auditor run --orgs` with a summary table",
    )
    parser.add_argument(
        "--state",
        metavar="FILE|URL",
        help="store to use (default: a fresh temporary SQLite file); a postgresql:// URL "
        "shows the central store",
    )
    add_output_options(parser)
    parser.set_defaults(handler=_handler("demo", "demo_command"))


def register_emulator(subparsers: Any) -> None:
    """Add the `emulator` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "emulator",
        help="serve the platform API locally from seeded, realistic data",
        description="Serve the platform API on loopback from seeded data (for demos and tests). "
        "Prints the two addresses and the demo tokens, then serves until Ctrl-C.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=0, help="main API port (0 = any free port)")
    parser.add_argument(
        "--app-port", type=_port, default=0, help="readiness API port (0 = any free port)"
    )
    parser.add_argument("--seed", type=int, default=7, help="data seed (default 7)")
    parser.add_argument(
        "--revisions", type=int, default=240, help="settings revisions (default 240)"
    )
    parser.add_argument(
        "--repos", type=int, default=36, help="repositories with readiness reports (default 36)"
    )
    parser.add_argument(
        "--now", metavar="ISO", help="the data's present (default 2026-11-01T12:00:00Z)"
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="ENDPOINT:KIND[:page=N][:times=N][:param=value]",
        help="arm a fault, e.g. history:429:page=2:retry_after=3 (repeatable)",
    )
    parser.add_argument("--log-requests", action="store_true", help="log each request on stderr")
    parser.set_defaults(handler=_handler("emulator", "run"))


#: Subcommand name → the function adding its parser, in the order `auditor --help` lists them.
REGISTER: dict[str, Callable[[Any], None]] = {
    "run": register_run,
    "review": register_review,
    "sync": register_sync,
    "diff": register_diff,
    "history": register_history,
    "policy": register_policy,
    "export": register_export,
    "verify": register_verify,
    "demo": register_demo,
    "emulator": register_emulator,
}
