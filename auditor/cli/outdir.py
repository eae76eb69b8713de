"""What a run leaves in its report folder: no findings.sarif that claims less than the audit of
its scope would (code scanning closes every alert a new analysis of its category leaves out).

An interrupted run, or one that evaluated no settings revision (a first sync that failed, an
empty state file), writes its other reports, marked incomplete, but no SARIF, and removes the
one an earlier run left in the folder.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.common.files import UnreadableFile, keep_mode, read_input
from auditor.common.jsonutil import loads
from auditor.common.lazyre import lazy_regex
from auditor.errors import ReportError, UsageError
from auditor.redact.shown import printed_path
from auditor.report import OUTPUTS, prepare_out_dir
from auditor.report.model import BUNDLE_MANIFEST, BUNDLE_MANIFEST_MAX_BYTES, ORGS_SUMMARY
from auditor.store.database import first_missing, ignore_made_folders

if TYPE_CHECKING:
    from typing import BinaryIO

    from auditor.cli import Context
    from auditor.report.model import ReportData

SARIF = OUTPUTS["sarif"]
PDF = OUTPUTS["pdf"]

#: Why an interrupted run writes no SARIF (a note of the reports' incomplete banner about the
#: run's outputs, `ReportData.output_notes`, never counted as an item not evaluated).
INTERRUPTED_SARIF = (
    "findings.sarif not written: the evaluation did not finish, and a SARIF without its "
    "results would close the open code-scanning alerts"
)
#: Why a run that evaluated no settings revision writes no SARIF.
NO_SCOPE_SARIF = (
    "findings.sarif not written: no settings revision was evaluated, and a SARIF without "
    "their results would close the open code-scanning alerts"
)


def sarif_withheld(data: ReportData) -> str | None:
    """Why this run's data must not become a SARIF file (None: it may)."""
    if data.complete or data.mode != "run":
        return None
    if data.scope is None or data.scope.period_end is None:  # no settings revision evaluated
        return NO_SCOPE_SARIF
    return None


def without_sarif(
    data: ReportData,
    outputs: tuple[str, ...],
    out_dir: Path,
    why: str,
    *,
    own: bool = False,
    removed: bool = False,
) -> tuple[ReportData, tuple[str, ...], str]:
    """The data (the reason added to its output notes, which its incomplete banner lists) and
    outputs without the SARIF,
    and the line to say on stderr once the other reports are written; an earlier run's
    findings.sarif in `out_dir` is removed (only one auditor wrote: not a folder, not another
    tool's file, never what a symlink points to); `own`: the one there is this run's (it was
    interrupted after writing it: an earlier run's went when this one began); `removed`: it
    was removed already (and is said to be)."""
    path = out_dir / SARIF
    existed = removed or _written_by_auditor(path, _SIGNATURES[SARIF])
    if existed:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise ReportError(f"cannot remove the earlier {path}: {exc.strerror or exc}") from None
    whose = "this run's" if own else "the earlier"
    said = f" (removed {whose} {path})" if existed else ""
    line = f"auditor: {why}{said}" if "sarif" in outputs or existed else ""
    data = replace(data, output_notes=(*data.output_notes, why))
    return data, tuple(o for o in outputs if o != "sarif"), line


@contextmanager
def report_dir(given: Path | None, base: Path, name: str) -> Iterator[Path]:
    """The report folder: `given` (`--out`) as it is, else a new folder `base/name`, or
    `name-2`, `-3` … when that name is taken, made here by `mkdir`, which fails on a name that
    exists: two commands started in the same second in one working folder each make their
    own (choosing a name that did not exist and making it later let both choose it, and the
    second was refused, exit 2, as the first held it). If the block fails leaving the folder
    empty, it goes again, with the folders made on the way to it (`reports/`): a command that
    fails before it writes a report leaves no folder, as when `hold_out_dir` made it."""
    if given is not None:
        yield given
        return
    folder, made = _new_folder(base, name)
    try:
        yield folder
    except BaseException:
        remove_made(folder, made)
        raise


