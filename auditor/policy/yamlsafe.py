"""Safe YAML for policy and waiver files: plain data out, `file:line:col` on every refusal.

Takes a path, gives a `YamlDocument` (plain dict/list/scalars, sha256, positions on demand).
A cheap pass over the C parser's events refuses what a policy file has no business containing
(anchors/aliases, non-core tags, several documents, deep nesting, duplicate keys) before the
C safe loader builds objects (`yamlparse`, imported only when a file is parsed). Positions are
only computed when asked for (`locate`), by composing the node tree once; ruamel's 0-based
marks become 1-based in `location` alone.

A shipped file (a policy pack, the readiness model) is not parsed again: the build parsed
each one and recorded, by the sha256 of its bytes, what parsing gives (`SHIPPED_YAML`). A file
whose bytes hash to a recorded digest gets that data, wherever it lives; any other byte read
is parsed as above. The record is package data, as trusted as the code beside it, and is
never written at run time.
"""

from __future__ import annotations

import bisect
import difflib
import functools
import hashlib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from auditor.common.files import UnreadableFile, byte_position, read_input
from auditor.errors import PolicyError
from auditor.models import SourceLocation

if TYPE_CHECKING:
    from auditor.policy.yamlparse import Tree

#: The most digits an integer written in an input file may have (Python reads no longer one).
MAX_DIGITS = sys.get_int_max_str_digits() or 4300

#: The most values (scalars, mapping keys included, sequences, mappings) one file may hold:
#: the largest shipped file, policies/baseline.yaml, has 1,879; building objects costs about
#: 50 µs a value (a 16 MB settings file of 7.9 million zeros took 261 s and 5.9 GB before
#: this limit).
MAX_NODES = 100_000
#: The most bytes one YAML or JSON input file may hold.
MAX_BYTES = 1_000_000
_MAX_DEPTH = 64

#: What the build recorded of the shipped YAML files, by the sha256 of their bytes: the data
#: parsing gives, the positions of the values two levels deep (a rule's, an enum's), and
#: whether a policy file passed the policy schema (`policy.shipped` writes it; a test checks
#: it matches the shipped files and what parsing them gives now).
SHIPPED_YAML = Path(__file__).resolve().parents[1] / "data" / "shipped-yaml.json"


#: What YAML 1.1 reads as a line break beside `\n` and `\r`, as the C parser (libyaml) does,
#: by name: no editor starts a line at one.
YAML11_BREAKS = {"\x85": "next line", "\u2028": "line separator", "\u2029": "paragraph separator"}
_LINE_END = re.compile("\r\n?|\n")


def location(file: str, mark: Any, text: str = "") -> SourceLocation:
    """The one place a 0-based ruamel mark becomes a 1-based location. With `text`, the text
    parsed: a C parser's mark is counted again on the text's `\n` (and `\r`) lines where the
    text holds a YAML 1.1 line break (`YAML11_BREAKS`), which the C parser counts as a line
    and no editor, nor any other location, does: each one before a syntax error put it a line
    too low (T92 #3). The pure parser counts lines as an editor does (its marks are kept)."""
    if mark is None:
        return SourceLocation(file, 1, 1)
    if text and yaml11_breaks(text) and getattr(mark, "buffer", None) is None:
        return SourceLocation(file, *text_position(text, mark_index(mark, text)))
    return SourceLocation(file, int(mark.line) + 1, int(mark.column) + 1)


def mark_index(mark: Any, text: str) -> int:
    """The index in `text` of the character a mark points at: the C parser's index leaves out
    a byte-order mark, the pure parser's counts it."""
    pure = getattr(mark, "buffer", None) is not None
    return int(mark.index) + int(not pure and text.startswith("\ufeff"))


@functools.lru_cache(maxsize=2)
def yaml11_breaks(text: str) -> bool:
    """Whether `text` holds a YAML 1.1 line break (`YAML11_BREAKS`). Kept for the few texts
    last asked about: each problem of one file asks."""
    return any(c in text for c in YAML11_BREAKS)


