"""`auditor review PROPOSED`: pre-change review of a settings file kept in a repository.

Takes the proposed file and the live settings (latest stored, after a sync) or another file,
gives the five reports (report.md is the PR comment), appends the Markdown to
`$GITHUB_STEP_SUMMARY` when set, and exits 1 when the change would introduce findings at or
above `--fail-on`.
"""

from __future__ import annotations

import argparse
import errno
import os
import secrets
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.cli.common import (
    api_address,
    config_from_args,
    named_inputs,
    open_store,
    refuse_out_over_inputs,
    require_remote,
    store_kept_only_if_synced,
    stored_address,
    sync_store,
)
from auditor.cli.outdir import clear_old_reports, hold_out_dir, report_dir
from auditor.cli.summary import (
    decide_exit,
    make_run_id,
    print_summary,
    with_report_options,
)
from auditor.common.escape import terminal_text
from auditor.common.files import modes_forgotten_after, path_under
from auditor.common.jsonutil import content_hash
from auditor.config import Config
from auditor.errors import AuditorError, DataError
from auditor.models import DataWarning, Revision, User
from auditor.operators import fingerprinting
from auditor.policy.yamlsafe import FileReadError
from auditor.redact import Redactor
from auditor.redact.shown import printed_path, shown_value
from auditor.report import ReportData, render_markdown, write_reports
from auditor.store.database import Store
from auditor.workflows.review import (
    Author,
    ReviewRequest,
    SettingsFile,
    load_settings_file,
    reviewed_rules,
    run_review,
)
from auditor.workflows.run import (
    AuditOutcome,
    LoadedPolicy,
    StoredHistory,
    load_inputs,
    redacted_inputs,
)

if TYPE_CHECKING:
    from datetime import datetime

    from auditor.cli import Context

FILE_USER = User(id="file", email="settings file", name="settings file")
GIT_TIMEOUT = 5.0  # seconds; a hung git (a credential prompt, a network file system) is unknown


