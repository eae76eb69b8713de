"""Options and helpers every subcommand shares: configuration, the state file, progress output.

Takes parsed arguments and the `Context`, gives a `Config`, an open `Store`, a `Progress`, and
a sync of the configured service into the store (`sync`, `run` and `review` all sync this way).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from auditor.common.dates import DEFAULT_DAYS, parse_date_time
from auditor.common.lazyre import lazy_regex
from auditor.config import (
    Config,
    OrgEntry,
    empty_variables,
    ignored_proxy_variable,
    load_config,
)
from auditor.errors import AuditorError, ConfigError, StoreError, UsageError
from auditor.store import Store
from auditor.store.file import lock_path

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.fetch import Network
    from auditor.redact import Redactor
    from auditor.workflows.sync import SyncSummary

_FLAG_KEYS = (
    "state",
    "base_url",
    "app_url",
    "token_file",
    "org",
    "policies",
    "waivers",
    "out_dir",
    "fail_on",
    "readiness_model",
)


def config_from_args(args: argparse.Namespace, ctx: Context) -> Config:
    """Build the `Config` from flags, the context's environment and config files."""
    values = vars(args)
    empty = empty_variables(ctx.env)
    if empty and not values.get("quiet"):
        names = ", ".join(empty)
        print(
            f"auditor: warning: {names} {'is' if len(empty) == 1 else 'are'} set but empty: "
            "read as not set",
            file=ctx.stderr,
        )
    flags: dict[str, Any] = {k: values[k] for k in _FLAG_KEYS if values.get(k) is not None}
    if flags.get("policies") == []:
        del flags["policies"]
    config = load_config(
        flags=flags, env=ctx.env, cwd=Path(ctx.cwd), config_file=values.get("config")
    )
    if ctx.local_service:  # `auditor demo`: its emulator is on this machine
        config = replace(config, proxy=None, ca_bundle=None)
    if config.token:
        ctx.tokens.add(config.token)
    if config.proxy is not None:  # its password, when it may be a credential: as the token
        ctx.tokens.update(network_of(config, ctx).secrets)
    ctx.paths.update(str(p) for p in (config.state, config.out_dir) if p)
    if config.state_url is None:  # what it remembers stays out of an error line
        ctx.state_files.append((Path(ctx.cwd) / config.state_path, config.fingerprint_key))
    if not values.get("quiet") and values.get("orgs") is None:  # once per command (`--orgs`
        warn_exposed_state(config, ctx)  # never opens this file: each org's, when it opens it)
    return config


def named_inputs(config: Config, ctx: Context) -> tuple[list[Path], Path | None, Path | None]:
    """The policy paths, the waivers file and the readiness model of `config` as the user named
    them (`--policy pol/types.yaml`, which the config reads as the working folder's
    `/…/pol/types.yaml`), so that a problem line names the file as `policy lint` does:
    `pol/types.yaml:3:12: error: …`, not by an absolute path. A path outside the working
    folder stays as it is, and so does every path when this process runs in another folder
    (a relative name would then read another file)."""
    here = Path(ctx.cwd)
    same = here.resolve() == Path.cwd().resolve()

    def named(path: Path) -> Path:
        return path.relative_to(here) if same and path.is_relative_to(here) else path

    policies = [named(p) for p in config.policies]
    waivers = named(config.waivers) if config.waivers is not None else None
    model = named(config.readiness_model) if config.readiness_model is not None else None
    return policies, waivers, model


