"""The YAML parser behind `yamlsafe` (ruamel.yaml's C parser, the pure one as a fallback): the
checking pass over the parser's events, the safe constructor and the node tree positions are
read from. Imported by `yamlsafe` only when a file is parsed or a position is asked for: a
shipped file whose bytes the build already parsed (`yamlsafe.SHIPPED_YAML`) needs none of it.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import DuplicateKeyError, SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    Event,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.util import timestamp_regexp

from auditor.common.paths import render
from auditor.errors import PolicyError
from auditor.models import SourceLocation
from auditor.policy.yamlsafe import (
    MAX_DIGITS,
    YAML11_BREAKS,
    location,
    mark_index,
    problem,
    text_position,
    yaml11_breaks,
)

_CORE = "tag:yaml.org,2002:"
# A surrogate escape (`"\\uD83D"`) that is not half of a pair (`"\\uD83D\\uDE00"`, one
# character, as JSON writes any character beyond U+FFFF): not a character, not encodable text.
_LONE_SURROGATE = re.compile(
    "[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
# What YAML does not allow in a file, even quoted (JSON allows these in a string: U+007F-U+009F
# but U+0085, U+FFFE, U+FFFF), as ruamel's reader refuses them; and the three it reads as line
# breaks (U+0085, U+2028, U+2029), so that a line is what an editor counts (a JSON string
# holding one put every later position a line too low).
_NOT_YAML = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
ALLOWED_TAGS = frozenset(
    _CORE + name for name in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")
)


def parse(text: str, file: str, max_depth: int, max_nodes: int) -> tuple[Any, bool, list[str]]:
    """The data of YAML text, whether the pure parser read it (see `yamlsafe.load_text`), and
    the problem of each value that cannot be built (an impossible date such as `2026-02-30`, an
    integer longer than Python reads), which the data then holds as the text written.

    Text that is JSON (an object or array, no duplicate key, within the limits) is read as
    JSON: a string may then hold what YAML refuses (U+FFFE), as JSON allows. Otherwise the fast
    C parser is tried first; on a syntax error the pure parser gets a second try, because it
    accepts what users write, such as `controls: [SOC2:CC6.1]`. Either way a surrogate pair
    escape (`"\\uD83D\\uDE00"`) is the one character it encodes.
    """
    as_json = _json_data(text, max_depth, max_nodes)
    if as_json is not None:
        return as_json[0], False, []
    pure = False
    try:
        _scan(text, file, max_depth, pure=False, max_nodes=max_nodes)
    except _SyntaxFailure as first:
        try:  # its syntax error is not said (nor described: `_scan`), the C parser's is
            _scan(text, file, max_depth, pure=True, max_nodes=max_nodes, described=False)
        except (_SyntaxFailure, ValueError):  # ValueError: the pure parser's chr() of an
            # escape beyond U+10FFFF (`"\U00110000"`), which the C parser refuses at its place
            raise PolicyError(first.problems) from None
        pure = True
    data, unread = _construct(text, file, pure=pure)
    if _SURROGATE_ESCAPE.search(text):
        data = _pairs_joined(data)
    return data, pure, unread


_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")


def _joined(text: str) -> str:
    """`text` with each surrogate pair as the one character it encodes (no lone ones: the
    scan refused them)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def _pairs_joined(value: Any) -> Any:
    if isinstance(value, str):
        return _joined(value)
    if isinstance(value, dict):
        return {_pairs_joined(k): _pairs_joined(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_pairs_joined(v) for v in value]
    return value


def is_json(text: str) -> bool:
    """Whether `parse` reads `text`, which the loader took within its limits, as JSON (its
    strings as JSON's: a NEL is a character of one, no line break)."""
    return _json_data(text, 2**31, 2**62) is not None


def _json_data(text: str, max_depth: int, max_nodes: int) -> tuple[Any] | None:
    """The data of `text` read as JSON, or None when it is not JSON a YAML read would give
    the same data for, or would refuse (a duplicate key, a lone surrogate, `NaN`, a number
    too long, deeper or larger than the limits): the YAML read then says where and why."""
    text = text.removeprefix("\ufeff")  # a byte-order mark, as YAML reads past it
    if not text.lstrip(" \t\r\n").startswith(("{", "[")):
        return None
    try:
        data = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    return (data,) if _json_fits(data, max_depth, max_nodes) else None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("duplicate key")
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_fits(data: Any, max_depth: int, max_nodes: int) -> bool:
    """Within the limits the YAML scan enforces (nesting, values counted as it counts them:
    keys, scalars, lists and mappings), and no lone surrogate in a key or a string."""
    nodes = 0
    pending: list[tuple[Any, int]] = [(data, 0)]
    while pending:
        value, depth = pending.pop()
        nodes += 1
        if isinstance(value, dict):
            if depth >= max_depth:
                return False
            nodes += len(value)
            if any(_LONE_SURROGATE.search(k) for k in value):
                return False
            pending.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            if depth >= max_depth:
                return False
            pending.extend((v, depth + 1) for v in value)
        elif isinstance(value, str) and _LONE_SURROGATE.search(value):
            return False
        if nodes > max_nodes > 0:
            return False
    return True


def compose(text: str, *, pure: bool) -> Node | None:
    """The node tree of YAML text (positions), by the parser that read it. A JSON file's
    characters that YAML refuses (only in its strings) are read as `?`, one for one, so the
    positions stay; JSON that no YAML parser composes has no positions (the file's start)."""
    text = _NOT_YAML.sub("?", text)
    for parser in (pure, not pure):  # (the other parser when the first refuses: R85 #2)
        try:
            node: Node | None = YAML(typ="safe", pure=parser).compose(text)
        except (YAMLError, ValueError):  # ValueError: see `parse`
            continue
        return node
    if "\t" in text and _json_data(text, 2**31, 2**62) is not None:
        # JSON whose tabs YAML refuses where they stand (before its first `{`, on a line of
        # their own after it): read with each tab outside a string as a space, one for one,
        # so the positions stay (reviewer R89 #4: such a file's copy was refused)
        spaced = _JSON_STRING_OR_TAB.sub(lambda m: " " if m.group() == "\t" else m.group(), text)
        return compose(spaced, pure=pure)
    return None


_JSON_STRING_OR_TAB = re.compile(r'"(?:[^"\\]|\\.)*"|\t')


class Tree:
    """A file's node tree (positions), and the keys of each mapping a path has gone through
    by their text: a step of a path is then one look-up, not a scan of the mapping, so that
    placing a problem at each of a mapping's keys is linear, not quadratic (20,000 unknown keys
    took two minutes: review R57 #8)."""

    def __init__(self, root: Node | None) -> None:
        self.root = root
        # by the id() of a mapping node, which `root` keeps alive: its first key of each text
        self._keys: dict[int, dict[str, tuple[Node, Node]]] = {}
        # by the id() of an integer key named other than as written (`number_named`)
        self._names: dict[int, str] = {}

    def child(self, node: Node | None, part: str | int) -> tuple[Node | None, Node] | None:
        """The key and value nodes of `part` in mapping `node` (the first key of that text),
        or None and the item of a sequence; None when there is none."""
        if isinstance(node, MappingNode):
            return self._index(node).get(str(part))
        if isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            return None, node.value[part]
        return None

    def key_name(self, node: MappingNode, key: Node) -> str:
        """`key` of mapping `node` as a problem names it (`number_named`), under which
        `child` finds it."""
        self._index(node)
        return self._names.get(id(key)) or _joined(str(key.value))

    def _index(self, node: MappingNode) -> dict[str, tuple[Node, Node]]:
        keys = self._keys.get(id(node))
        if keys is not None:
            return keys
        keys = {}
        for pair in node.value:  # each key by its text as written
            keys.setdefault(_joined(str(pair[0].value)), pair)
        # Then an integer named in hex, under a name no key of the mapping is written as: a
        # text key `'0x…'` keeps its own problems and place, the integer's are not merged
        # into them (review R64 #3).
        for pair in node.value:
            if pair[0].tag == _CORE + "int":
                text = _joined(str(pair[0].value))
                name = number_named(text)
                if name != text:
                    name = _free_name(name, keys)
                    keys.setdefault(name, pair)
                    self._names[id(pair[0])] = name
        self._keys[id(node)] = keys
        return keys

    def node_at(self, parts: Sequence[str | int]) -> Node | None:
        node = self.root
        for part in parts:
            found = self.child(node, part)
            node = found[1] if found is not None else None
        return node


def locate(tree: Tree, file: str, parts: Sequence[str | int], *, key: bool) -> SourceLocation:
    """1-based position of the value at `parts` in the tree (of its key with `key=True`); a
    path that does not exist resolves to its nearest existing ancestor."""
    if tree.root is None:
        return SourceLocation(file, 1, 1)
    node, mark = tree.root, tree.root.start_mark
    for part in parts:
        found = tree.child(node, part)
        if found is None:
            break
        key_node, node = found
        mark = key_node.start_mark if key and key_node is not None else node.start_mark
    return location(file, mark)


def written(tree: Tree, parts: Sequence[str | int]) -> str | None:
    """The text of the scalar at `parts` as written (without quotes), or None."""
    node = tree.node_at(parts)
    return str(node.value) if isinstance(node, ScalarNode) else None


def typed_key(
    tree: Tree, file: str, parts: Sequence[str | int]
) -> tuple[SourceLocation, str | None]:
    """1-based position of the first key of the mapping at `parts` that YAML reads as other
    than text (`1:`, `null:`, `true:`, a date), and the key as written; the mapping's own
    position (and None) without one."""
    node = tree.node_at(parts)
    if isinstance(node, MappingNode):
        for key_node, _ in node.value:
            if key_node.tag != _CORE + "str":
                return location(file, key_node.start_mark), tree.key_name(node, key_node)
    return location(file, node.start_mark if node is not None else None), None


def key_written(tree: Tree, parts: Sequence[str | int], index: int, count: int) -> str | None:
    """The text of the key `index` (of `count`) of the mapping at `parts` as written (`true`,
    `0x10`, `~`), or None (no such mapping of as many keys)."""
    node = tree.node_at(parts)
    if isinstance(node, MappingNode) and len(node.value) == count and 0 <= index < count:
        return tree.key_name(node, node.value[index][0])
    return None


def number_named(text: str) -> str:
    """An integer key written `text` (`0b1100…`, `0o1443…`, 39 decimal digits) as a problem
    names it: as written, but by its hex form (`0x6465…`) where the redactor may withhold
    that form and not the one written, which it never reads as a number: a number whose bytes
    hold 8 characters of text in a row (the command's own token typed as a number: hidden in
    whatever base it was typed, review R57 #7), or whose hex a value detector takes for a
    secret. Any other key reads as its author wrote it (`12345678901234567890123`, not
    `0x29d42b64e76714244cb`: review R64 #6); a key already in that hex form too."""
    if len(text) <= _LONGEST_SHOWN or not text.isascii():
        return text
    value = _integer(text)
    if value is None or not abs(value) >> 56:
        return text
    hexed = hex(value)
    return hexed if hexed != text and _may_be_withheld(abs(value), hexed) else text


def _integer(text: str) -> int | None:
    """The integer YAML reads `text` as (`_` anywhere, a sign, `0b`, `0o`, `0x`), or None."""
    digits = text.replace("_", "")
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("+-")
    base = {"0b": 2, "0o": 8, "0x": 16}.get(digits[:2].lower(), 10)
    try:
        return sign * int(digits[2:] if base != 10 else digits, base)
    except ValueError:  # not an integer, or more decimal digits than Python reads
        return None


@functools.lru_cache(maxsize=256)
def _may_be_withheld(value: int, hexed: str) -> bool:
    if _TEXT_RUN.search(value.to_bytes((value.bit_length() + 7) // 8, "big")):
        return True
    from auditor.redact.shown import not_shown  # detectors: for such a key alone

    return not_shown(hexed) != hexed


def _free_name(name: str, keys: dict[str, tuple[Node, Node]]) -> str:
    """`name` (`0x…`), after as many `+` as make it a name no key in `keys` is written as
    (`+0x…`): never the key as written, which may be the own token in decimal."""
    while name in keys:
        name = "+" + name
    return name


_LONGEST_SHOWN = 16  # written characters: no form of an 8-byte number is shorter but hex
#: 8 characters of text: what the own token of 8 or more is hidden by in its other forms
#: (`auditor.redact.shown.named_tokens`), hex among them.
_TEXT_RUN = re.compile(rb"[\x20-\x7e]{8}")


def _an_integer(event: ScalarEvent) -> bool:
    """Whether YAML reads the scalar of `event` as an integer, as the tree's key is tagged
    (`Tree.key_name`): `!!int` in any style, or a plain one the resolver reads so (`0b1100…`,
    not `_7205…`, which is text: review R64 #1)."""
    if event.tag is not None and event.tag != "!":
        return bool(event.tag == _CORE + "int")
    if event.style:
        return False
    return bool(_RESOLVER.resolve(ScalarNode, event.value, (True, False)) == _CORE + "int")


_RESOLVER = VersionedResolver()
_RESOLVER_11 = VersionedResolver(version=(1, 1))  # (a `%YAML 1.1` file's `017`, `1:30`)
#: An explicit tag of a type other than text: the types its text may be written as, plain,
#: and how one is written.
_TYPED_AS = {
    _CORE + "int": ((_CORE + "int",), "an integer such as 30"),
    _CORE + "float": ((_CORE + "float",), "a number such as 0.8"),
    _CORE + "timestamp": ((), "a date such as 2026-01-31"),
    _CORE + "bool": ((), "true or false"),
    _CORE + "null": ((_CORE + "null",), "null, ~ or nothing"),
}
_DECIMAL = re.compile(r"[-+]?[0-9][0-9_]*")  # an integer `!!float` reads (`!!float 30`: 30.0)


def _mistyped(event: ScalarEvent, version: tuple[int, int] | None = None) -> str | None:
    """The problem of a scalar tagged `!!int`, `!!float`, `!!timestamp`, `!!bool` or `!!null`
    whose text is none of its type's (`!!null <token>`, `!!int ""`): said without quoting it.
    The constructor read `!!null` and `!!bool`'s text as nothing or a bool, so what it held was
    in no string of the data, nor in its copies' redaction (reviewer R87 #1, R89 #1); an empty
    `!!int` or `!!float` ended the command with `unexpected IndexError`, and a `!!int` whose
    text was a broken quote with `unexpected ScannerError` quoting it (R89 #2)."""
    typed = _TYPED_AS.get(str(event.tag))
    if typed is None:
        return None
    types, example = typed
    value = event.value
    resolver = _RESOLVER_11 if version == (1, 1) else _RESOLVER  # (the file's own YAML: R90 #6)
    if event.tag == _CORE + "bool":
        fits = _is_bool_word(value)
    elif event.tag == _CORE + "timestamp":  # (what the constructor reads: `2026-1-1` too)
        fits = timestamp_regexp.match(value) is not None
    elif event.tag == _CORE + "float" and _DECIMAL.fullmatch(value):
        fits = True
    else:  # (not YAML 1.1's base 60, `1:30`, which the constructor does not read)
        fits = resolver.resolve(ScalarNode, value, (True, False)) in types and ":" not in value
    if fits:
        return None
    kind = str(event.tag)[len(_CORE) :]
    return f"a value tagged `!!{kind}` is not written as one (write {example}, or drop the tag)"


#: A refused YAML alias, anchor or tag, said by its kind alone (`_Scanner._check_node`).
_NAMED_NODE = (
    "a YAML {kind} (`{mark}` and a name) is not allowed in auditor input files "
    "({hint}quote a value that starts with `{mark}`)"
)
_ALIAS_HINT = "write the value out; "
_TAG_HINT = "plain data only; "


@dataclass
class _Frame:
    is_mapping: bool
    keys: set[str] = field(default_factory=set)
    expect_key: bool = True
    part: str | int = -1  # the key or index of the node last met in it (its path's step)


class _Scanner:
    """Checks the event stream; collects every refusal with its position."""

    def __init__(self, file: str, max_depth: int, max_nodes: int = 0, text: str = "") -> None:
        self.file = file
        self.text = text  # what is parsed, to count lines in as an editor does (`location`)
        self.max_depth = max_depth
        self.max_nodes = max_nodes  # 0: no limit
        self.nodes = 0
        self.stack: list[_Frame] = []
        self.documents = 0
        self.version: tuple[int, int] | None = None  # the document's `%YAML` directive's
        self.problems: list[str] = []

    def refuse(self, event: Event, message: str, at: str = "") -> None:
        loc = location(self.file, event.start_mark, self.text)
        self.problems.append(problem(loc, at, message))

    def feed(self, event: Event) -> None:
        if isinstance(event, DocumentStartEvent):
            self.documents += 1
            self.version = getattr(event, "version", None)
            if self.documents == 2:
                self.refuse(event, "several YAML documents in one file; keep one per file")
            return
        if isinstance(event, CollectionEndEvent):
            self.stack.pop()
            return
        if not isinstance(event, NodeEvent):
            return
        self.nodes += 1
        if self.nodes > self.max_nodes > 0:
            self.refuse(
                event,
                f"more than {self.max_nodes} values (keys, scalars, lists and mappings), "
                "the limit for one file",
            )
            raise _TooDeep  # building that many objects took minutes and gigabytes
        self._check_node(event)
        is_key = self._take_position(event)
        if isinstance(event, ScalarEvent) and (said := _mistyped(event, self.version)):
            self.refuse(event, said, self._path(is_key))
        if is_key and isinstance(event, ScalarEvent):
            if event.value == "<<" and not event.style and event.tag is None:
                self.refuse(
                    event,
                    "YAML merge key `<<` is not allowed in auditor input files (write the keys "
                    'out; quote it, "<<", for a key of that name)',
                )
            self._check_duplicate(event)
        if isinstance(event, CollectionStartEvent):
            self._open(event)

    def _check_node(self, event: NodeEvent) -> None:
        # An alias's, anchor's or tag's name is never quoted: it is the file's own text at a
        # place that may hold a secret (`apiKey: !Kx9mQ2vLp4RtW8`, a password YAML reads as a
        # tag), which is not data the file's problems are screened with. The position
        # points at it.
        if isinstance(event, AliasEvent):
            self.refuse(event, _NAMED_NODE.format(kind="alias", mark="*", hint=_ALIAS_HINT))
            return
        if event.anchor is not None:
            self.refuse(event, _NAMED_NODE.format(kind="anchor", mark="&", hint=""))
        if isinstance(event, ScalarEvent) and _LONE_SURROGATE.search(event.value):
            self.refuse(event, "a lone surrogate escape (\\uD800-\\uDFFF) is not a character")
        tag = getattr(event, "tag", None)
        if tag is not None and tag not in ALLOWED_TAGS:
            self.refuse(event, _NAMED_NODE.format(kind="tag", mark="!", hint=_TAG_HINT))

    def _take_position(self, event: NodeEvent) -> bool:
        if not self.stack:
            return False
        frame = self.stack[-1]
        if not frame.is_mapping:
            frame.part = int(frame.part) + 1
            return False
        is_key = frame.expect_key
        frame.expect_key = not frame.expect_key
        if is_key:
            frame.part = event.value if isinstance(event, ScalarEvent) else "?"
        if is_key and not isinstance(event, ScalarEvent | AliasEvent):
            self.refuse(event, "a mapping key must be a plain scalar")
        return is_key

    def _path(self, is_key: bool) -> str:
        """The JSON path of the node just met (a key's is its mapping's), as a constructed
        value's problem gives it (`$.rules[0].severity`)."""
        frames = self.stack[:-1] if is_key else self.stack
        return render([frame.part for frame in frames]) if frames else ""

    def _check_duplicate(self, event: ScalarEvent) -> None:
        frame = self.stack[-1]
        if event.value in frame.keys:
            name = number_named(event.value) if _an_integer(event) else event.value
            self.refuse(event, f"duplicate key `{name}`")
        frame.keys.add(event.value)

    def _open(self, event: CollectionStartEvent) -> None:
        self.stack.append(_Frame(is_mapping=isinstance(event, MappingStartEvent)))
        if len(self.stack) == self.max_depth + 1:
            self.refuse(event, f"nesting deeper than {self.max_depth} levels")
            # Stop here: what lies deeper cannot be used, and walking it costs time in the
            # parser (a 1 MB file of `[[[…` took minutes); the problems so far are reported.
            raise _TooDeep


#: What a parser's message quotes of the file beyond one character (the pure parser's
#: `found undefined tag handle '!Kx9mQ2!'`: a password YAML read as a tag): left out, as the
#: position points at it. One character (`found unknown escape character 'q'`, `'\\n'`) and
#: a token's kind (`'<scalar>'`) stay.
_QUOTED_NAME = re.compile(r" '(?![<\\])[^']{2,}'")


def _syntax_problem(file: str, exc: YAMLError, text: str = "", *, pure: bool) -> str:
    if isinstance(exc, ReaderError) and isinstance(exc.position, int) and text:
        # A character YAML does not allow: ruamel gives its place in the text only, the C
        # parser's in the text's UTF-8 bytes (a `é`, a byte-order mark or a U+2028 before it
        # put it one or two columns, or a line, too far: review R57 #3).
        at = min(exc.position if pure else _char_index(text, exc.position), len(text))
        line, col = text_position(text, at)
        code = exc.character if isinstance(exc.character, int) else ord(text[at : at + 1] or " ")
        message = f"invalid YAML: the character U+{code:04X} is not allowed in YAML"
        return problem(SourceLocation(file, line, col), "", message)
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        context = exc.context or ""
        if context and exc.context_mark is not None and exc.problem_mark is not None:
            start = location(file, exc.context_mark, text)
            context += f" (from line {start.line}, column {start.col})"
        said = _QUOTED_NAME.sub("", ": ".join(str(p) for p in (context, exc.problem) if p))
        hint = _break_hint(text, exc) if text else ""
        return problem(location(file, mark, text), "", f"invalid YAML: {said}{hint}")
    return problem(SourceLocation(file, 1, 1), "", f"invalid YAML: {exc}")


def _char_index(text: str, offset: int) -> int:
    """The index in `text` of the character at byte `offset` of its UTF-8 form (no character
    is fewer bytes than one, so the first `offset` characters hold them)."""
    return len(text[:offset].encode("utf-8", "surrogatepass")[:offset].decode("utf-8", "ignore"))


def _break_hint(text: str, exc: MarkedYAMLError) -> str:
    """What to say of the YAML 1.1 line breaks (`YAML11_BREAKS`) before a syntax error (the
    first on the line of the last one), when they are its cause (the text with each one a
    space reads past that place, or fails otherwise): YAML ends a line, and a comment, there,
    and no editor does, so what follows one in a comment is read as YAML (T92 #3); or "".
    One in a quoted string is no break in any YAML, nor its cause: never named (review R57
    #4: one in `b: "x<U+2028>y"` was, below the comment's that was the cause)."""
    mark = exc.problem_mark
    if mark is None or not yaml11_breaks(text):
        return ""
    at = mark_index(mark, text)
    if max(text.rfind(c, 0, at) for c in YAML11_BREAKS) < 0:
        return ""
    pure = getattr(mark, "buffer", None) is not None
    depth = 0
    quoted: list[tuple[int, int]] = []  # the quoted strings read, in order: where each starts, ends
    try:  # read up to that place only, and no deeper than a file may nest (`_Scanner`)
        for event in YAML(typ="safe", pure=pure).parse(_YAML11_BREAK.sub(" ", text)):
            if mark_index(event.start_mark, text) > at:
                break  # past it: theirs
            depth += isinstance(event, CollectionStartEvent) - isinstance(event, CollectionEndEvent)
            if depth > _HINT_DEPTH:
                return ""
            if isinstance(event, ScalarEvent) and event.style in ("'", '"'):
                quoted.append(
                    (mark_index(event.start_mark, text), mark_index(event.end_mark, text))
                )
    except MarkedYAMLError as again:
        same = again.problem_mark is not None and mark_index(again.problem_mark, text) == at
        if same and again.problem == exc.problem:
            return ""  # the same mistake without them: not theirs
    except (YAMLError, ValueError):  # (ValueError: see `parse`)
        pass
    starts = [begin for begin, _ in quoted]
    breaks = [
        m.start()
        for m in _YAML11_BREAK.finditer(text, 0, at)
        if not _within(m.start(), quoted, starts)
    ]
    if not breaks:
        return ""
    # the first on the line of the last one: the one that ends a comment there
    index = breaks[-1]
    line_start = max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1
    index = breaks[bisect.bisect_left(breaks, line_start)]
    line, col = text_position(text, index)
    return (
        f" (U+{ord(text[index]):04X}, {YAML11_BREAKS[text[index]]}, at {line}:{col} is a line "
        "break in YAML 1.1, where no editor shows one, and ends a comment: what follows it is "
        "read as YAML; remove it)"
    )


def _within(index: int, spans: list[tuple[int, int]], starts: list[int]) -> bool:
    """Whether `index` lies in one of `spans` (in order, apart; `starts` their starts)."""
    at = bisect.bisect_right(starts, index) - 1
    return at >= 0 and index < spans[at][1]


_YAML11_BREAK = re.compile("[" + "".join(YAML11_BREAKS) + "]")
_HINT_DEPTH = 64  # as `yamlsafe` reads a file: deeper, a parser takes minutes over `[[[…`


class _TooDeep(Exception):
    """The scan passed the depth or size limit: nothing more is parsed (the refusal is
    recorded)."""


class _SyntaxFailure(Exception):
    """The parser gave up; carries every problem found up to that point."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def _scan(
    text: str,
    file: str,
    max_depth: int,
    *,
    pure: bool,
    max_nodes: int = 0,
    described: bool = True,
) -> None:
    """PolicyError with the refusals found in the events of `text`; _SyntaxFailure with them
    and its syntax error, when the parser gives up. With `described=False` (a second try
    whose failure is dropped), the syntax error is not described: its hint alone parses the
    text again (a 950 KB file took 9 s more: review R57 #5)."""
    scanner = _Scanner(file, max_depth, max_nodes, text)
    try:
        for event in YAML(typ="safe", pure=pure).parse(text):
            scanner.feed(event)
    except _TooDeep:
        raise PolicyError(scanner.problems) from None
    except YAMLError as exc:
        said = [_syntax_problem(file, exc, text, pure=pure)] if described else []
        raise _SyntaxFailure([*scanner.problems, *said]) from None
    if scanner.problems:
        raise PolicyError(scanner.problems)


def _scalar_problem(node: Node, file: str, at: str) -> str | None:
    """The problem with one scalar the constructor refused (at JSON path `at`), or None if it
    is not the one."""
    try:
        YAML(typ="safe", pure=True).load(node.value)
    except ValueError as exc:
        if node.tag == _CORE + "int":
            digits = sum(c.isdigit() for c in node.value)
            message = f"a number of {digits} digits is too long (at most {MAX_DIGITS} digits)"
        else:
            message = f"`{node.value}` is not a valid date/time ({exc})"
        return problem(location(file, node.start_mark), at, message)
    return None


def _bad_scalars(text: str, file: str, *, pure: bool) -> list[str]:
    """The problem of each scalar that cannot be built, in the file's order: a timestamp that
    is not a calendar date/time (e.g. 2026-02-30) or an integer longer than Python converts,
    with its JSON path (`$.waivers[0].expires: …`, as every other problem of a value has; a
    key's is its mapping's)."""
    found: list[str] = []
    pending: list[tuple[Node | None, tuple[str | int, ...]]] = [(compose(text, pure=pure), ())]
    while pending:
        node, parts = pending.pop()
        if isinstance(node, MappingNode):
            for key, value in reversed(node.value):
                pending += [(value, (*parts, str(key.value))), (key, parts)]
        elif isinstance(node, SequenceNode):
            pending.extend((item, (*parts, n)) for n, item in reversed(list(enumerate(node.value))))
        elif node is not None and node.tag in (_CORE + "timestamp", _CORE + "int"):
            said = _scalar_problem(node, file, render(parts) if parts else "")
            if said:
                found.append(said)
    return found or [problem(SourceLocation(file, 1, 1), "", "a value cannot be read")]


def _is_bool_word(value: Any) -> bool:
    """Whether a `!!bool` scalar's text is one the safe constructor reads."""
    return isinstance(value, str) and value.lower() in SafeConstructor.bool_values


class _TextWhereUnreadable(SafeConstructor):
    """The safe constructor, but a timestamp or an integer that cannot be built (2026-02-30)
    is read as its text, so the rest of the file is checked too (`_construct`)."""

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        try:
            return super().construct_yaml_timestamp(node, values)
        except ValueError:
            return str(node.value)

    def construct_yaml_int(self, node: Any) -> Any:
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            return str(node.value)


_TextWhereUnreadable.add_constructor(
    _CORE + "timestamp", _TextWhereUnreadable.construct_yaml_timestamp
)
_TextWhereUnreadable.add_constructor(_CORE + "int", _TextWhereUnreadable.construct_yaml_int)


_TYPED_KEY = re.compile(r'found duplicate key "(None|True|False|[-+0-9.einfa]+)" with value')
_KEY_WORDS = {"None": "null", "True": "true", "False": "false"}


def _duplicate_problem(file: str, exc: DuplicateKeyError, text: str) -> str:
    """Two keys written apart that read alike once typed (`null` and `~`, `1` and `0x1`,
    `true` and `True`), or that are equal once read (`1` and `true`, `1` and `1.0`: one key of
    a mapping): said without quoting either value, as the parser's message does (a value
    under `env:` is a secret by its place alone, which no detector sees in a message)."""
    found = _TYPED_KEY.search(str(exc.problem or ""))
    key = f" `{_KEY_WORDS.get(found[1], number_named(found[1]))}`" if found else ""
    since = ""
    if exc.context_mark is not None:
        start = location(file, exc.context_mark, text)
        since = f" (the mapping from line {start.line}, column {start.col})"
    message = (
        f"duplicate key: this key reads as{key}, as an earlier key of the same mapping"
        f"{since} does, or as one it equals (YAML reads `null` and `~`, `1` and `0x1`, `true` "
        "and `True` alike, and `1`, `1.0` and `true` are one key, as are `0`, `0.0` and `false`)"
    )
    return problem(location(file, exc.problem_mark, text), "", message)


def _construct(text: str, file: str, *, pure: bool) -> tuple[Any, list[str]]:
    """The data, and the problems of the values that could not be built (2026-02-30, an
    integer longer than int() converts), which the data holds as their text: a file's other
    problems are then found too, not only once every date is fixed (T74 #3)."""
    try:
        return YAML(typ="safe", pure=pure).load(text), []
    except DuplicateKeyError as exc:
        raise PolicyError([_duplicate_problem(file, exc, text)]) from None
    except YAMLError as exc:  # e.g. an unparsable timestamp value
        raise PolicyError([_syntax_problem(file, exc, text, pure=pure)]) from None
    except (ValueError, KeyError, IndexError):  # (what the scanner let through and the
        # constructor still refuses: its problem, never an unexpected error: R88 #3, R89 #2)
        unread = _bad_scalars(text, file, pure=pure)
    lenient = YAML(typ="safe", pure=pure)
    lenient.Constructor = _TextWhereUnreadable
    try:
        return lenient.load(text), unread
    except (YAMLError, ValueError, KeyError, IndexError):
        raise PolicyError(unread) from None


#: How many values (aliases counted as the values they repeat) and how deep `lenient_data`
#: reads at most, as the strict read (`yamlsafe.MAX_NODES`, its depth limit): no more is built.
_LENIENT_NODES = 100_000
_LENIENT_DEPTH = 64


def lenient_data(text: str) -> Any:
    """The data of a text the strict read refused (a duplicate key, an anchor, a tag, several
    documents), read only to learn the secrets it holds by their place, for the problems that
    quote it (`auditor.redact.shown.own_secrets_hidden`): each value of a key written twice
    kept (a list of them), every scalar as its text, several documents as a list of them.
    Built from the parser's events, so no more than the limits is ever read (a file nested
    deeper, or larger, than the strict read allows reads as None); a text neither parser
    reads to its end as what was read before its mistake (None when nothing was)."""
    text = _NOT_YAML.sub("?", text)
    partial: list[_Lenient] = []
    for pure in (False, True):
        builder = _Lenient()
        try:
            return builder.read(YAML(typ="safe", pure=pure).parse(text))
        except (YAMLError, ValueError, RecursionError):
            partial.append(builder)
        except _TooDeep:
            return None
    # Neither parser read it to its end: what they read up to the mistake (a duplicate key
    # before a syntax error is quoted too), the more of the two.
    return max(partial, key=lambda b: b.nodes).unwound()


class _Lenient:
    """`lenient_data`'s builder: one value per node event, a mapping's keys and values
    collected in order (a key written twice keeps each value)."""

    def __init__(self) -> None:
        # per open collection: its items (a list's values, or a mapping's keys and values in
        # turn), its anchor, and the values it counts (for an alias of it)
        self.stack: list[tuple[list[Any], bool, str | None, int]] = []
        self.anchored: dict[str, tuple[Any, int]] = {}
        self.nodes = 0
        self.roots: list[Any] = []

    def read(self, events: Any) -> Any:
        for event in events:
            if isinstance(event, CollectionEndEvent):
                items, mapping, anchor, start = self.stack.pop()
                self._add(_collected(items) if mapping else items, anchor, start)
            elif isinstance(event, CollectionStartEvent):
                if len(self.stack) >= _LENIENT_DEPTH:
                    raise _TooDeep
                self._count(1)
                mapping = isinstance(event, MappingStartEvent)
                self.stack.append(([], mapping, event.anchor, self.nodes))
            elif isinstance(event, AliasEvent):
                value, size = self.anchored.get(str(event.anchor), (None, 1))
                self._count(size)
                self._place(value)
            elif isinstance(event, ScalarEvent):
                self._count(1)
                self._add(_joined(str(event.value)), event.anchor, self.nodes)
        return self.roots[0] if len(self.roots) == 1 else self.roots

    def unwound(self) -> Any:
        """What was read before the parser gave up, its open collections closed (a key
        left without its value dropped); None when nothing was."""
        while self.stack:
            items, mapping, anchor, start = self.stack.pop()
            self._add(_collected(items) if mapping else items, anchor, start)
        if not self.roots:
            return None
        return self.roots[0] if len(self.roots) == 1 else self.roots

    def _count(self, size: int) -> None:
        self.nodes += size
        if self.nodes > _LENIENT_NODES:
            raise _TooDeep

    def _add(self, value: Any, anchor: str | None, start: int) -> None:
        if anchor is not None:
            self.anchored[anchor] = (value, self.nodes - start + 1)
        self._place(value)

    def _place(self, value: Any) -> None:
        if self.stack:
            self.stack[-1][0].append(value)
        else:
            self.roots.append(value)


def _collected(items: list[Any]) -> dict[str, Any]:
    """A mapping's keys and values in turn as a mapping: a key that is no text as its text
    (none for a list or a mapping as a key), a key written twice with the list of its values."""
    found: dict[str, list[Any]] = {}
    for at in range(0, len(items) - 1, 2):
        key = items[at]
        name = key if isinstance(key, str) else ""
        found.setdefault(name, []).append(items[at + 1])
    return {k: v[0] if len(v) == 1 else v for k, v in found.items()}