def text_position(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of character `index` of `text` as an editor counts them:
    a line ends at `\n`, `\r\n` or `\r`; a byte-order mark at the start is no column."""
    starts = _line_starts(text)
    line = bisect.bisect_right(starts, index)
    bom = int(line == 1 and index > 0 and text.startswith("\ufeff"))
    return line, index - starts[line - 1] + 1 - bom


@functools.lru_cache(maxsize=2)
def _line_starts(text: str) -> tuple[int, ...]:
    return (0, *(m.end() for m in _LINE_END.finditer(text)))


def problem(loc: SourceLocation, json_path: str, message: str, *, level: str = "error") -> str:
    """Format one problem: `file:line:col: error: $.rules[3].assert: message`."""
    where = f"{json_path}: " if json_path else ""
    return f"{loc}: {level}: {where}{message}"


def suggest(name: str, choices: Iterable[str]) -> str:
    """Return ` (did you mean `x`?)` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def position_key(parts: Sequence[str | int], *, key: bool) -> str:
    """How `SHIPPED_YAML` names a position: the path as JSON (a list index stays a number),
    after `k:` for a key's position, `v:` for a value's."""
    return ("k:" if key else "v:") + orjson.dumps(list(parts)).decode()


@dataclass(frozen=True)
class YamlDocument:
    """A loaded YAML file: plain data plus positions computed on demand."""

    path: str
    data: Any
    sha256: str
    text: str = field(default="", repr=False, compare=False)
    pure: bool = field(default=False, repr=False, compare=False)  # parsed by the pure loader
    #: Positions known without parsing (a shipped file's, from `SHIPPED_YAML`), by
    #: `position_key`: line and column, 1-based.
    positions: Mapping[str, Sequence[int]] = field(default_factory=dict, repr=False, compare=False)
    #: The build found these bytes to be a policy file the policy schema accepts: the digest
    #: of that schema (`schema.schema_digest`), or "" (not checked, or not valid).
    schema_checked: str = field(default="", repr=False, compare=False)
    #: The problem of each value that could not be built (an impossible date, an integer too
    #: long to read), which `data` holds as the text written: only with `load_yaml(…,
    #: unread=True)`, for a reader that checks the rest of the file too (`beside_unread`).
    unread: tuple[str, ...] = field(default=(), repr=False, compare=False)
    _root: list[Tree] = field(default_factory=list, repr=False, compare=False)
    #: Per mapping of `data` a key of which `key_text` was asked about: the mapping, and the
    #: index of each of its keys (by the mapping's id(), the mapping kept with it).
    _key_index: dict[int, tuple[Any, dict[Any, int]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def beside_unread(self, problems: Iterable[str]) -> list[str]:
        """`problems` with those of the values that could not be built, and without another
        at the same place (`2026-02-30` read as text is no calendar date either: said once)."""
        if not self.unread:
            return list(problems)
        places = {_place(p) for p in self.unread}
        return [*self.unread, *(p for p in problems if _place(p) not in places)]

    def _node_tree(self) -> Tree:
        if not self._root:
            from auditor.policy import yamlparse

            self._root.append(yamlparse.Tree(yamlparse.compose(self.text, pure=self.pure)))
        return self._root[0]

    def refuse_typed_keys(self) -> None:
        """PolicyError at the first mapping key that is not text (`1:`, `null:`, `true:`),
        which a settings object cannot hold: it read as the text `"1"`, `"None"`, `"True"`."""
        said = self.typed_key_problem()
        if said is not None:
            raise PolicyError([said])

    def typed_key_problem(self) -> str | None:
        """The problem of the first mapping key that is not text (`1:`, `null:`, `true:`,
        `0x10:`, a date), at the key's own `line:col` and named as written (not as Python's
        `None`, `True`, `16`); None without one."""
        found = _non_text_key(self.data)
        if found is None:
            return None
        *parent, key = found
        from auditor.policy import yamlparse

        loc, written = yamlparse.typed_key(self._node_tree(), self.path, parent)
        shown = written if written is not None else _key_words(key)
        return problem(loc, "", f"key `{shown}` must be text (quote it)")

    def key_text(self, parts: Sequence[str | int], key: Any) -> str:
        """`key`, a key of the mapping at `parts`, as the file writes it: one YAML reads as
        other than text (`true:`, `null:`, `0x10:`, a date) by its own text, not Python's
        (`True`, `None`, `16`), so that a problem names it as written, and `locate` (which
        finds a key by its text) gives its own `line:col`, not its mapping's (T92 #4)."""
        if isinstance(key, str):
            return key
        mapping = self.data
        for part in parts:
            try:
                mapping = mapping[part]
            except (KeyError, IndexError, TypeError):
                return _key_words(key)
        at = self._key_at(mapping, key)
        if at is None:
            return _key_words(key)
        from auditor.policy import yamlparse

        written = yamlparse.key_written(self._node_tree(), parts, at, len(mapping))
        return written if written is not None else _key_words(key)

    def _key_at(self, mapping: Any, key: Any) -> int | None:
        """The index of `key` among the keys of `mapping` (a dict), or None: found in an index
        of them made once per mapping, as a reader asks about each of its keys in turn (a scan
        for each made a mapping of 20,000 keys `1:`, `2:`, … take minutes: review R57 #8)."""
        if not isinstance(mapping, dict):
            return None
        known = self._key_index.get(id(mapping))
        if known is None or known[0] is not mapping or len(known[1]) != len(mapping):
            known = (mapping, {k: n for n, k in enumerate(mapping)})
            self._key_index[id(mapping)] = known
        try:
            return known[1].get(key)
        except TypeError:  # (a key no mapping holds: a list)
            return None

    def written(self, parts: Sequence[str | int]) -> str | None:
        """The scalar at `parts` as the file writes it (`1.10` where the data holds 1.1), or
        None (no such scalar, or no text to read it from)."""
        from auditor.policy import yamlparse

        return yamlparse.written(self._node_tree(), parts)

    def time_text(self, parts: Sequence[str | int], value: date) -> str:
        """An unquoted YAML date or time (`value`, read at `parts`) as the text written, as the
        API sends it: YAML reads `2026-01-01T10:00:00Z` as a date-time, which Python writes
        back as `2026-01-01T10:00:00+00:00`, a text that never equals the API's. A form YAML
        reads as a time but ISO 8601 does not (`2001-12-14 21:59:43.10 -5`) is written in ISO
        form, which time operators such as `within_days` read."""
        written = self.written(parts)  # (without a tag: `!!timestamp 2026-01-01`)
        return written if written and _reads_as(written, value) else value.isoformat()

    def locate(self, parts: Sequence[str | int], *, key: bool = False) -> SourceLocation:
        """1-based position of the value at `parts` (of its key with `key=True`).

        A path that does not exist resolves to its nearest existing ancestor.
        """
        known = self.positions.get(position_key(parts, key=key)) if self.positions else None
        if known is not None:
            return SourceLocation(self.path, known[0], known[1])
        from auditor.policy import yamlparse

        return yamlparse.locate(self._node_tree(), self.path, parts, key=key)


def _place(text: str) -> str:
    """The `file:line:col` a formatted problem starts with (`problem`)."""
    return text.partition(": error: ")[0]


def _reads_as(text: str, value: date) -> bool:
    """`text` is ISO 8601 for `value` (YAML also takes `2001-12-14 21:59:43.10 -5`, which
    no ISO reader, such as a policy's time operators, can read)."""
    try:
        parsed = (datetime if isinstance(value, datetime) else date).fromisoformat(text)
    except ValueError:
        return False
    return parsed == value


def _key_words(key: Any) -> str:
    """A key that is not text as YAML writes it (`null`, `true`), where its text is not known."""
    if key is None:
        return "null"
    return str(key).lower() if isinstance(key, bool) else str(key)


def _non_text_key(value: Any) -> tuple[Any, ...] | None:
    """The path to the first mapping key that is not a string, or None (without recursion: a
    settings file nests up to 64 levels)."""
    pending: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while pending:
        item, at = pending.pop()
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return (*at, key)
            pending.extend((v, (*at, k)) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            pending.extend((v, (*at, i)) for i, v in reversed(list(enumerate(item))))
    return None


class FileReadError(PolicyError):
    """The file could not be read at all (missing, not a regular file, too large)."""

    def __init__(self, file: str, reason: str) -> None:
        super().__init__([problem(SourceLocation(file, 1, 1), "", reason)])
        self.reason = reason


def _read_text(path: Path, max_bytes: int) -> tuple[str, str]:
    file = str(path)
    try:
        raw = read_input(path, max_bytes=max_bytes)
    except UnreadableFile as exc:
        raise FileReadError(file, exc.reason) from None
    try:
        return raw.decode("utf-8"), hashlib.sha256(raw).hexdigest()
    except UnicodeDecodeError as exc:
        line, col = byte_position(raw, exc.start)
        message = f"not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})"
        if raw.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):  # (R90 #9)
            message += ": it starts with a UTF-32 byte-order mark; save it as UTF-8"
        elif raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # (T98 #13)
            message += ": it starts with a UTF-16 byte-order mark; save it as UTF-8"
        raise PolicyError([problem(SourceLocation(file, line, col), "", message)]) from None


def load_text(
    text: str,
    file: str,
    *,
    sha256: str = "",
    max_depth: int = _MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    unread: bool = False,
) -> YamlDocument:
    """Parse YAML text already in memory (see `load_yaml`).

    The fast C parser is tried first; on a syntax error the pure parser gets a second try,
    because it accepts what users write, such as `controls: [SOC2:CC6.1]`.
    """
    from auditor.policy import yamlparse

    data, pure, problems = yamlparse.parse(text, file, max_depth, max_nodes)
    if problems and not unread:
        raise PolicyError(problems)
    digest = sha256 or hashlib.sha256(text.encode()).hexdigest()
    return YamlDocument(
        path=file, data=data, sha256=digest, text=text, pure=pure, unread=tuple(problems)
    )


#: In `SHIPPED_YAML`, a mapping JSON cannot hold as an object (a key that is not text, such as
#: the readiness model's level numbers) is `{ITEMS: [[key, value], …]}`.
ITEMS = "\u0000items"


def untagged(value: Any) -> Any:
    """Recorded data as parsing gives it (`ITEMS` mappings rebuilt); a copy."""
    if isinstance(value, dict):
        if value.keys() == {ITEMS}:
            return {k: untagged(v) for k, v in value[ITEMS]}
        return {k: untagged(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untagged(v) for v in value]
    return value


def _recorded_data(entry: Mapping[str, Any]) -> tuple[Any] | None:
    """An entry's data as parsing gives it, a copy (callers own theirs); None when its
    `ITEMS` mappings are damaged (the file is then parsed)."""
    try:
        return (untagged(entry["data"]),)
    except (TypeError, ValueError):
        return None


def shipped_yaml() -> Mapping[str, Mapping[str, Any]]:
    """The entries of `SHIPPED_YAML` by digest; none when it is missing or not of the
    expected form (every file is then parsed)."""
    return _record()[1]


@functools.cache
def _record() -> tuple[str, Mapping[str, Mapping[str, Any]]]:
    """`SHIPPED_YAML` read (once): the digest of the policy schema its verdicts were reached
    under, and its entries by digest."""
    try:
        record = orjson.loads(SHIPPED_YAML.read_bytes())
        schema, entries = record["schema"], record["files"]
        if isinstance(schema, str) and isinstance(entries, dict):
            return schema, {k: e for k, e in entries.items() if _entry_of_form(e)}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return "", {}


def _entry_of_form(entry: Any) -> bool:
    """A record entry as `policy.shipped` writes it: data, positions as `{place: [line,
    column]}`, a schema verdict (an entry of another form is not used: its file is parsed)."""
    if not isinstance(entry, dict) or not {"data", "positions", "schema_checked"} <= entry.keys():
        return False
    positions = entry["positions"]
    return isinstance(positions, dict) and all(
        isinstance(place, list) and len(place) == 2 and all(type(n) is int for n in place)
        for place in positions.values()
    )


def load_yaml(
    path: Path,
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = _MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    unread: bool = False,
) -> YamlDocument:
    """Load one YAML file safely; raises PolicyError listing every refusal as `file:line:col`.
    With `unread`, a value that cannot be built (`2026-02-30`) is no refusal: it is read as its
    text and its problem kept in `YamlDocument.unread`, for a reader that checks the rest too.

    Bytes that are a shipped file's (their sha256 in `SHIPPED_YAML`) are not parsed again:
    the build's record of them is used, when read with the default limits it was made with.
    """
    text, digest = _read_text(path, max_bytes)
    if (max_bytes, max_depth, max_nodes) == (MAX_BYTES, _MAX_DEPTH, MAX_NODES):
        schema, entries = _record()
        known = entries.get(digest)
        data = _recorded_data(known) if known is not None else None
        if known is not None and data is not None:
            return YamlDocument(
                path=str(path),
                data=data[0],
                sha256=digest,
                text=text,
                positions=known["positions"],
                schema_checked=schema if known["schema_checked"] is True else "",
            )
    return load_text(
        text,
        str(path),
        sha256=digest,
        max_depth=max_depth,
        max_nodes=max_nodes,
        unread=unread,
    )