def refuse_out_over_inputs(
    args: argparse.Namespace,
    config: Config,
    ctx: Context,
    *,
    files: Iterable[tuple[str, Path]] = (),
    orgs: Iterable[OrgEntry] = (),
    state: bool = True,
) -> None:
    """A UsageError, before any input is read or anything written, when a file input of a
    command that writes reports into `--out` (`files`, the command's own: PROPOSED,
    `--against`, `--orgs`; every `--policy` file or file of a folder, `--waivers`,
    `--readiness-model`, `--config`, the `pyproject.toml` read, the token file read
    (`--token-file`, or `token_file` of the config file or `pyproject.toml`) and each of
    `orgs`' `token_file`; with `state`, the SQLite state file and its companions, each
    organization's of `orgs`) is, or leads through a symlink to, a file the command writes or
    clears there (`outdir.report_files`).
    Without `--out`, the reports go to a new folder, where no input is."""
    from auditor.cli.outdir import STATE_COMPANIONS, refuse_inputs_in_out, report_files
    from auditor.config import org_config
    from auditor.policy.loader import policy_files

    if config.out_dir is None:
        return
    cwd = Path(ctx.cwd)
    orgs = tuple(orgs)
    inputs = list(files)
    inputs += [("--policy", p) for p in policy_files(config.policies)]
    inputs += [
        (flag, p)
        for flag, p in (
            ("--waivers", config.waivers),
            ("--readiness-model", config.readiness_model),
        )
        if p is not None
    ]
    if getattr(args, "config", None) is not None:
        inputs.append(("--config", Path(args.config)))
    if config.token_file is not None:  # the flag's, or a config file's: the one read
        given = getattr(args, "token_file", None) is not None
        inputs.append(("--token-file" if given else "the token file", config.token_file))
    inputs += [
        (f"the token file of organization {o.name}", o.token_file)
        for o in orgs
        if o.token_file is not None
    ]
    if (cwd / "pyproject.toml").exists() or (cwd / "pyproject.toml").is_symlink():
        inputs.append(("the configuration", Path("pyproject.toml")))
    if state and config.state_url is None:
        stores = [org_config(config, o, Path()) for o in orgs] if orgs else [config]
        inputs += [
            (
                "the state file" if not suffix else f"the state file's {suffix}",
                Path(f"{c.state_path}{suffix}"),
            )
            for c in stores
            for suffix in STATE_COMPANIONS
        ]
    names = [o.name for o in orgs]
    writes = report_files(config.out_dir, names)
    refuse_inputs_in_out(writes, inputs, cwd=cwd, tokens=ctx.secrets())


def warn_exposed_state(config: Config, ctx: Context) -> None:
    """Say once that the configured SQLite state file may be read by every local account
    (`exposed_warning`); each organization's of `run --orgs` (`state-<org>.db`) too, as the
    command opens those."""
    if config.state_url is not None:
        return
    from auditor.common.escape import terminal_text
    from auditor.store.file import exposed_warning

    found = exposed_warning(Path(ctx.cwd) / config.state_path, lambda: config.state_shown)
    if found is not None:
        print(terminal_text(f"auditor: warning: {found}"), file=ctx.stderr)


def warn_exposed_org_states(config: Config, entries: Iterable[OrgEntry], ctx: Context) -> None:
    """`warn_exposed_state` for the state file of each organization of an `--orgs` run."""
    from auditor.config import org_config

    for entry in entries:
        warn_exposed_state(org_config(config, entry, Path()), ctx)


def open_store(
    config: Config, *, create: bool = False, readonly: bool = False, synced: bool | None = None
) -> Store:
    """Open the configured state file (locked); StoreError if it is missing and not `create`.
    Read-only commands pass `readonly`: the file cannot change by a byte.

    StoreError too if the store holds another organization than the configured one: always
    for a writer (as `sync` refuses), for a reader when the organization was given (`--org`,
    `AUDITOR_ORG`, `org =`), so another organization's data is never labelled as this one's;
    and, when `synced` (by default for a reader: `history`, `diff`, `export`), if no sync ever
    completed into it (a first sync that failed or was cut off): as when it is missing. (An
    offline `run` or `review` of such a store is exit 2 already: nothing to evaluate.)"""
    key = config.fingerprint_key
    store = Store.open(
        config.state,
        create=create,
        fingerprint_key=key,
        readonly=readonly,
        org=config.org,
        # writers always (as `sync` refuses), readers when an organization was given
        org_given=config.org_given if not readonly or config.org_given else None,
    )
    try:
        if (readonly if synced is None else synced) and _never_synced(store, empty=True):
            raise StoreError(
                f"state file {store.path} holds no completed sync (a first sync failed or was "
                "cut off): run `auditor sync` first"
            )
    except BaseException:
        store.close()
        raise
    return store