def review_command(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: the whole pre-change review."""
    config = config_from_args(args, ctx)
    # before anything is read: no input is one of the reports `--out` gets
    files = [("PROPOSED", Path(args.proposed))]
    if args.against != "live":
        files.append(("--against", Path(args.against)))
    elif (
        "against" in getattr(args, "_given_once", ())  # written so, not left to its default
        and not args.quiet
        and os.path.lexists(Path(ctx.cwd) / "live")  # `live` is a word here, never that file
    ):
        print(
            "auditor: note: compared with the live settings (--against live), not with the "
            "file `live` in this folder: give --against ./live for the file",
            file=ctx.stderr,
        )
    refuse_out_over_inputs(args, config, ctx, files=files, state=args.against == "live")
    for _, path in files:  # a link out of the checkout: never read, never shown
        refuse_link_out_of_tree(path, ctx)
    now = ctx.clock()
    tokens = ctx.secrets()  # the command's own: `[token]` wherever a value given shows
    loaded = load_inputs(*named_inputs(config, ctx), cwd=Path(ctx.cwd), tokens=tokens)
    reviewed_rules(loaded.policy)  # before anything is fetched: a review of no rules is refused
    author, source = proposed_author(args.author, ctx)
    author = shown_author(author, tokens)
    run_id = "review-" + make_run_id(now)
    # The folder (`--out`, else `reports/<run-id>/`, `-2` … if taken: `report_dir`) is made and
    # held until the reports are written: one that another auditor command is writing refuses
    # this review (exit 2); one made here goes again if it fails.
    with (
        report_dir(config.out_dir, Path(ctx.cwd) / "reports", run_id) as out_dir,
        hold_out_dir(out_dir, remove_if_failed=True),
        modes_forgotten_after(out_dir),
    ):
        clear_old_reports(out_dir)  # the checks have passed: an earlier run's reports go
        if args.against == "live" and args.offline:
            with open_store(config) as store:  # history streams from it
                request = _against_live(args, config, ctx, now, run_id, store)
                author = redacted_author(author, store.redactor)
                outcome = _reviewed(loaded, replace(request, author=author), store.redactor)
        elif args.against == "live":
            require_remote(config)  # no token (a pull request from a fork): no state file made
            # A bad proposed file or a failed first sync leaves no empty state file behind.
            with store_kept_only_if_synced(config) as store:
                request = _against_live(args, config, ctx, now, run_id, store)
                author = redacted_author(author, store.redactor)
                outcome = _reviewed(loaded, replace(request, author=author), store.redactor)
        else:
            redactor = _file_redactor(config)
            request = _against_file(args, config, now, run_id, redactor, ctx)
            author = redacted_author(author, redactor)
            outcome = _reviewed(loaded, replace(request, author=author), redactor, keyed=False)
        data = with_report_options(outcome.data, args, config.org, tokens)
        write_reports(data, out_dir, args.outputs)
        if not args.quiet:  # shown before the step summary is tried: its failure is an error
            print_summary(outcome.data, out_dir, ctx, args.outputs)
            print(f"proposed by {terminal_text(author.shown)} ({source})", file=ctx.stdout)
        _append_step_summary(data, ctx)
        return decide_exit(
            outcome.errors,
            outcome.failing,
            config.fail_on,
            args.soft_fail,
            ctx,
            what="findings introduced by the change",
        )


def _reviewed(
    loaded: LoadedPolicy, request: ReviewRequest, redactor: Redactor, keyed: bool = True
) -> AuditOutcome:
    """`run_review` with the redactor that hid the reviewed settings: a rule's literal is
    compared with a redacted value by its keyed fingerprint (`auditor.operators.hidden`), and
    the policy's and the waivers' own text passes through it (a secret written into a rule
    or a waiver reaches no output). Not `keyed` (`--against FILE`: no state file opened, so
    no memory of the secrets it learned from the data): the user's policy files are cited by
    digests under a key kept nowhere (`with_digests_keyed_nowhere`), never by the sha256 of
    a file that may write such a secret."""
    with fingerprinting(redactor.marker):
        inputs = redacted_inputs(loaded, redactor)
        if not keyed:
            from auditor.policy.redacted import with_digests_keyed_nowhere

            inputs = replace(inputs, policy=with_digests_keyed_nowhere(inputs.policy))
        return run_review(inputs, request)


def shown_author(author: Author, tokens: Iterable[str]) -> Author:
    """The author as the review judges and shows it (the rules' `$.author`, "since … by", the
    `proposed by` line): a token typed as `--author` (the command's own reads `[token]`, any
    other value that looks like a secret `<not shown: looks like a secret>`, as a command
    shows a value it was given) never reaches a report. Such an author is no person's
    address, so an author rule still fails on it."""
    email, name = shown_value(author.email, tokens), shown_value(author.name, tokens)
    return author if (email, name) == (author.email, author.name) else Author(email, name)


def redacted_author(author: Author, redactor: Redactor) -> Author:
    """The author through the review's redactor: a secret the state file remembers (one caught
    by its place, which `shown_author`'s detectors do not see by its looks) typed as
    `--author` reads as its marker in every report and the `proposed by` line."""
    email, name = redactor.redact_text(author.email), redactor.redact_text(author.name)
    return author if (email, name) == (author.email, author.name) else Author(email, name)


def proposed_author(flag: str | None, ctx: Context) -> tuple[Author, str]:
    """The proposed step's author and where it came from: `--author`, else `GITHUB_ACTOR` (as
    GitHub's no-reply address for that account), else `git config user.email`, else unknown."""
    if flag:
        return Author(flag.strip(), flag.strip()), "--author"
    actor = ctx.env.get("GITHUB_ACTOR", "").strip()
    if actor:
        actor_id = ctx.env.get("GITHUB_ACTOR_ID", "").strip()
        local = f"{actor_id}+{actor}" if actor_id.isdigit() else actor
        return Author(f"{local}@users.noreply.github.com", actor), "GITHUB_ACTOR"
    email = _git_user_email(ctx)
    if email:
        return Author(email, email), "git config user.email"
    return Author(), "no --author, GITHUB_ACTOR or git user.email"


def _git_user_email(ctx: Context) -> str:
    """`git config user.email` in the working folder; empty when git is absent, slow or unset."""
    return _git(["config", "user.email"], dict(ctx.env), cwd=ctx.cwd)


def _git(args: list[str], env: dict[str, str], cwd: str | None = None) -> str:
    """What `git ARGS` prints, stripped; empty when git is absent, slow (`GIT_TIMEOUT`) or
    fails."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _against_live(
    args: argparse.Namespace,
    config: Config,
    ctx: Context,
    now: datetime,
    run_id: str,
    store: Store,
) -> ReviewRequest:
    if config.token:  # known before the proposed file is read: a pasted token is scrubbed
        store.register_secret(config.token)
    proposed = _proposed(args.proposed, store.redactor, ctx)  # bad: fails before any network
    quality: tuple[DataWarning, ...] = ()
    if not args.offline:  # what its sync found odd is said, as `sync` and `run` say it
        quality = sync_store(store, config, ctx, quiet=args.quiet, usage=False).data_quality
    live = store.latest_revision()
    if live is None:
        raise DataError(
            f"no settings revision stored in {store.path}: nothing to review against "
            "(run `auditor sync` first)"
        )
    history = StoredHistory(store, live.revision)
    from auditor.cli.cmd_run import data_source

    # what the live side is: the settings this review's sync fetched, or (`--offline`) those
    # the state file's last sync stored, said in every report as a run says it
    source = replace(
        data_source(store, not_synced="--offline" if args.offline else ""), by="review"
    )
    return ReviewRequest(
        live=live,
        history=history,
        proposed=proposed,
        against=f"rev {live.revision} (live)",
        now=now,
        run_id=run_id,
        # `--offline` without a base URL: the address the live side was synced from
        api_address=stored_address(config, store, args.offline) or api_address(config),
        fail_on=config.fail_on,
        list_table=config.list_table,
        data_quality=quality,
        source=source,
    )


def _file_redactor(config: Config) -> Redactor:
    redactor = Redactor(config.fingerprint_key or secrets.token_bytes(32))
    if config.token:  # a token pasted into either file is scrubbed, as against live settings
        redactor.register(config.token)
    return redactor


def _against_file(
    args: argparse.Namespace,
    config: Config,
    now: datetime,
    run_id: str,
    redactor: Redactor,
    ctx: Context,
) -> ReviewRequest:
    base = _load(Path(args.against), redactor)
    live = Revision(
        revision=0,
        updated_at=now,
        user=FILE_USER,
        settings=base.settings,
        content_hash=content_hash(base.settings),
    )
    return ReviewRequest(
        live=live,
        history=(live,),
        proposed=_proposed(args.proposed, redactor, ctx),
        against=printed_path(args.against, ctx.secrets()),
        now=now,
        run_id=run_id,
        api_address="(files)",
        fail_on=config.fail_on,
        list_table=config.list_table,
    )


def _proposed(path: Path, redactor: Redactor, ctx: Context) -> SettingsFile:
    """The proposed file, named in the reports (and SARIF's artifact URI) by its path from
    the repository's root, as GitHub code scanning links it (`repository_path`)."""
    loaded = _load(path, redactor)
    shown = printed_path(repository_path(path, ctx), ctx.secrets())
    if shown == loaded.path:
        return loaded
    return replace(loaded, path=shown, document=replace(loaded.document, path=shown))


def repository_path(path: Path, ctx: Context) -> str:
    """`path` relative to GITHUB_WORKSPACE when it lies there (code scanning's upload-sarif
    resolves a URI against the checkout, the workspace by default: a file in a submodule or a
    nested checkout is named from the workspace, not from the inner repository), else to the
    root of the git work tree of the file's own folder, else as given. Relative to the current
    folder (`ec.yaml` run from `deploy/`), absolute (`file:///…`) or outside it (`../repo/…`),
    SARIF's URI was no path code scanning could find in the repository."""
    real = os.path.realpath(path)
    shown = path_under(real, ctx.env.get("GITHUB_WORKSPACE", ""))
    if shown is None:
        shown = path_under(real, _git_root(os.path.dirname(real), ctx))
    return str(path) if shown is None else shown


def _git_root(folder: str, ctx: Context) -> str:
    """The top of the git work tree `folder` is in; empty when none (or git is absent, slow).
    git is asked about `folder` itself: the variables that choose another repository (GIT_DIR,
    GIT_WORK_TREE, … set inside a git hook) are not passed on, or it answered the current
    folder (`ec.yaml`, not `deploy/ec.yaml`)."""
    env = {k: v for k, v in ctx.env.items() if k not in _GIT_REPOSITORY_VARIABLES}
    return _git(["-C", folder, "rev-parse", "--show-toplevel"], env)


#: What `git rev-parse --local-env-vars` lists: the variables that point git at a repository
#: (or its parts) other than the one a folder is in; git drops them itself to enter a submodule.
_GIT_REPOSITORY_VARIABLES = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_CONFIG",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_DIR",
        "GIT_GRAFT_FILE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_OBJECT_DIRECTORY",
        "GIT_PREFIX",
        "GIT_REPLACE_REF_BASE",
        "GIT_SHALLOW_FILE",
        "GIT_WORK_TREE",
    }
)