def remove_made(folder: Path, made: Path | None) -> None:
    """After a command that failed: remove the report folder and each folder made on the way
    to it, up to `made` (the outermost this command made, `first_missing`; None: none), each
    only if empty, so what was written in one, by this command or another, stays, and a
    folder that was there before is never removed (`report_dir`, `hold_out_dir`; a `--out
    new/x` left `new/`: review R56 F2). Both are taken with symlinks and `..` resolved, as
    `hold_out_dir` decides what it made (`--out new/../had` removed `had/`: review R65
    LOW-2). A parent another auditor command holds as its report folder stays (it made it
    its own before writing into it: a third command was not refused, review R65 MED-2)."""
    if made is None:
        return
    here, made = Path(os.path.realpath(folder)), Path(os.path.realpath(made))
    for each in (here, *here.parents):
        if made not in (each, *each.parents):  # (a folder that was there before)
            return
        try:
            if each == here:  # (this command's own, held by it)
                each.rmdir()
            elif not _remove_unheld(each):
                return
        except OSError:  # not empty (or gone): the folders around it stay too
            return


def _remove_unheld(folder: Path) -> bool:
    """Remove the empty `folder` unless another auditor command holds it (`_hold`), holding it
    while it does so that none takes it meanwhile; gives whether it went."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            # (a file system without flock: no command holds it)
        os.rmdir(folder)
        return True
    finally:
        os.close(fd)


def _new_folder(base: Path, name: str) -> tuple[Path, Path]:
    """`base/name` (or `name-N`) made, and the outermost folder made for it (it, or a parent:
    `base` is made when missing, again if a command that failed removed it meanwhile). An
    unusable one is a ReportError, worded as `prepare_out_dir`'s."""
    folder, n = base / name, 1
    made: Path | None = None
    while True:
        try:
            os.mkdir(folder)
        except FileExistsError:  # another run's folder (or a file of that name): the next name
            n += 1
            folder = base / f"{name}-{n}"
            continue
        except FileNotFoundError:
            made = made or first_missing(base)
            try:
                base.mkdir(parents=True, exist_ok=True)
                continue
            except OSError as exc:
                error = exc
        except OSError as exc:  # (not a folder, no permission, a name too long …)
            error = exc
        else:
            made = made or folder
            ignore_made_folders(made, folder)
            return folder, made
        raise ReportError(
            f"cannot use {folder} as the report folder: {error.strerror or error}"
        ) from None


@contextmanager
def hold_out_dir(out_dir: Path, *, remove_if_failed: bool = False) -> Iterator[Path | None]:
    """Create the report folder (`prepare_out_dir`: an unusable one is a ReportError) and hold
    it until the block ends: an exclusive `flock` on the folder itself (no file is added to
    it, whose content CI uploads), so a second auditor command writing reports into the same
    folder is refused at once (ReportError, exit 2) instead of leaving a folder that mixes two
    runs' reports. `run --orgs` holds its folder and each organization's worker its own
    subfolder: none waits for another. Yields the outermost folder this command made for it
    (the folder or a parent; None: it was there); with `remove_if_failed`, the folders it made
    are removed again if the block fails and left them empty (`remove_made`). Where the folder
    cannot be opened (no read permission) or the file system has no `flock`, it is used
    unheld, as before."""
    # resolved: `new/../had` makes `new/`, not `had/` (no OSError on a name too long: prepare
    # says it)
    made = first_missing(Path(os.path.realpath(out_dir)))
    prepare_out_dir(out_dir)
    fd = _hold(out_dir)
    try:
        yield made
    except BaseException:
        if remove_if_failed:
            remove_made(out_dir, made)
        raise
    finally:
        if fd is not None:
            os.close(fd)  # and with it, the lock


def _hold(out_dir: Path) -> int | None:
    try:
        fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise ReportError(
                f"report folder {out_dir} is being written by another auditor command: wait "
                "for it to finish, or give this one another --out"
            ) from None
        return None  # ENOLCK, EOPNOTSUPP: a file system without flock
    return fd


def say(line: str, ctx: Context) -> None:
    """`line` on stderr, if any."""
    if line:
        print(line, file=ctx.stderr)