@contextmanager
def store_kept_only_if_synced(config: Config, *, even_on_success: bool = False) -> Iterator[Store]:
    """Open the store for a command that syncs into it (created if missing). If the command
    fails and the store is a file this command created that no sync has completed into, the
    file is removed again (and its lock file, if made here): a failed first sync, a bad
    proposed file or a missing token leave nothing behind; in PostgreSQL, the schema (or the
    tables, in a schema made beforehand) this command created. A file that was there before (even
    a damaged one, or one another run made meanwhile) is never removed, nor a symlink the user
    made to where the file is to be: only its target, when this command created it.
    `even_on_success`: also when the command ends without an exception (`run`, which audits
    what is stored when its sync fails, and so may end with no sync completed)."""
    lock = None if config.state_url is not None else lock_path(config.state_path)
    lock_made = lock is not None and not lock.exists()

    def discard_if_never_synced(store: Store) -> None:
        if store.created and _never_synced(store):
            if config.state_url is not None:
                store.discard_created()  # the schema (or tables) it made
            else:
                config.state_path.resolve().unlink(missing_ok=True)
                if lock is not None and lock_made:
                    lock.unlink(missing_ok=True)

    with open_store(config, create=True) as store:  # the lock is held from here on
        try:
            yield store
        except BaseException:
            discard_if_never_synced(store)
            raise
        if even_on_success:
            discard_if_never_synced(store)


def _never_synced(store: Store, *, empty: bool = False) -> bool:
    """No sync completed into the store (and, with `empty`, it holds no revision either: only
    a sync stores them); False when that cannot be read (the command that reads it says so).
    Without `empty`, False too when it keeps history pages of a sync that did not finish (a
    first sync cut short: the next one goes on from them, so the file stays)."""
    try:
        if store.last_sync() is not None:
            return False
        return store.count_revisions() == 0 if empty else not store.has_staged()
    except StoreError:
        return False


def require_remote(config: Config) -> tuple[str, str]:
    """The base URL and token, or a ConfigError saying how to provide them."""
    if not config.base_url:
        raise ConfigError(
            "no service address: pass --base-url, set AUDITOR_BASE_URL or base_url in a config file"
        )
    if not config.token:
        raise ConfigError("no API token: set AUDITOR_TOKEN or pass --token-file FILE")
    return config.base_url, config.token


