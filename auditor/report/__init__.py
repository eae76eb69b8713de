"""Reports: findings rendered for people (HTML, Markdown) and machines (JSON, SARIF, JUnit).

Takes one `ReportData`, gives five files in one folder (on request also `findings.oscal.json`,
OSCAL assessment results, and `report.pdf`, the HTML rendered by WeasyPrint). Same input,
byte-identical files: every renderer sorts its output and reads the time only from
`ReportData.generated_at`.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from auditor.common.files import atomic_open, write_atomic
from auditor.errors import ReportError
from auditor.report.html import iter_html, render_html
from auditor.report.jsonout import json_chunks, render_json
from auditor.report.junit import junit_chunks, render_junit
from auditor.report.markdown import render_markdown
from auditor.report.model import ReportData, shared_order
from auditor.report.pdf import PDF_CAPS, render_pdf
from auditor.report.sarif import gzip_size, render_sarif, sarif_chunks, write_fitted
from auditor.store.database import first_missing, ignore_made_folders

__all__ = [
    "DEFAULT_OUTPUTS",
    "OUTPUTS",
    "REPORT_FILES",
    "ReportData",
    "gc_paused",
    "parse_outputs",
    "prepare_out_dir",
    "render_html",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_sarif",
    "write_reports",
]


def render_oscal(data: ReportData) -> str:
    """findings.oscal.json as text (`auditor.report.oscal`, imported on request: the nightly's
    default reports do not include it, and it took 10 ms to import)."""
    from auditor.report.oscal import render_oscal as render

    return render(data)


def oscal_chunks(data: ReportData, *, ascii_only: bool = False) -> Iterator[bytes]:
    """findings.oscal.json in pieces (`auditor.report.oscal`, imported on request)."""
    from auditor.report.oscal import oscal_chunks as chunks

    return chunks(data, ascii_only=ascii_only)


#: File name → renderer, in the order they are written.
REPORT_FILES: dict[str, Callable[[ReportData], str]] = {
    "report.html": render_html,
    "report.md": render_markdown,
    "findings.json": render_json,
    "findings.sarif": render_sarif,
    "junit.xml": render_junit,
    "findings.oscal.json": render_oscal,
}


#: `--output` name → file name, in the order of REPORT_FILES.
OUTPUTS: dict[str, str] = {
    "html": "report.html",
    "md": "report.md",
    "json": "findings.json",
    "sarif": "findings.sarif",
    "junit": "junit.xml",
    "oscal": "findings.oscal.json",
    "pdf": "report.pdf",
}

#: What `--output` writes when not given: the five reports (OSCAL and PDF on request).
DEFAULT_OUTPUTS: tuple[str, ...] = ("html", "md", "json", "sarif", "junit")


def parse_outputs(text: str) -> tuple[str, ...]:
    """`html,sarif` as output names in the order they are written; ValueError naming the valid
    ones for an unknown or empty list."""
    typed = [n.strip() for n in text.split(",") if n.strip()]
    names = [n.lower() for n in typed]
    # quoted as typed: a token pasted there is then recognised and hidden by the error's caller
    unknown = [n for n in typed if n.lower() not in OUTPUTS]
    if unknown or not names:
        what = f"unknown output {', '.join(map(repr, unknown))}" if unknown else "no output named"
        raise ValueError(f"{what}; choose from {','.join(OUTPUTS)} (comma-separated)")
    return tuple(n for n in OUTPUTS if n in names)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: rendering allocates millions of short-lived,
    acyclic objects, and collections triggered by them cost about a third of the time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def write_reports(
    data: ReportData,
    out_dir: Path,
    outputs: Collection[str] = DEFAULT_OUTPUTS,
) -> dict[str, Path]:
    """Render the chosen reports (by `OUTPUTS` name; the five by default) into `out_dir`
    (created if needed); returns file name → path. Each keeps the mode kept of the report
    cleared there first; the command that cleared them forgets those modes when it ends
    (`modes_forgotten_after`), so a report it writes again (marked incomplete, after a full
    disk, an interrupt or a run that could not be recorded) keeps its predecessor's mode too.

    An unwritable folder is a `ReportError` naming it (exit 2), never a traceback."""
    prepare_out_dir(out_dir)
    chosen = {OUTPUTS[n] for n in outputs}
    written: dict[str, Path] = {}
    with shared_order(data):  # the findings sorted once for every report that sorts them
        for name, render in REPORT_FILES.items():
            if name not in chosen:
                continue
            path = out_dir / name
            try:
                with gc_paused():
                    _write(path, name, render, data)
            except OSError as exc:
                raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
            written[name] = path
        if "pdf" in outputs:
            written["report.pdf"] = _write_pdf(data, out_dir / "report.pdf")
    return written


def _write_pdf(data: ReportData, path: Path) -> Path:
    """report.pdf: the page written with the PDF's caps, rendered by WeasyPrint."""
    with gc_paused():  # WeasyPrint with the collector on: the same peak (-2 %), 2 % more time
        pdf = render_pdf(render_html(data, PDF_CAPS))
    try:
        write_atomic(path, pdf)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