#: What the first few KB of each report file hold when auditor wrote it (report.pdf is told
#: by its document information instead, `_pdf_by_auditor`).
_HEADS = {
    "report.html": re.compile(rb"\A<!DOCTYPE html>\n.*?<title>Compliance report ", re.S),
    "report.md": re.compile(
        rb"\A(?:## Compliance run [^\n]*\n\nauditor "
        rb"|<!-- auditor-review -->\n## Pre-change review: )"
    ),
    "findings.json": re.compile(
        rb'\A\{\s*"schema_version":\s*"[^"]*",\s*"tool":\s*\{\s*"name":\s*"auditor"'
    ),
    "findings.sarif": re.compile(
        rb'\A\{\s*"\$schema":\s*"[^"]*sarif[^"]*",\s*"version":\s*"2\.1\.0",\s*"runs":\s*\[\s*\{'
        rb'\s*"tool":\s*\{\s*"driver":\s*\{\s*"name":\s*"auditor"'
    ),
    "junit.xml": re.compile(rb'\A<\?xml [^>]*\?>\n<testsuites name="auditor '),
    "findings.oscal.json": re.compile(
        rb'\A\{\s*"assessment-results":.*?"name":\s*"tool",\s*"ns":\s*"[^"]*/ns/oscal",'
        rb'\s*"value":\s*"auditor ',
        re.S,
    ),
}


def _pdf_by_auditor(path: Path) -> bool:
    """`path` is a PDF whose document information is what auditor's report.pdf has: made by
    WeasyPrint, titled `Compliance report RUN-ID` (the title of the page it renders). Its first
    bytes are those of any PDF, so the information dictionary is found through the file's
    cross-reference (a table or, as WeasyPrint writes it, a stream; the dictionary itself in an
    object stream); anything else, or anything out of shape, is not auditor's."""
    try:
        with path.open("rb") as f:
            if f.read(5) != b"%PDF-":
                return False
            info = _pdf_info(f)
    except (OSError, ValueError, IndexError, zlib.error, OverflowError, MemoryError):
        return False
    return info is not None and _PDF_INFO.match(info) is not None


#: auditor's report.pdf's information dictionary (the order pydyf writes its keys in).
_PDF_INFO = lazy_regex(
    globals(),
    "_PDF_INFO",
    rb"<<\s*/Producer\s*\(WeasyPrint [^)]*\)\s*/Title\s*\(Compliance report ",
)
_PDF_TAIL = 4096  # the file's end read for `startxref` and a table's trailer
_PDF_HEAD = 4096  # the most bytes read of an object's dictionary
_PDF_STREAM = 1 << 24  # the most bytes of a stream's data read (its `/Length` may say more)
_PDF_INFLATED = 1 << 25  # the most bytes an object stream is inflated to
_PDF_SECTIONS = 4096  # the most subsections of a cross-reference table walked


def _pdf_info(f: BinaryIO) -> bytes | None:
    """The text of the PDF's information dictionary (None if it has none). Reads a bounded
    number of bytes (the last `_PDF_TAIL`, each object's first `_PDF_HEAD`, a stream's data
    up to `_PDF_STREAM`), and each pattern is matched at one place: a crafted file is
    refused as fast as read."""
    end = f.seek(0, 2)
    f.seek(max(0, end - _PDF_TAIL))
    tail = f.read()
    found = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*\Z", tail)
    if found is None:
        return None
    offset = int(found.group(1))
    if _pdf_read(f, offset, 4) == b"xref":  # a table: the trailer names the dictionary
        at = tail.rfind(b"trailer", 0, found.start())
        trailer = re.compile(rb"trailer\s*(<<.*?>>)\s*startxref", re.S).match(tail, max(at, 0))
        info = trailer and re.search(rb"/Info\s+(\d+)\s+0\s+R", trailer.group(1))
        if at < 0 or not trailer or not info:
            return None
        row = _pdf_table_row(f, offset + 4, int(info.group(1)))
        return None if row is None else _pdf_object(f, row, int(info.group(1)))
    xref, body = _pdf_stream(f, int(found.group(1)))
    info = re.search(rb"/Info\s+(\d+)\s+0\s+R", xref)
    widths = re.search(rb"/W\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s*\]", xref)
    if not info or not widths:
        return None
    w = [int(g) for g in widths.groups()]
    index = re.search(rb"/Index\s*\[([\d\s]*)\]", xref)
    bounds = [int(n) for n in index.group(1).split()] if index else [0, 1 << 62]
    number = int(info.group(1))
    entry = _pdf_row(body, bounds, w, number)
    if entry is not None and entry[0] == 1:
        return _pdf_object(f, entry[1], number)
    if entry is None or entry[0] != 2:
        return None
    # in an object stream: the stream's own offset, then the object in it
    stream = _pdf_row(body, bounds, w, entry[1])
    if stream is None or stream[0] != 1:
        return None
    header, objects = _pdf_stream(f, stream[1])
    first_at = re.search(rb"/First\s+(\d+)", header)
    if not first_at:
        return None
    first, position = int(first_at.group(1)), entry[2]
    # Only the pairs up to the object's and the next one's are split and read: a stream whose
    # `/First` spans millions of pairs (a small zlib bomb) costs no more than its inflating.
    wanted = 2 * position + 4
    pairs = objects[:first].split(maxsplit=wanted)[:wanted]
    numbers, offsets = [int(n) for n in pairs[::2]], [int(n) for n in pairs[1::2]]
    if position >= len(offsets) or numbers[position] != number:
        return None
    stop = first + offsets[position + 1] if position + 1 < len(offsets) else None
    return objects[first + offsets[position] : stop]