class Progress:
    """Writes progress lines to stderr, only when stderr is a terminal."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self._stream = stream
        self._enabled = enabled

    @classmethod
    def for_context(cls, ctx: Context) -> Progress:
        """Progress that shows only on an interactive stderr."""
        return cls(ctx.stderr, ctx.interactive)

    def __call__(self, message: str) -> None:
        """Show one progress line."""
        if self._enabled:
            print(f"auditor: {message}", file=self._stream, flush=True)


_WEEK_DATE = lazy_regex(globals(), "_WEEK_DATE", r"^\s*[+-]?\d{4}-?W", re.IGNORECASE)


def parse_when(text: str, option: str, *, end_of_day: bool) -> datetime:
    """A `--since`/`--until`/`--at` value as an aware UTC datetime. A date alone, written
    `2026-10-01` or `20261001`, covers the whole day (its end with `end_of_day`, else its
    start), in every form alike; a week date (`2026-W40`, `2026-W40-3`, with or without a time)
    is refused: which moment of which day it means is a guess."""
    if _WEEK_DATE.match(text):
        raise UsageError(
            f"{option}: a week date is not accepted, give the day: a date such as 2026-10-01 "
            f"or 2026-10-01T12:00:00Z, got {text!r}"
        )
    try:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            day = None
        if day is not None:
            moment = datetime.combine(day, time.min, tzinfo=UTC)
            return moment + timedelta(days=1, microseconds=-1) if end_of_day else moment
        parsed = parse_date_time(text)  # as the sync reads the service's (`z`, second 60)
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise UsageError(
            f"{option}: expected a date such as 2026-10-01 or 2026-10-01T12:00:00Z, got {text!r}"
        ) from None


#: The largest data the emulator makes (twice the benchmarks' biggest history; it is held in
#: memory: 0.3 GB at 100,000 revisions): a larger number ran until killed, the memory filling.
MAX_REVISIONS = 200_000
MAX_REPOS = 20_000


def check_sizes(revisions: int, repos: int) -> None:
    """Refuse data sizes the generator cannot make (`auditor emulator` and `auditor demo`)."""
    if not 1 <= revisions <= MAX_REVISIONS or not 0 <= repos <= MAX_REPOS:
        raise UsageError(
            f"--revisions must be from 1 to {MAX_REVISIONS:,} and --repos from 0 to {MAX_REPOS:,}"
        )


def sync_store(
    store: Store,
    config: Config,
    ctx: Context,
    *,
    quiet: bool = False,
    usage: bool = True,
    readiness: bool = True,
) -> SyncSummary:
    """Sync the configured service into an already open store, progress on a terminal
    (never when `quiet`); `usage`: also the usage analytics of the last 30 complete days;
    `readiness`: also the readiness reports, when an app URL is configured."""
    # Imported here: the fetch stack (httpx, detect-secrets' plugins) only when syncing.
    from auditor.workflows.sync import SyncOptions, sync_service

    base_url, token = require_remote(config)
    app_url = config.app_url if readiness else None  # (`run --no-readiness`: not contacted)
    network = network_of(config, ctx)
    options = SyncOptions(
        base_url=base_url,
        app_url=app_url,
        token=token,
        org=config.org,
        timeout=config.timeout,
        deadline=config.deadline,
        max_pages=config.max_pages,
        page_size=config.page_size,
        usage_days=DEFAULT_DAYS if usage else None,
        network=network,
    )
    if not quiet:
        from auditor.redact.shown import shown_address

        tokens = {*ctx.secrets(), token}
        proxy = network.proxy
        # through a proxy off this machine, an http:// address's token goes over the network
        # (to the proxy), which sees it too; through a CONNECT tunnel (https://) it does not
        off = proxy is not None and not _encrypted_or_local(proxy.replace("https:", "http:", 1))
        for name, url in (("base_url", base_url), ("app_url", app_url)):
            if url and (not _encrypted_or_local(url) or (off and url.startswith("http:"))):
                sees = f", and the proxy {proxy} sees it too" if proxy else ""
                print(
                    f"auditor: warning: {name} {shown_address(url, tokens)} is plain HTTP: the API "
                    f"token goes over the network unencrypted{sees} (use https://)",
                    file=ctx.stderr,
                )
    last = None
    with contextlib.suppress(StoreError):  # (damage: the sync says so, as it fails)
        last = store.last_sync()
    progress = Progress(ctx.stderr, ctx.interactive and not quiet)
    for secret in network.secrets:  # the proxy's password: scrubbed as the token is
        store.register_secret(secret)
    try:
        summary = sync_service(store, options, progress=progress, clock=ctx.clock)
    except AuditorError as exc:
        _token_named(exc, store.redactor, (token, *network.secrets))  # the proxy's password
        raise
    except KeyboardInterrupt as exc:  # (Ctrl-C, SIGTERM): the exit line follows; first what
        _say_kept(store, ctx, exc)  # was kept
        raise
    if not quiet and last is not None:
        _warn_moved(store, last.base_url, base_url, ctx)
    return summary


def _say_kept(store: Store, ctx: Context, exc: KeyboardInterrupt) -> None:
    """After an interrupted sync, the line that says which history pages it kept (or that it
    kept none) and what it had fetched, and whether they may hold a secret it could not scrub
    (a failed one's error says it: `workflows.sync`)."""
    from auditor.workflows.sync import interrupted

    try:
        said = interrupted(store, exc)
    except OSError:
        return
    if said:
        print(f"auditor: sync interrupted: {said}", file=ctx.stderr)


def network_of(config: Config, ctx: Context) -> Network:
    """How the sync reaches the service: the configured proxy (its user name and password
    apart) and CA bundle; with no proxy configured, the standard proxy variable set in the
    environment, which auditor does not read, for a failed connection's hint."""
    from auditor.fetch import Network

    proxy, bundle = config.proxy, config.ca_bundle
    auth = None
    if proxy is not None and proxy.username is not None:
        auth = (proxy.username, proxy.password or b"")
    return Network(
        proxy=proxy.url if proxy is not None else None,
        proxy_auth=auth,
        ca_pem=bundle.pem if bundle is not None else None,
        ca_shown=bundle.shown if bundle is not None else None,
        ca_where=bundle.where if bundle is not None else "",
        ignored_proxy_variable=None if proxy is not None else ignored_proxy_variable(ctx.env),
    )


def api_address(config: Config, stored: str | None = None) -> str:
    """The service address a report, a bundle and the command's lines name: `base_url`, else
    (`stored`) the one the state file was last synced from, else `(offline)`; never a secret
    in its path, the command's own token reading `[token]` (`shown_address`)."""
    from auditor.redact.shown import shown_address

    url = config.base_url or stored
    return shown_address(url, (config.token,) if config.token else ()) if url else "(offline)"


def stored_address(config: Config, store: Store, offline: bool) -> str | None:
    """The address an offline command names when no base URL is set: the one the state file
    was last synced from (as `export` names it; `(offline)` only for a state never synced).
    None when the command is online or has a base URL (`api_address` then names that)."""
    if not offline or config.base_url:
        return None
    synced = store.last_sync()
    return api_address(config, synced.base_url) if synced is not None else None


def _warn_moved(store: Store, last_url: str | None, base_url: str, ctx: Context) -> None:
    """One line when a sync stored data from another service address than the one before: a
    service that moved is set to its new address on purpose, but another service's data is
    mixed into this store's history."""
    if not last_url:
        return
    from auditor.redact.shown import shown_address

    # (a sync records the address as shown; one recorded by an earlier version, as given)
    tokens = ctx.secrets()
    before = _address(shown_address(str(last_url), tokens))
    now = _address(shown_address(base_url, tokens))
    if before != now:
        from auditor.common.escape import terminal_text

        print(
            terminal_text(
                f"auditor: warning: state file {store.path} was last synced from {before}, this "
                f"sync is from {now}: if this is not the same service moved, its data is mixed "
                "with the other's in this store"
            ),
            file=ctx.stderr,
        )


def _address(url: str) -> str:
    """A service address as compared and shown: scheme, host, port and path, without user
    info, query, fragment or a trailing `/`."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable address)"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


def _token_named(exc: AuditorError, redactor: Redactor, tokens: Iterable[str]) -> None:
    """The command's own token (and its proxy's password) in a sync error (a server echoing
    it in a 401 body) reads `[token]`, as in any other error, not as its marker: a
    fingerprint and length of the caller's token have no place in an error, the reports or
    findings.json."""
    from auditor.redact.shown import markers_named

    if exc.args and isinstance(exc.args[0], str):
        exc.args = (markers_named(exc.args[0], redactor, tokens), *exc.args[1:])


def _encrypted_or_local(url: str) -> bool:
    """True for an https:// address, or an http:// one on this machine (the emulator's)."""
    parts = urlsplit(url)
    if parts.scheme != "http":
        return True
    host = (parts.hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1
    return address.is_loopback


def parse_at(text: str | None, now: datetime) -> datetime | None:
    """`--at DATE` (a date alone means its end), refused when it lies in the future; today's
    date alone (its end is still to come) is refused saying how to ask for now: an as-of-now
    run is a run without `--at` (which judges the newest revision, whatever its time)."""
    at = parse_when(text, "--at", end_of_day=True) if text else None
    if at and text and parse_when(text, "--at", end_of_day=False) <= now < at:  # today, alone
        raise UsageError(
            f"--at {text} is today, whose end ({at.isoformat()}) is still to come: leave --at "
            f"out for a run as of now, or give a time (--at {now:%Y-%m-%dT%H:%M:%SZ})"
        )
    if at and at > now:
        raise UsageError(f"--at {at.isoformat()} is in the future")
    return at


def check_at(store: Store, at: datetime | None) -> None:
    """`--at` before the first stored revision: one clear error, not a list of rules that
    could not be evaluated (nothing was in force then)."""
    if at is None or store.revision_at(at) is not None:
        return
    numbers = store.revision_numbers()
    first = store.get_revision(numbers[0]) if numbers else None
    if first is not None:
        raise UsageError(
            f"--at {at.isoformat()} is before the first stored settings revision "
            f"(rev {first.revision}, {first.updated_at.isoformat()}): nothing to audit"
        )