#: File name → a renderer giving the text in pieces, so a large report is never held whole.
#: Each takes `ascii_only` (orjson refuses lone surrogates: `json` then writes the file anew).
#: The JSON files' and junit.xml's pieces are UTF-8 bytes (`BINARY`), the others' text.
STREAMED: dict[str, Callable[..., Iterator[str] | Iterator[bytes]]] = {
    "report.html": lambda data, ascii_only=False: iter_html(data),
    "findings.json": json_chunks,
    "junit.xml": lambda data, ascii_only=False: junit_chunks(data),
    "findings.oscal.json": oscal_chunks,
}
BINARY = frozenset({"findings.json", "findings.oscal.json", "findings.sarif", "junit.xml"})


def _write(path: Path, name: str, render: Callable[[ReportData], str], data: ReportData) -> None:
    if name == "findings.sarif":
        _write_sarif(path, data)
        return
    stream = STREAMED.get(name)
    if stream is None:
        write_atomic(path, render(data))
        return
    _write_stream(path, stream, data, binary=name in BINARY)


def _write_stream(
    path: Path, stream: Callable[..., Iterator[Any]], data: ReportData, *, binary: bool = False
) -> None:
    try:
        _write_chunks(path, stream(data), binary)
    except orjson.JSONEncodeError:
        _write_chunks(path, stream(data, ascii_only=True), binary)


def _write_chunks(path: Path, chunks: Iterator[Any], binary: bool) -> None:
    if not binary:
        write_atomic(path, chunks)
        return
    with atomic_open(path, binary=True) as fh:
        fh.writelines(chunks)


def _write_sarif(path: Path, data: ReportData) -> None:
    """findings.sarif streamed to `path`, kept within code scanning's upload limit by the loop
    `render_sarif` uses (`sarif.write_fitted`), so the file and the text are the same bytes."""

    def write(max_results: int) -> tuple[int, Callable[[], int]]:
        chunks = functools.partial(sarif_chunks, max_results=max_results)
        _write_stream(path, chunks, data, binary=True)
        return path.stat().st_size, functools.partial(gzip_size, path)

    write_fitted(write, data)


def prepare_out_dir(out_dir: Path) -> None:
    """Create the report folder, or say why it cannot be used (checked before a run starts).
    A `.auditor/` made on the way gets a `.gitignore` (`database.ignore_made_folders`: the
    pre-commit hook's `.auditor/pre-commit-review/`); another report folder gets no file."""
    made = first_missing(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        ignore_made_folders(made, out_dir)
    except OSError as exc:
        # os.path: Path.is_file raises on a name too long for the file system (ENAMETOOLONG)
        reason = "it is a file" if os.path.isfile(out_dir) else (exc.strerror or str(exc))
        raise ReportError(f"cannot use {out_dir} as the report folder: {reason}") from None