def refuse_link_out_of_tree(path: Path, ctx: Context) -> None:
    """A FileReadError (`file:1:1: error: …`, exit 2), before the file is opened, when the
    proposed (or `--against`) file is a symlink, or is reached through one, to a file outside
    the tree under review: the working folder, or `GITHUB_WORKSPACE` when set. A pull request
    checks a symlink out as a symlink: `proposed.yaml -> ~/.config/gh/hosts.yml` published
    every key and value of that file in the PR comment and the reports. A link that stays in
    the tree (`proposed.yaml -> deploy/ec.yaml`) is read as ever, and so is a file named
    outside it with no link on the way (`auditor review /etc/ec.yaml`) or through a link of
    the machine's, outside the tree (macOS's `/tmp`): the command line's own choice. A link
    to what is no regular file is left to the opener, which refuses it as what it is (`a
    character device, not a regular file`)."""
    root = os.path.realpath(ctx.env.get("GITHUB_WORKSPACE", "").strip() or ctx.cwd)
    current = "/" if path.is_absolute() else os.path.realpath(ctx.cwd)
    linked = False
    for part in path.parts[1:] if path.is_absolute() else path.parts:
        step = os.path.join(current, part)
        # a link of the tree's own (one outside it, such as macOS's /tmp, is the machine's)
        if part not in (".", "..") and os.path.islink(step) and path_under(step, root):
            linked = True
        current = os.path.realpath(step)
    if not linked or path_under(current, root):
        return
    try:  # a link to a FIFO, a device, a folder or nothing: the opener says what it is
        if not stat.S_ISREG(os.stat(current).st_mode):
            return
    except OSError:
        return
    where = (
        "GITHUB_WORKSPACE" if ctx.env.get("GITHUB_WORKSPACE", "").strip() else "the working folder"
    )
    raise FileReadError(
        printed_path(path, ctx.secrets()),
        f"a symbolic link to a file outside {where} ({printed_path(root, ctx.secrets())}), "
        "not read: a settings file under review must lie in the tree it is reviewed in (a "
        "pull request's link could publish any file this machine can read); give the file "
        "itself",
    )