def _pdf_row(body: bytes, bounds: list[int], w: list[int], number: int) -> list[int] | None:
    """Object `number`'s row of a cross-reference stream (kind, then two fields: 1, offset;
    2, object stream, position in it), None when the stream has none."""
    at = 0
    for first, count in zip(bounds[::2], bounds[1::2], strict=False):
        if first <= number < first + count:
            start = at + (number - first) * sum(w)
            data = body[start : start + sum(w)]
            if len(data) < sum(w):
                return None
            ends = [w[0], w[0] + w[1], sum(w)]
            row = [int.from_bytes(data[e - n : e], "big") for n, e in zip(w, ends, strict=True)]
            return row if w[0] else [1, *row[1:]]
        at += count * sum(w)
    return None


def _pdf_read(f: BinaryIO, offset: int, size: int = _PDF_HEAD) -> bytes:
    f.seek(offset)
    return f.read(size)


def _pdf_table_row(f: BinaryIO, at: int, number: int) -> int | None:
    """The offset object `number` has in the cross-reference table whose subsections start
    at `at` (after `xref`): each subsection's header line is read, and its rows skipped
    unless they hold the object, whose 20-byte row alone is read."""
    header = re.compile(rb"\s*(\d{1,10}) (\d{1,10})[ \t]*\r?\n")
    for _ in range(_PDF_SECTIONS):
        line = header.match(_pdf_read(f, at, 64))
        if line is None:
            return None
        first, count = int(line.group(1)), int(line.group(2))
        at += line.end()
        if first <= number < first + count:
            row = _pdf_read(f, at + (number - first) * 20, 20)
            return int(row[:10]) if re.fullmatch(rb"\d{10} \d{5} n(?: \r|\r\n| \n)", row) else None
        at += count * 20
    return None


def _pdf_object(f: BinaryIO, offset: int, number: int) -> bytes | None:
    """The text of object `number`, a dictionary written at `offset`."""
    found = re.match(rb"\s*%d\s+0\s+obj\s*(<<.*?>>)" % number, _pdf_read(f, offset), re.S)
    return found.group(1) if found else None


def _pdf_stream(f: BinaryIO, offset: int) -> tuple[bytes, bytes]:
    """The dictionary and the inflated data of the stream object at `offset`."""
    head = _pdf_read(f, offset)
    found = re.match(rb"\s*\d+\s+\d+\s+obj\s*(<<.*?>>)\s*stream\r?\n", head, re.S)
    if found is None:
        raise ValueError("no stream")
    length = re.search(rb"/Length\s+(\d+)(?!\s+\d+\s+R)", found.group(1))
    if length is None:
        raise ValueError("no length")
    size = int(length.group(1))
    if size > _PDF_STREAM:
        raise ValueError("stream too long")
    f.seek(offset + found.end())
    data = f.read(size)
    if b"/FlateDecode" in found.group(1):
        inflate = zlib.decompressobj()
        data = inflate.decompress(data, _PDF_INFLATED)
    return found.group(1), data


#: The files a run or review can write into its report folder (every `--output`, from
#: `auditor.report.OUTPUTS`, the one list of them), each with how auditor's own is recognised:
#: a KeyError here on import when an output is added without a way to recognise it.
_SIGNATURES: dict[str, re.Pattern[bytes] | Callable[[Path], bool]] = {
    name: _HEADS[name] if name != PDF else _pdf_by_auditor for name in OUTPUTS.values()
}
_ORGS_SUMMARY_SIGNATURE = re.compile(
    rb'\A\{\s*"exit_code":\s*-?\d+,\s*"organizations":\s*\[.*"reason":', re.S
)
_HEAD = 4096  # bytes read to recognise a file