def _load(path: Path, redactor: Redactor) -> SettingsFile:
    """A settings file, checked by the opener every input file goes through (a FIFO, a
    folder, a device, a missing file or a symlink loop: `file:1:1: error: REASON`).

    A name longer than the file system allows stays what README says of any path, `auditor:
    error: PATH: File name too long` (the OSError is worded by `cli.failure`)."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise
    return load_settings_file(path, redactor)


def _ends_mid_line(fd: int, path: str) -> bool:
    """Whether the regular file open for appending at `fd` (named `path`) ends without a line
    break (`fd` is write-only: the file is read by name; True when it cannot be)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return False
    try:
        with open(path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"
    except OSError:  # unreadable (write-only for us): a line break too many harms nothing
        return True


def _append_step_summary(data: ReportData, ctx: Context) -> None:
    """The Markdown report (whatever --output says) appended to the job's summary page."""
    target = ctx.env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    try:
        # Opened without blocking: a named pipe nobody reads fails at once (ENXIO) instead of
        # hanging the job; once open, writes block as usual (a reader takes its time).
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
        os.set_blocking(fd, True)
        # A summary an earlier step left without a final line break would glue the report's
        # first line (its `<!-- auditor-review -->` marker) onto its last: start a new line.
        with open(fd, "a", encoding="utf-8") as fh:
            fh.write(("\n" if _ends_mid_line(fd, target) else "") + render_markdown(data))
    except OSError as exc:
        raise AuditorError(
            f"cannot append to GITHUB_STEP_SUMMARY ({target}): {exc.strerror}"
        ) from None