def clear_old_reports(out_dir: Path, *, orgs: bool = False) -> None:
    """Remove the reports an earlier run left in `out_dir` (`--out`), once the command's own
    checks have passed, so a folder never holds yesterday's reports beside (or instead of)
    today's. Only files auditor wrote go, recognised by their content (a pytest junit.xml or a
    hand-written report.md of the same name stays; and with `orgs`, the summary.json of
    `run --orgs`); never a folder, never what a symlink points to (the link goes when what it
    points to is auditor's report). An evidence bundle's folder is refused: removing its files
    would break its manifest."""
    try:
        if not out_dir.is_dir():
            return
    except OSError:  # e.g. a name too long: said where the folder is made (prepare_out_dir)
        return
    if _in_bundle(out_dir):
        raise ReportError(
            f"cannot use {out_dir} as the report folder: it belongs to an evidence bundle "
            "(manifest.json); choose another --out"
        )
    # (a mode kept by an earlier clearing stays: `run --orgs` clears every organization's
    # folder before any starts, and each worker clears its own again, finding nothing; every
    # command forgets the modes it kept when it ends, `run_command`)
    signatures = dict(_SIGNATURES)
    if orgs:
        signatures[ORGS_SUMMARY] = _ORGS_SUMMARY_SIGNATURE
    for name, signature in signatures.items():
        path = out_dir / name
        if not _written_by_auditor(path, signature):
            continue
        keep_mode(path)  # today's report gets the mode the user gave yesterday's
        try:
            path.unlink(missing_ok=True)  # a symlink: the link itself, never its target
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ReportError(f"cannot remove the earlier report {path}: {reason}") from None
    _remove_stale_temporaries(out_dir, signatures)


def report_files(out_dir: Path, orgs: Iterable[str] = ()) -> dict[Path, frozenset[str]]:
    """The files a command that writes reports into `out_dir` writes or clears there, by
    folder: every report's name (and its temporary files, `_TEMPORARY`); with `orgs`, the
    organizations of `run --orgs`, the summary.json in `out_dir` and every report in each one's
    `<out_dir>/<name>/`."""
    names = frozenset(_SIGNATURES)
    orgs = tuple(orgs)
    files = {out_dir: names | {ORGS_SUMMARY} if orgs else names}
    files.update((out_dir / name, names) for name in orgs)
    return files


#: Beside an SQLite state file: its lock (`<file>.lock`) and SQLite's own files.
STATE_COMPANIONS = ("", ".lock", "-journal", "-wal", "-shm")


def refuse_inputs_in_out(
    writes: Mapping[Path, Collection[str]],
    inputs: Iterable[tuple[str, Path]],
    *,
    cwd: Path,
    tokens: Iterable[str] = (),
) -> None:
    """A UsageError, before any input is read or anything is written, when an input file of
    the command (`inputs`: what it is, `--policy`, and its path) is, or leads through a
    symlink to, a file the command writes or clears in its report folder (`writes`,
    `report_files`): `--out out` with a proposed `out/findings.json`, a policy `out/report.md`
    or `--state out/report.html` read the input, then replaced it with a report (the state
    file's whole history with HTML). The line names both paths."""
    folders = {
        os.path.realpath(cwd / folder): (folder, frozenset(names))
        for folder, names in writes.items()
    }
    tokens = tuple(tokens)
    for what, path in inputs:
        for at, name in enumerate(_names_of(cwd / path)):
            found = _written_as(name, folders)
            if found is None:
                continue
            folder, report = found
            given = printed_path(_relative(cwd / path, cwd), tokens)
            written = printed_path(_relative(folder / report, cwd), tokens)
            how = f"is {printed_path(report, tokens)}" if at == 0 else f"is a symlink to {written}"
            shown = printed_path(_relative(folder, cwd), tokens)
            raise UsageError(
                f"{what} {given} {how}, a file this command writes in its report "
                f"folder {shown}: the input would be replaced by a report; give --out another "
                "folder, or move the file"
            )


def _relative(path: Path, cwd: Path) -> Path:
    """`path` from the working folder when it lies there (as typed, mostly), else as it is."""
    try:
        return path.relative_to(cwd)
    except ValueError:
        return path


def _names_of(path: Path) -> list[str]:
    """Every name the file at `path` goes by on the way to it, each with its folder's
    symlinks resolved: the path itself, every symlink it leads through, the file at the end
    (a link `p.yaml` to `out/report.md`, a link `out/report.md` to the real file: both are
    replaced, or the link is, by the report of that name)."""
    names: list[str] = []
    current = os.fspath(path)
    for _ in range(64):  # (a loop: refused by the opener, naming it)
        here = os.path.join(os.path.realpath(os.path.dirname(current)), os.path.basename(current))
        if here in names:
            break
        names.append(here)
        try:
            target = os.readlink(here)
        except OSError:  # not a link (or missing): the end
            break
        current = os.path.join(os.path.dirname(here), target)
    real = os.path.realpath(path)
    return names if real in names else [*names, real]


def _written_as(
    name: str, folders: Mapping[str, tuple[Path, frozenset[str]]]
) -> tuple[Path, str] | None:
    """The folder (as given) and the file that the command writes or clears at `name` (a
    real folder and a file name), None when it writes none there. On a file system that
    ignores case (macOS, Windows), `Report.md` is report.md when both are the same file."""
    real_folder, base = os.path.split(name)
    if real_folder not in folders:
        return None
    folder, names = folders[real_folder]
    temporary = _TEMPORARY.match(base)
    if base in names:
        return folder, base
    if temporary is not None and temporary.group(1) in names:
        return folder, base
    for written in names:
        if written.casefold() == base.casefold():
            with suppress(OSError):
                if os.path.samestat(os.lstat(name), os.lstat(os.path.join(real_folder, written))):
                    return folder, written
    return None


def _remove_stale_temporaries(out_dir: Path, names: Collection[str]) -> None:
    """The hidden temporary files a report's atomic write leaves when the process is killed
    (`kill -9`, the OOM killer) while writing it, `.report.html.1a2b_c3d.tmp`: no later run
    removed them, and CI uploaded them with the reports. The folder is held (`hold_out_dir`):
    no other auditor command is writing one. Only regular files named as auditor's temporary
    files of its reports go."""
    try:
        entries = list(os.scandir(out_dir))
    except OSError:
        return
    for entry in entries:
        found = _TEMPORARY.match(entry.name)
        if found is None or found.group(1) not in names:
            continue
        with suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)


#: `tempfile.mkstemp(prefix=".NAME.", suffix=".tmp")`, as `auditor.common.files.atomic_open`
#: names a file it writes NAME through (eight of `[a-z0-9_]`).
_TEMPORARY = lazy_regex(globals(), "_TEMPORARY", r"\A\.(.+)\.[a-z0-9_]{8}\.tmp\Z")


def remove_reports(out_dir: Path, *, keep: tuple[str, ...] = ()) -> set[str]:
    """Remove the reports auditor wrote in `out_dir` (this run's, once it has cleared the
    folder), but those named in `keep`, each keeping its mode for the one written next; the
    names removed (one that cannot be removed stays)."""
    removed = set()
    for name, signature in _SIGNATURES.items():
        path = out_dir / name
        if name in keep or not _written_by_auditor(path, signature):
            continue
        keep_mode(path)
        with suppress(OSError):
            path.unlink(missing_ok=True)
            removed.add(name)
    return removed


def reports_in(out_dir: Path) -> list[str]:
    """The names of the reports auditor wrote that are in `out_dir`."""
    return [
        n for n, signature in _SIGNATURES.items() if _written_by_auditor(out_dir / n, signature)
    ]


def _written_by_auditor(path: Path, signature: re.Pattern[bytes] | Callable[[Path], bool]) -> bool:
    """`path` is a file (or a link to one) whose first KB are what auditor writes there (or
    that `signature`, a function, recognises)."""
    try:
        if not path.is_file():  # missing, a folder, a dangling link, a device …
            return False
        if not isinstance(signature, re.Pattern):
            return signature(path)
        with path.open("rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return False
    return signature.match(head) is not None


def _in_bundle(out_dir: Path) -> bool:
    """`out_dir` is an evidence bundle (`auditor export`) or a folder in one (its `reports/`),
    once symlinks are resolved (a link to a bundle's folder is that folder)."""
    try:
        real = out_dir.resolve()
    except (OSError, RuntimeError):  # a symlink loop: the folder cannot be used anyway
        real = out_dir.absolute()
    for manifest in (real / BUNDLE_MANIFEST, real.parent / BUNDLE_MANIFEST):
        try:  # a regular file under the cap (a FIFO named manifest.json waited for a writer)
            value = loads(read_input(manifest, max_bytes=BUNDLE_MANIFEST_MAX_BYTES))
        except (UnreadableFile, ValueError):
            continue
        if isinstance(value, dict) and value.get("tool") == "auditor" and "files" in value:
            return True
    return False
