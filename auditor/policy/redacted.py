"""A policy's own text through the run's redactor, before any of it reaches an output.

Takes a `PolicySet` and a text redactor (`Redactor.redact_text`: value detectors and the
memory of secrets); gives the same policy with every secret in a rule's title, description and
remediation, and in each leaf's argument *as written* (what messages and evidence show as the
expectation), replaced by its marker. The prepared arguments the operators compare with stay
as they are, so a rule still judges the value (by fingerprint where it is redacted,
`auditor.operators.hidden`). A rule with nothing to redact is the same object.

A literal a rule compares with a value secret by its place (a leaked key it checks for:
`apiKey not_in [OLD]`, in no detector's form) is its marker in that rule's own texts only
(`hidden_literals`, `with_literals_hidden`); it is learned by nothing, so it never changes a
path, a selector, an enum, an id or another rule's text, nor a verdict. The bundle's copy of
a policy file (`redacted_source`) hides it wherever that rule's item writes it (a part of a
pattern or of a longer text, a tag, a control) but in its id and paths, and in `defaults:`
and comments (a result the copy judges otherwise is named in `notReproduced`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from auditor.errors import PolicyError
from auditor.models import SourceLocation
from auditor.policy.conditions import Condition, Leaf, Logic, Parts, Quantifier, iter_leaves
from auditor.policy.loader import PolicySet
from auditor.policy.model import Rule
from auditor.policy.pathexpr import CompiledPath, Key, Select, Star, Step
from auditor.policy.refs import Ref

if TYPE_CHECKING:
    from auditor.redact.redactor import Place, Redactor

Redact = Callable[[str], str]


def redacted_policy(policy: PolicySet, redact: Redact, scrub: Redact | None = None) -> PolicySet:
    """`policy` with the secrets in its rules' text replaced by markers (see the module).

    `scrub` (the memory of secrets alone, `Redactor.scrub_known`), when given, serves the rules
    of shipped files as built (their sha256 in the build's record), in which no detector finds
    anything (`tests/test_hidden_values.py` checks): a run of the shipped packs alone does not
    load the value detectors (a tenth of a second).

    A rule id, an enum's name or one of its levels is a name the reports, the state file and
    waivers go by, not text a marker can stand in for: one that `redact` changes is a
    `PolicyError` at its `file:line:col` (the value not shown)."""
    built = _as_built(policy) if scrub is not None else frozenset()
    redact = _Once(redact)
    scrub = None if scrub is None else _Once(scrub, by_text=True)
    _refuse_secret_names(policy, redact, scrub, built)
    rules = tuple(
        redacted_rule(rule, scrub if scrub is not None and rule.id in built else redact)
        for rule in policy.rules
    )
    if all(a is b for a, b in zip(rules, policy.rules, strict=True)):
        return policy
    return replace(policy, rules=rules)


class _Once:
    """A redactor answering each text once (a path, tag or control recurs across rules).

    `by_text`: the memory of secrets alone (`scrub_known`), which finds a remembered secret
    between word boundaries: a path whose text it leaves alone has no key or value it would
    change, so its steps are not each asked (a run of the shipped packs asks ~600 texts)."""

    def __init__(self, redact: Redact, *, by_text: bool = False) -> None:
        self.redact = redact
        self.by_text = by_text
        self.done: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        out = self.done.get(text)
        if out is None:
            out = self.done[text] = self.redact(text)
        return out


SECRET_NAME = (
    "looks like a secret (not shown): a rule id, an enum name or level is a name the reports, "
    "the state file and waivers go by, so it cannot be shown as a marker; rename it"
)


def _refuse_secret_names(
    policy: PolicySet, redact: Redact, scrub: Redact | None, built: frozenset[str]
) -> None:
    from auditor.operators import BUILTIN_ENUMS
    from auditor.policy.yamlsafe import problem

    problems: list[str] = []
    for rule in policy.rules:
        check = scrub if scrub is not None and rule.id in built else redact
        if check(rule.id) != rule.id:
            where = rule.source or SourceLocation("<policy>", 1, 1)
            problems.append(problem(where, "", f"the id of this rule {SECRET_NAME}"))
    own = {
        name: levels
        for name, levels in policy.enums.items()
        if BUILTIN_ENUMS.get(name) != levels
        and any(redact(text) != text for text in (name, *levels))
    }
    for name in own:
        problems.append(_enum_problem(policy, name))
    if problems:
        from auditor.policy.loader import sort_problems

        raise PolicyError(sort_problems(problems))


def _enum_problem(policy: PolicySet, name: str) -> str:
    """The refusal of enum `name`, at its `file:line:col` where the file can be read again."""
    from auditor.policy.yamlsafe import load_yaml, problem

    for file in policy.files:
        try:
            doc = load_yaml(Path(file.path))
        except (PolicyError, OSError):
            continue  # named as shown (not where it is read from): the refusal without a line
        if isinstance(doc.data, dict) and name in (doc.data.get("enums") or {}):
            loc = doc.locate(("enums", name), key=True)
            return problem(loc, "", f"an enum here (its name or a level) {SECRET_NAME}")
    return f"<policy>: error: an enum (its name or a level) {SECRET_NAME}"


def _as_built(policy: PolicySet) -> frozenset[str]:
    """The ids of the rules of shipped files as the build recorded them."""
    from auditor.policy.yamlsafe import shipped_yaml

    record = shipped_yaml()
    return frozenset(i for f in policy.files if f.sha256 in record for i in f.rule_ids)


def hidden_literals(policy: PolicySet) -> dict[str, tuple[str, ...]]:
    """Per rule id, the literals of that rule compared with a value secret by its place
    (`secret_literals`: a leaked key a rule checks for, `apiKey not_in [OLD]`) that may be a
    credential (`compared_secret`), for the rules that have any. Each is hidden in its own
    rule's texts only (`with_literals_hidden`), never learned as a secret: an ordinary value
    that passes the filter (a model id compared with an `env` value) must not hide a path,
    a selector, an enum or another rule's text. The shipped packs (their sha256 in the
    build's record) are public text: not read."""
    from auditor.redact.redactor import compared_secret

    built = _as_built(policy)
    out: dict[str, tuple[str, ...]] = {}
    for rule in policy.rules:
        if rule.id in built:
            continue
        found = [text for text, part in secret_literals(rule) if compared_secret(text, part)]
        if found:
            out[rule.id] = tuple(dict.fromkeys(found))
    return out


#: Operators whose answer on a hidden value (a marker) turns on no key: a pattern is decided on
#: the text around markers, `type`/`length`/`empty` on the marker's form and length, presence
#: on the markers themselves (`auditor.operators.hidden`).
_KEYLESS_OPS = frozenset(
    {"matches", "not_matches", "type", "length", "empty", "exists", "added", "removed"}
    | {"changed"}
)


def compares_secret_place(policy: PolicySet) -> bool:
    """Whether a rule of `policy` (shipped or not) compares a literal (a text or a number
    that is no marker text, `[secret …`) with a value secret by its place, as the redactor
    decides places (`apiKey`, every value under `env` or `extraHeaders` …, found as
    `secret_literals` finds them).
    Such a value is its marker in the state and in an evidence bundle: `run` reads the marker
    by the state's key (the literal whose marker it is), a bundle has no such key and
    compares the literal with the marker's text, so the two can judge otherwise (`export`'s
    `notReproduced`). A pattern, `type`, `length`, `exists` and the like turn on no key."""
    return any(map(rule_compares_secret_place, policy.rules))


def rule_compares_secret_place(rule: Rule) -> bool:
    """`compares_secret_place` of one rule (a rule's verdicts turn on nothing but its own
    conditions, the data and the run's inputs: `export` evaluates again only such rules)."""
    from auditor.redact.redactor import ROOT

    return any(
        _compares_at(cond, ROOT, None) for cond in (rule.condition, rule.when) if cond is not None
    )


def _compares_at(cond: Condition, place: Place, change: Place | None) -> bool:
    """`compares_secret_place` of `cond`, its paths read from `place` (`_literals_of`)."""
    from auditor.redact.redactor import ROOT

    if isinstance(cond, Logic):
        return any(_compares_at(child, place, change) for child in cond.children)
    if isinstance(cond, Quantifier):
        inner = _leaf_place(cond.path, place, None if change is _ANY_PLACE else change)
        changed = _change_place(cond) if _is_changes(cond.path) else None
        # changes no selector or `path` literal pins to one place may be at a secret one
        return _compares_at(cond.condition, inner, _ANY_PLACE if changed == ROOT else changed)
    if not any(_may_be_secret(path, place, change) for path in cond.paths):
        return False
    # a `{ref: …}` is read from the same state: its value may be a marker too, or not
    return any(
        op.name not in _KEYLESS_OPS and (isinstance(arg, Ref) or _keyed(raw))
        for op, arg, raw in cond.ops
    )


#: A change's place when nothing pins it (`_compares_at`): its `before` and `after` may be
#: at any place, a secret one too (reviewer R28 #1: `{path: after, equals: debug}` under an
#: unpinned `changes[]` flipped unlisted).
_ANY_PLACE: Any = object()


def _may_be_secret(path: CompiledPath, place: Place, change: Place | None) -> bool:
    """Whether `path`, read from `place` (or a change's `before`/`after` at `change`), may lead
    to a value secret by its place."""
    from auditor.redact.redactor import secret_place

    if change is _ANY_PLACE:
        steps = path.steps
        if steps and isinstance(steps[0], Key) and steps[0].name in ("before", "after"):
            return True
        change = None
    return bool(secret_place(_leaf_place(path, place, change)))


def _keyed(raw: Any) -> bool:
    """A literal as written holds a text or number a marker may stand for (not one that
    speaks of markers, `starts_with: "[secret "`, which is compared with the marker's text
    by `run` too)."""
    if isinstance(raw, str):
        return "[secret" not in raw
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return True
    if isinstance(raw, list):
        return any(_keyed(item) for item in raw)
    if isinstance(raw, dict):
        return any(_keyed(value) for value in raw.values())
    return False


def number_literals(policy: PolicySet) -> frozenset[str]:
    """The number literals (as the run writes a number, `number_text`) a rule of `policy`
    compares a value with, anywhere: one the state file's memory of secrets holds makes the
    value equal to it a marker at a plain place too (an `env` PIN copied into another
    setting), which `run` reads by the state's key and a bundle cannot; a copy of the policy
    writes a number as it is, so it marks nothing redacted (a text literal equal to such a
    secret is its marker in the copy)."""
    return frozenset(text for rule in policy.rules for text in rule_number_literals(rule))


def rule_number_literals(rule: Rule) -> Iterator[str]:
    """`number_literals` of one rule (some may repeat)."""
    from auditor.redact.redactor import number_text

    def numbers(raw: Any) -> Iterator[str]:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            yield number_text(raw)
        elif isinstance(raw, list):
            for item in raw:
                yield from numbers(item)
        elif isinstance(raw, dict):
            for value in raw.values():
                yield from numbers(value)

    for cond in (rule.condition, rule.when):
        if cond is not None:
            for leaf, _ in iter_leaves(cond):
                for op, arg, raw in leaf.ops:
                    if not isinstance(arg, Ref) and op.name not in _KEYLESS_OPS:
                        yield from numbers(raw)


#: `Redactor.literals_hidden`: a function hiding the given literals in a text (None: none can).
HideLiterals = Callable[[Iterable[str]], Redact | None]


def with_literals_hidden(
    policy: PolicySet, literals: Mapping[str, tuple[str, ...]], hide: HideLiterals
) -> PolicySet:
    """`policy` (as `redacted_policy` gave it) with each rule's own secret literals
    (`literals`, by rule id: `hidden_literals` of the policy as loaded) replaced by their
    markers (`hide`) in that rule's shown texts alone: its title, description and
    remediation, its tags and controls (reviewer R28 #6: a literal written again as a tag
    was in clear in findings.json), and each leaf's argument as written (what messages and
    evidence show as the expectation) and `default:`. Its paths, selectors, prepared
    arguments (a rule judges by fingerprint, `auditor.operators.hidden`), id and the enums
    stay as they are."""
    if not literals:
        return policy
    rules = []
    for rule in policy.rules:
        found = literals.get(rule.id)
        shown = None if not found else hide(found)
        rules.append(rule if shown is None else _rule_texts_hidden(rule, found or (), shown))
    if all(a is b for a, b in zip(rules, policy.rules, strict=True)):
        return policy
    return replace(policy, rules=tuple(rules))


def _rule_texts_hidden(rule: Rule, literals: tuple[str, ...], hide: Redact) -> Rule:
    pattern = _Then(_RegexLiterals(literals, hide), hide)
    return _rebuilt(rule, hide, lambda cond: _arguments_hidden(cond, hide, pattern))


def _arguments_hidden(cond: Condition, hide: Redact, pattern: Redact) -> Condition:
    """`cond` with `hide` on each leaf's arguments as written and `default:` (nothing else);
    `pattern` on a pattern's (`matches`/`not_matches`: a literal in it with its punctuation
    escaped too, `orange\\-key`)."""

    def leaf(cond: Leaf) -> Leaf:
        ops = tuple(
            (op, arg, _written(raw, pattern if op.name in _REGEX_OPS else hide))
            for op, arg, raw in cond.ops
        )
        default = _written(cond.default, hide)
        if default is cond.default and all(
            n[2] is o[2] for n, o in zip(ops, cond.ops, strict=True)
        ):
            return cond
        return replace(cond, ops=ops, default=default)

    return _mapped(cond, leaf)


def _mapped(
    cond: Condition,
    leaf: Callable[[Leaf], Leaf],
    path: Callable[[CompiledPath], CompiledPath] | None = None,
) -> Condition:
    """`cond` with `leaf` applied to each leaf and `path` to each quantifier's array path: the
    very objects where nothing changed (a rule that holds nothing to hide stays itself)."""
    if isinstance(cond, Leaf):
        return leaf(cond)
    if isinstance(cond, Logic):
        children = tuple(_mapped(c, leaf, path) for c in cond.children)
        if all(a is b for a, b in zip(children, cond.children, strict=True)):
            return cond
        return Logic(cond.kind, children)
    inner = _mapped(cond.condition, leaf, path)
    array = cond.path if path is None else path(cond.path)
    if inner is cond.condition and array is cond.path:
        return cond
    return Quantifier(cond.kind, array, inner)


#: Operators whose literal is compared with the whole value (or an element of it, `subset_of`).
_WHOLE_OPS = frozenset({"equals", "not_equals", "in", "not_in", "from", "to", "subset_of"})
#: Operators whose literal may be a part of the value (a substring, a prefix).
_PART_OPS = frozenset(
    {"contains", "contains_all", "contains_any", "excludes", "starts_with", "ends_with"}
    | {"starts_with_any"}
)
_REGEX_OPS = frozenset({"matches", "not_matches"})
#: A pattern that is a literal text (its escapes of punctuation undone), maybe anchored.
_PLAIN_PATTERN = re.compile(
    r"(?P<a>\\A|\^)?(?P<body>(?:[^\\.^$|?*+()\[\]{}]|\\[^A-Za-z0-9])+)(?P<z>\$|\\z)?"
)


def secret_literals(rule: Rule) -> list[tuple[str, bool]]:
    """The string literals of `rule` (its `assert` and `when`) compared with a value that is
    secret by its place, as the redactor decides places (`child_place`: `apiKey`, every
    value under `env` or `extraHeaders`, a `hosted` credential), each with whether it may be
    only a part of the value (`starts_with`, `contains`, a pattern's literal text). Paths
    inside `each`/`some`/`none` are read from the array's place; under `changes[]`, a change's
    `before` and `after` sit where its `path` (a literal the element's `path` is compared
    with, or a `[path=…]` selector: of the quantifier's array, or in a leaf's own path,
    `changes[path=$.env.X].after`) says. A pattern counts when it is plain text or an
    alternation of plain texts (`^OLD$|^\\[secret `: each text). A `default:` at such a
    place is one too. A `{ref: …}` is no literal."""
    from auditor.redact.redactor import ROOT

    out: list[tuple[str, bool]] = []
    for cond in (rule.condition, rule.when):
        if cond is not None:
            _literals_of(cond, ROOT, None, out)
    return out


def _literals_of(
    cond: Condition, place: Place, change: Place | None, out: list[tuple[str, bool]]
) -> None:
    """`secret_literals` of `cond`, its paths read from `place`; `change`, inside a quantifier
    over `changes[]`: the place its `before`/`after` sit (None: not there)."""
    from auditor.redact.redactor import secret_place

    if isinstance(cond, Logic):
        for child in cond.children:
            _literals_of(child, place, change, out)
        return
    if isinstance(cond, Quantifier):
        inner = _leaf_place(cond.path, place, change)
        changed = _change_place(cond) if _is_changes(cond.path) else None
        _literals_of(cond.condition, inner, changed, out)
        return
    if not any(secret_place(_leaf_place(path, place, change)) for path in cond.paths):
        return
    for op, arg, raw in cond.ops:
        if isinstance(arg, Ref):
            continue
        if op.name in _WHOLE_OPS:
            out.extend((text, False) for text in _strings(raw))
        elif op.name in _PART_OPS:
            out.extend((text, True) for text in _strings(raw))
        elif op.name in _REGEX_OPS and isinstance(raw, str):
            out.extend((body, not (start and end)) for body, start, end in _plain_texts(raw))
    out.extend((text, False) for text in _strings(cond.default))


def _plain_texts(pattern: str) -> list[tuple[str, bool, bool]]:
    r"""The texts a pattern that is plain text, or an alternation of plain texts, matches
    (`^OLD$`, `^OLD$|^NEW$`, `^OLD$|^\[secret `: the marker alternative `policy lint`
    advises), each with its escapes of punctuation undone and whether it is anchored at its
    start and at its end; none when any alternative is more than a text."""
    out = []
    for alternative in _alternatives(pattern):
        plain = _PLAIN_PATTERN.fullmatch(alternative)
        if plain is None:
            return []
        body = re.sub(r"\\(.)", r"\1", plain["body"])
        out.append((body, bool(plain["a"]), bool(plain["z"])))
    return out


def _alternatives(pattern: str) -> list[str]:
    """`pattern` split at each `|` that is no escaped one (a plain text has no group)."""
    parts, start, at = [], 0, 0
    while at < len(pattern):
        if pattern[at] == "\\":
            at += 2
            continue
        if pattern[at] == "|":
            parts.append(pattern[start:at])
            start = at + 1
        at += 1
    return [*parts, pattern[start:]]


def _leaf_place(path: CompiledPath, place: Place, change: Place | None) -> Place:
    """The place `path` leads to from `place`; under `changes[]`, from a change's `before` or
    `after` at the change's place."""
    steps = path.steps
    if (
        change is not None
        and steps
        and isinstance(steps[0], Key)
        and steps[0].name in ("before", "after")
    ):
        return _place_of(steps[1:], change)
    selected = _selected_change(steps)
    if selected is not None:
        return selected
    return _place_of(steps, place)


def _selected_change(steps: tuple[Step, ...]) -> Place | None:
    """The place a change's `before`/`after` read by a leaf path such as
    `changes[path=$.env.X].after` (`changes[kind=changed][path=…].before.k` too) leads to:
    from the place its `[path=…]` selector names; None for any other path."""
    if not steps or steps[0] != Key("changes"):
        return None
    at, named = 1, None
    while at < len(steps) and isinstance(steps[at], Select):
        select = steps[at]
        assert isinstance(select, Select)
        if select.field == "path" and isinstance(select.value, str):
            named = _settings_place(select.value)
        at += 1
    step = steps[at] if at < len(steps) else None
    if named is None or not (isinstance(step, Key) and step.name in ("before", "after")):
        return None
    return _place_of(steps[at + 1 :], named)


def _place_of(steps: tuple[Step, ...], place: Place) -> Place:
    """The place `steps` lead to from `place` (`child_place` key by key; an array's element
    sits at the array's place)."""
    from auditor.redact.redactor import child_place

    for step in steps:
        if isinstance(step, Key):
            place = child_place(step.name, place)
        elif isinstance(step, Star):  # an object's every value, or an array's every element
            any_key = child_place(None, place)
            place = any_key if any_key[0] else place
    return place


def _is_changes(path: CompiledPath) -> bool:
    """`changes`, maybe with a selector (`changes[kind=changed]`): a change step's list."""
    steps = path.steps
    return (
        bool(steps)
        and steps[0] == Key("changes")
        and all(not isinstance(s, Key) for s in steps[1:])
    )


#: How a change's `path` compared by each operator names a place: the whole path, its start.
_PATH_WHOLE_OR_START = frozenset({"equals", "in", "starts_with", "starts_with_any"})


def _change_place(cond: Quantifier) -> Place:
    r"""Where the changes a quantifier over `changes[]` reads sit: secret when a `[path=…]`
    selector, or a literal its element's `path` is compared with, names a place secret in
    the settings: the whole path or its start (`equals`, `in`, `starts_with`…:
    `$.env.DEPLOY_KEY`), its end (`ends_with: .apiKey`, `_suffix_place`), or a pattern that
    is a plain text once its escapes are undone (`matches`/`not_matches`:
    `^\$\.env\.DEPLOY_KEY$`, the start of a path when anchored at `^`, else its end); else
    the settings' root. (One secret path among several makes `before` and `after` secret for
    all, `not_matches` too: that only hides a literal too many in the rule's own texts.)"""
    from auditor.redact.redactor import ROOT, secret_place

    places: list[Place | None] = [
        _settings_place(s.value)
        for s in cond.path.steps
        if isinstance(s, Select) and s.field == "path" and isinstance(s.value, str)
    ]
    for leaf, relative in iter_leaves(cond.condition):
        if relative or [p.text for p in leaf.paths] != ["path"]:
            continue
        for op, arg, raw in leaf.ops:
            if isinstance(arg, Ref):
                continue
            if op.name in _PATH_WHOLE_OR_START:
                places.extend(_settings_place(text) for text in _strings(raw))
            elif op.name == "ends_with":
                places.extend(_suffix_place(text) for text in _strings(raw))
            elif op.name in _REGEX_OPS and isinstance(raw, str):
                for body, start, _end in _plain_texts(raw):
                    places.append(_settings_place(body) if start else _suffix_place(body))
    secret = [p for p in places if p is not None and secret_place(p)]
    if secret:
        return secret[0]
    object_places = [p for p in places if p is not None]
    return object_places[0] if len(object_places) == 1 else ROOT


def _suffix_place(text: str) -> Place | None:
    """The place of a settings path that ends with `text` (`.apiKey`, `.env.DEPLOY_KEY`),
    wherever it sits, decided to hide: secret when its keys walked from the root are
    (`.env.X`, `.extraHeaders.Authorization`) or its last key is on its own (`apiKey`,
    `Token`, at any depth); a text that is no path's end is judged by the name it ends with
    (`'].apiKey`). None when it is not secret (the object it ends in is not known)."""
    from auditor.common import paths
    from auditor.redact.redactor import ROOT, child_place, secret_place

    texts = [text if text.startswith("$") else ("$" if text[:1] in ".[" else "$.") + text]
    name = re.search(r"[A-Za-z0-9_-]+$", text)
    if name is not None:
        texts.append("$." + name.group())
    for written in texts:
        try:
            parts = paths.parse(written.rstrip(".["))
        except ValueError:
            continue
        keys = [part for part in parts if isinstance(part, str)]
        place = ROOT
        for key in keys:
            place = child_place(key, place)
        if secret_place(place):
            return place
        if keys and secret_place(last := child_place(keys[-1], ROOT)):
            return last
    return None


def _settings_place(text: str) -> Place | None:
    """The place in the settings of a path as changes and reports write it
    (`$.customModels[?id=='gw'].apiKey`, or its start `$.env.`); None when it is none."""
    from auditor.common import paths
    from auditor.redact.redactor import ROOT, child_place

    text = text.rstrip(".[")
    try:
        parts = paths.parse(text)
    except ValueError:
        return None
    place = ROOT
    for part in parts:
        if isinstance(part, str):
            place = child_place(part, place)
    return place


def _strings(raw: Any) -> list[str]:
    """The strings of a literal as written: itself, a list's items, an object's values."""
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list):
        return [s for item in raw for s in _strings(item)]
    if isinstance(raw, dict):
        return [s for value in raw.values() for s in _strings(value)]
    return []


def redacted_rule(rule: Rule, redact: Redact) -> Rule:
    """`rule` with the secrets in its text replaced by markers, or `rule` itself: its title,
    description, remediation, tags and controls, and in its conditions every literal as
    written, `default:` value and path (each key and `[field=value]` of it, a `{ref: …}`'s
    too: a secret key or value in the data is a marker there, so the redacted path finds it)."""
    return _rebuilt(rule, redact, lambda cond: _condition(cond, redact))


def _rebuilt(rule: Rule, text: Redact, condition_of: Callable[[Condition], Condition]) -> Rule:
    """`rule` with `text` applied to its title, description, remediation, tags and controls
    and `condition_of` to its `assert` and `when`; `rule` itself when nothing changed."""
    title, description = text(rule.title), text(rule.description)
    remediation = text(rule.remediation)
    tags, controls = _texts(rule.tags, text), _texts(rule.controls, text)
    condition = condition_of(rule.condition)
    when = None if rule.when is None else condition_of(rule.when)
    if (
        (title, description, remediation) == (rule.title, rule.description, rule.remediation)
        and tags is rule.tags
        and controls is rule.controls
        and condition is rule.condition
        and when is rule.when
    ):
        return rule
    return replace(
        rule,
        title=title,
        description=description,
        remediation=remediation,
        tags=tags,
        controls=controls,
        condition=condition,
        when=when,
    )


def _texts(texts: tuple[str, ...], redact: Redact) -> tuple[str, ...]:
    out = tuple(redact(text) for text in texts)
    return texts if out == texts else out


def _condition(cond: Condition, redact: Redact) -> Condition:
    def leaf(cond: Leaf) -> Leaf:
        ops = tuple(
            (op, _prepared(arg, redact), _written(raw, redact)) for op, arg, raw in cond.ops
        )
        paths = tuple(_path(p, redact) for p in cond.paths)
        default = _written(cond.default, redact)
        if (
            all(a is b for a, b in zip(paths, cond.paths, strict=True))
            and default is cond.default
            and all(n[1] is o[1] and n[2] is o[2] for n, o in zip(ops, cond.ops, strict=True))
        ):
            return cond
        return replace(cond, paths=paths, ops=ops, default=default)  # `loose` kept

    return _mapped(cond, leaf, lambda array: _path(array, redact))


def _prepared(arg: Any, redact: Redact) -> Any:
    """A prepared argument: a `{ref: …}`'s path redacted, anything else as it is (the
    operators compare a literal with a marker by fingerprint)."""
    if isinstance(arg, Ref):
        path = _path(arg.path, redact)
        return arg if path is arg.path else Ref(path)
    return arg


def _path(path: CompiledPath, redact: Redact) -> CompiledPath:
    """`path` with each key, field and value redacted, and its text (what messages show)."""
    text = redact(path.text)
    if text == path.text and isinstance(redact, _Once) and redact.by_text:
        return path
    steps = tuple(_step(step, redact) for step in path.steps)
    if text == path.text and all(a is b for a, b in zip(steps, path.steps, strict=True)):
        return path
    return CompiledPath(text, steps)


def _step(step: Step, redact: Redact) -> Step:
    if isinstance(step, Key):
        name = redact(step.name)
        return step if name == step.name else Key(name)
    if isinstance(step, Select):
        field = redact(step.field)
        value = redact(step.value) if isinstance(step.value, str) else step.value
        raw = None if step.raw is None else redact(step.raw)
        if (field, value, raw) == (step.field, step.value, step.raw):
            return step
        return Select(field, value, raw)
    return step


def _written(raw: Any, redact: Redact) -> Any:
    """An argument as written, its strings redacted (the same object when none changed)."""
    if isinstance(raw, str):
        out = redact(raw)
        return raw if out == raw else out
    if isinstance(raw, list):
        items = [_written(item, redact) for item in raw]
        return raw if all(a is b for a, b in zip(items, raw, strict=True)) else items
    if isinstance(raw, dict):
        values = {k: _written(v, redact) for k, v in raw.items()}
        return raw if all(values[k] is v for k, v in raw.items()) else values
    return raw


#: Per rule id, that rule's secret literals (`hidden_literals`) and the function hiding them
#: (`Redactor.literals_hidden`): what `redacted_source` hides in that rule's item.
RuleLiterals = Mapping[str, tuple[tuple[str, ...], Redact]]


def secrets_hidden(
    redactor: Redactor, flagged: Iterable[str] = (), found: dict[str, list[str]] | None = None
) -> Redact:
    """A text with every secret the store remembers, every one the value detectors find in it
    (what `auditor policy lint` warns of) and every one of `flagged` (`flagged_secrets`: found
    in any string of the input files), replaced by its marker under the store's key: the
    markers the stored data and the reports have. Nothing is learned: a word of a policy file
    that only looks like a secret is not hidden from every later output. What the bundle's
    copies of the input files go through (`redacted_source`), and the copy a policy file's
    digest is taken of (`with_copy_digests`). `found`: what the detectors found in each text
    already (`flagged_secrets` fills it), so a text is not searched twice."""
    every = frozenset(flagged)
    detected = _Detected(found)

    def hidden(text: str) -> str:
        out = redactor.scrub_known(text)
        for secret in sorted({*every, *detected(out)}, key=len, reverse=True):
            out = out.replace(secret, redactor.marker(secret))
        return out

    return hidden


def flagged_secrets(
    redactor: Redactor,
    texts: Iterable[tuple[str, str]],
    found: dict[str, list[str]] | None = None,
) -> set[str]:
    """The secrets the value detectors find in any string (key or value) of the policy files
    (`texts`: each file's text and name). `run` remembers one once it flags it, in a title
    (`password=…`), and hides it wherever the policy writes it again; the copy hides it there
    too (reviewer R28 #3: the copy hid only the flagged string, and the bundle's reports
    showed the other in clear). `found` keeps what was found in each text searched."""
    from auditor.policy.lint import all_strings
    from auditor.policy.yamlsafe import load_text

    detected = _Detected(found)
    flagged: set[str] = set()
    for text, name in texts:
        for _, value, _ in all_strings(load_text(text, name).data, ()):
            flagged.update(detected(redactor.scrub_known(value)))
    return flagged


class _Detected:
    """`find_secrets` of a text, each text searched once (`found`: what was found, by text)."""

    def __init__(self, found: dict[str, list[str]] | None) -> None:
        from auditor.redact.values import find_secrets  # detect-secrets: not for shipped packs

        self.find = find_secrets
        self.found = {} if found is None else found

    def __call__(self, text: str) -> list[str]:
        out = self.found.get(text)
        if out is None:
            out = self.found[text] = self.find(text)
        return out


def rule_literals(
    redactor: Redactor, literals: Mapping[str, tuple[str, ...]], rule_ids: Iterable[str]
) -> RuleLiterals:
    """Per rule id of a policy file, its secret literals (`hidden_literals`) and the function
    hiding them (`Redactor.literals_hidden`), for the rules that have any that can be."""
    out = {}
    for rule_id in rule_ids:
        found = literals.get(rule_id)
        hide = redactor.literals_hidden(found) if found else None
        if found and hide is not None:
            out[rule_id] = (found, hide)
    return out


def with_copy_digests(policy: PolicySet, redactor: Redactor) -> PolicySet:
    """`policy` (as loaded: its files' texts, its rules' literals as written) with the digest
    of each file that holds a secret being the sha256 of its copy (`redacted_source`, as
    `export` makes it under the same state's key and memory of secrets, byte for byte the
    bundle's `inputs/policies/` copy): the digest the reports cite and the state file's
    `runs.policy_hashes` keeps. The sha256 of the file as written would let whoever holds a
    report (or the state file) and the bundle's copy test guesses of the secret offline,
    the marker giving its length, even with AUDITOR_FINGERPRINT_KEY set (tester T61 #3); the
    copy's digest changes with the secret too, its marker being the secret's keyed
    fingerprint. A file with nothing to hide keeps the sha256 of its bytes, as do the shipped
    packs (public text, the build's record: not read again). A file whose copy cannot be made
    (`export` refuses it) is cited by the sha256 of its marker under the state's key.
    The same object when no digest changes."""
    import hashlib

    from auditor.policy.yamlsafe import shipped_yaml

    record = shipped_yaml()
    own = [f for f in policy.files if f.text and f.sha256 not in record]
    if not own:
        return policy
    found: dict[str, list[str]] = {}  # what the detectors found in each text: searched once
    flagged = flagged_secrets(redactor, ((f.text, f.path) for f in own), found)
    redact = secrets_hidden(redactor, flagged, found)
    literals = hidden_literals(policy)
    digests: dict[int, str] = {}
    for file in own:
        rules = rule_literals(redactor, literals, file.rule_ids)
        try:
            copy = redacted_source(file.text, file.path, redact, rules)
        except PolicyError:
            digests[id(file)] = hashlib.sha256(redactor.marker(file.text).encode()).hexdigest()
            continue
        if copy != file.text:
            digests[id(file)] = hashlib.sha256(copy.encode("utf-8")).hexdigest()
    if not digests:
        return policy
    files = tuple(
        replace(f, sha256=digests[id(f)]) if id(f) in digests else f for f in policy.files
    )
    return replace(policy, files=files)


def with_digests_keyed_nowhere(policy: PolicySet) -> PolicySet:
    """`policy` with each file of the user's own cited by an HMAC-SHA256 of its bytes' digest
    under a random key kept nowhere: a digest that tells nothing and matches nothing, for a
    report made before (or without) the state's key and whole memory of secrets, which alone
    say which secrets a file holds (`with_copy_digests`). The sha256 of the file as written
    would let guesses of a secret the state knows, one it learned from the data that the file
    writes in a title, be tested offline against a bundle's copy, where it is a marker giving
    its length (reviewer R32 #1). The shipped packs (public text) keep the sha256 of their
    bytes."""
    import hmac
    import os

    from auditor.policy.yamlsafe import shipped_yaml

    shipped, key = shipped_yaml(), os.urandom(32)
    files = tuple(
        f
        if f.sha256 in shipped
        else replace(f, sha256=hmac.new(key, f.sha256.encode(), "sha256").hexdigest())
        for f in policy.files
    )
    return replace(policy, files=files)


def redacted_source(text: str, file: str, redact: Redact, rules: RuleLiterals | None = None) -> str:
    """The text of a YAML (or JSON) input file with every string scalar, key or value, that
    `redact` changes written instead as a double-quoted string of what it gives (a secret
    becomes its marker), and every comment through `redact` too; everything else stays as
    written, byte for byte, so the copy reads as the file did but for those strings. The copy
    is read back and must give the file's data with those strings replaced; anything else (a
    construct this does not rewrite) is a `PolicyError` naming the file, so no secret is
    copied. A text with nothing to redact is returned as it is.

    `rules` (a policy file's rules' secret literals, by rule id): each is its marker wherever
    it is written in its own rule's item of `rules:` (a part of a longer scalar too: a
    pattern around it, `"old:<key>"`, a tag, a control; reviewer R28 #2 and #6: the copy hid
    a scalar that was the literal whole alone, and the bundle's reports showed the rest),
    but for the rule's `id` and its paths, which `run` shows as written too; every rule's
    literals are hidden in `defaults:` (whose tags and controls every rule takes) and in each
    comment of the file. Every other rule, an enum and the rest of the file stay as written
    but for what `redact` hides (a model id a rule compares with an `env` value judges
    elsewhere as written). Where a marker cannot stand as plain text it is written so the
    copy still loads (`_shown_by_node`): in a pattern of `matches` / `not_matches`, its text
    escaped (a text, never a character class `[secret fp:…]`); in a control id,
    `[secret_fp:…_len:N]` (`_ControlShown`); in a path's key or `[field=value]` selector, a
    quoted step (`[apiKey='[secret fp:…]']`, `_PathShown`). A result such a copy judges
    otherwise than `run` is named by `export` (`notReproduced`: a copy that differs is
    compared)."""
    import bisect
    import json

    from auditor.policy import yamlparse
    from auditor.policy.loader import plain
    from auditor.policy.yamlsafe import load_text, mark_index

    read = load_text(text, file)  # a file the loader refuses: its PolicyError
    data = plain(read.data, read)  # an unquoted time as the text written, as the loader reads it
    clean = _unchanged(text, data, redact)
    if clean and not rules:
        return text  # (no node is composed: a 600 KB model took 8 s, for nothing to hide)
    every = _every_literal(redact, rules or {})
    is_json = yamlparse.is_json(text)
    if _ODD_BREAK.search(text) and not is_json:
        # The loader's C parser reads NEL, U+2028 and U+2029 as line breaks, the compose that
        # places each scalar does not: a value or a comment is not where the copy would cut
        # it (reviewer R84 #1: a block scalar's header ending in NEL left its token in clear).
        # JSON is read as JSON, where they are characters of a string (R85 #4).
        _refused(
            file,
            "and a line break YAML parsers read differently (NEL, U+2028, U+2029)",
            "write plain line breaks",
        )
    if not is_json and _held_by_directive_or_tag(text, every):
        # a YAML directive or a node's tag is no scalar: no marker can stand there, and it
        # was copied as written (R85 #1: `%TAG !ghp_…! tag:yaml.org,2002:`)
        _refused(file, "in a YAML directive or tag", "take it out of the directive or tag")
    root = yamlparse.compose(text, pure=True)
    by_node, by_parts = _shown_by_node(root, redact, every, rules or {})
    shown = _Local(redact, by_node)
    times = _time_texts(root, data)  # an unquoted time's node: the text the loader reads
    edits: dict[int, tuple[int, str]] = {}
    spans: list[tuple[int, int]] = []
    for node in _scalars(root):
        shown.node = id(node)
        # (the C parser's marks leave out a byte-order mark: R86 #3)
        start, end = mark_index(node.start_mark, text), mark_index(node.end_mark, text)
        written = text[start:end]
        props = re.match(r"(?:[&!]\S*\s+)*", written)
        keep = props.end() if props else 0
        content, header = start, ""
        if node.style in ("|", ">"):  # its header line (`|-2 # a comment`) is no content,
            line_end = _line_end(text, start + keep)  # to any line break (a lone CR: R89 #6)
            header = text[start + keep : line_end]
            content = min(end, line_end + (2 if text.startswith("\r\n", line_end) else 1))
        spans.append((content, end))
        if node.tag == _INT_TAG and any(every(t) != t for t in _number_texts(written)):
            # a number whose hex spells a secret (`0x<its hex>`): no marker can stand in a
            # number, and it was copied as written (reviewer R90 #3)
            _refused(file, "in a number (its hex spells it)", "write it as text")
        value = times.get(id(node), node.value)
        if is_json and written.startswith('"'):  # its string as JSON reads it (the compose
            with contextlib.suppress(ValueError):  # read a U+2028 in it as `?`: R86 #4; a
                value = json.loads(written)  # span that is no whole string: the read-back)
        if node.tag not in _TEXT_TAGS or (out := shown(value)) == value:
            continue
        note = re.search(r"[ \t]#.*", header)  # the header's comment, redacted, stays
        said = f" {every(note.group()[1:])}" if note else ""  # a comment: every literal hidden
        tail = len(written.rstrip())  # a block scalar's line breaks stay
        lead = written[:keep]  # its anchor and tag
        if id(node) in times:  # a quoted marker is no time: its `!!timestamp` tag goes
            lead = re.sub(r"!\S*\s+", "", lead)
        new = lead + _double_quoted(out) + said + written[tail:]
        edits[start] = (end, new)
    spans.sort()
    starts = [s for s, _ in spans]
    edited = sorted((s, e) for s, (e, _) in edits.items())
    line_done = -1  # a comment runs to its line's end: no `#` before then starts another
    for m in _COMMENT.finditer(text):  # a `#` outside every scalar
        at = bisect.bisect_right(starts, m.start()) - 1
        if m.start() < line_done or (at >= 0 and spans[at][0] <= m.start() < spans[at][1]):
            continue
        cut = bisect.bisect_right(edited, (m.start(), len(text) + 1)) - 1
        if cut >= 0 and edited[cut][0] <= m.start() < edited[cut][1]:
            continue  # in the header of a block scalar rewritten whole, its comment kept there
        line_done = end = _line_end(text, m.start())
        # a comment judges nothing: every secret and every rule's literal hidden in it
        if (out := every(text[m.start() : end])) != text[m.start() : end]:
            edits[m.start()] = (end, out.replace("\n", " "))
    if not edits and clean and not rules:
        return text
    # (no edit, though something is to hide: the copy, the text as written, is read back and
    # compared as any copy is, so a value no rewrite reached is refused, never copied)
    pieces, done = [], 0
    for start in sorted(edits):
        end, new = edits[start]
        pieces += [text[done:start], new]
        done = end
    copy = "".join([*pieces, text[done:]])
    expected = _redacted_data(data, redact, by_parts)
    try:
        again = load_text(copy, file)
        same = plain(again.data, again) == expected
    except (PolicyError, UnicodeError):  # (a lone surrogate written raw: R85 #3)
        same = False
    if not same and root is None:  # JSON no YAML parser composes (a line break before a `:`,
        # a key over 1,024 characters): its strings cannot be placed (R89 #4)
        _refused(file, "in JSON whose strings cannot be placed", "write it as json.dumps does")
    if not same:
        _refused(file)
    return copy


_ODD_BREAK = re.compile("[\x85\u2028\u2029]")


def _double_quoted(text: str) -> str:
    """`text` as a YAML double-quoted string: JSON's, with what `json.dumps` writes raw and
    YAML does not read raw escaped: NEL, U+2028 and U+2029, which the loader's C parser folds
    as line breaks in a quoted scalar, and the characters YAML refuses in a file (DEL and the
    C1 controls, U+FFFE, U+FFFF, a lone surrogate), so a `"\\N"`, `"\\x7f"` or `"\\uFFFE"` in
    the string holding a token is copied, not refused (reviewer R85 #5, R89 #5)."""
    import json

    quoted = json.dumps(text, ensure_ascii=False)
    return _RAW_UNREAD.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


_RAW_UNREAD = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


# Where a directive (`%TAG !e! tag:…`, to its line's end) or a tag (`!e!str`, `!<tag:…>`) may
# be: every `%` and `!` run, in or out of a scalar or a comment, after a byte-order mark or a
# lone CR too (a superset, cheap: `_held_by_directive_or_tag` reads the tokens only when one
# of these holds what `redact` changes).
_DIRECTIVE_OR_TAG = re.compile(r"%[^\r\n\x85\u2028\u2029]*|![^\s,\[\]{}]*")


def _held_by_directive_or_tag(text: str, redact: Redact) -> bool:
    """Whether a YAML directive or a node's tag of `text` holds what `redact` changes, told
    by the scanner's tokens (a `!` or `%` in a scalar or a comment, `"Hello!<token>"`, is the
    scalar's or the comment's: R86 #1). True when the text cannot be scanned and a `%` or `!`
    run holds such a thing (it cannot be told: refused, never copied)."""
    if not any(redact(m.group()) != m.group() for m in _DIRECTIVE_OR_TAG.finditer(text)):
        return False
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from auditor.policy.yamlsafe import mark_index

    for pure in (True, False):  # (the C scanner reads what the loader's C parser reads:
        try:  # a tab after `severity:`, which the pure one refuses: R87 #2)
            tokens = list(YAML(typ="safe", pure=pure).scan(text))
            break
        except (YAMLError, ValueError):
            continue
    else:
        return True
    for token in tokens:
        kind = type(token).__name__
        if kind == "DirectiveToken":  # its whole line (a reserved directive's words are no
            start = mark_index(token.start_mark, text)  # part of its value) to its first `#`,
            words = [text[start : _line_end(text, start)].split("#", 1)[0]]  # from which the
            # copy's comment pass rewrites it, a comment or not (R87 #3: `%YAML 1.1 # <token>`
            # was refused as a token in the directive)
        elif kind == "TagToken":
            words = [w for w in _flat(token.value) if isinstance(w, str)]
            words.append("".join(words))
        else:
            continue
        if any(redact(w) != w for w in words):
            return True
    return False


def _flat(value: Any) -> Iterator[Any]:
    """The leaves of a token's value (nested tuples: `('TAG', ('!e!', 'tag:…'))`)."""
    if isinstance(value, tuple | list):
        for item in value:
            yield from _flat(item)
    else:
        yield value


def _refused(
    file: str, also: str = "", fix: str = "write each such value as a quoted string"
) -> NoReturn:
    """PolicyError: `file` cannot be copied with its secrets as markers (the caller cites it by
    its marker's digest; `export` refuses it); `fix`: what to do about it."""
    from auditor.policy.yamlsafe import problem

    why = "holds what looks like a secret where it cannot be copied redacted"
    why = f"{why} {also}" if also else why
    raise PolicyError([problem(SourceLocation(file, 1, 1), "", f"{why} ({fix})")])


# Every `#` is taken for a comment's start where it is outside every scalar: the loader reads
# one after a flow indicator or a closing quote (`{level: 1,# …`, `"x"# …`) and at a file's
# start after a byte-order mark, where a `#` after a blank or a line break (the pattern this
# was) never stood, and those comments were copied as written (reviewer R83 #2). A `#` that
# is no comment (in an anchor's name, a tag) is rewritten only when `redact` changes its
# line's rest, and the copy is then read back as the file (`redacted_source`).
_COMMENT = re.compile("#")
# A line's end as the loader's C parser reads it: NEL (U+0085) and the line and paragraph
# separators too, which a comment's text ran past (reviewer R83 #1).
_LINE_END = re.compile("[\r\n\x85\u2028\u2029]")


def _line_end(text: str, at: int) -> int:
    """Where the line holding `at` ends (its line break, or the text's end)."""
    found = _LINE_END.search(text, at)
    return len(text) if found is None else found.start()


def _unchanged(text: str, data: Any, redact: Redact) -> bool:
    """Whether `redacted_source` (with no rule's literals) surely leaves `text` as it is,
    told from the data alone: `redact` changes no string of it, key or value (each scalar
    it rewrites is one, as the loader reads it), nor the text from any `#` to its line's end
    (a superset of the comments, in or out of a scalar, whatever line break ends them: a
    scalar the compose reads on past a NEL holds that text), and no marker is written in it
    (one already there is escaped in a pattern, quoted in a path, rewritten in a control
    id). A tagged value's text is its data's (the loader refuses `!!null <text>`, a
    `!!bool` of no bool word: `yamlparse._mistyped`), so no text lies outside the data but
    comments, directives and tags."""
    from auditor.policy.lint import all_strings
    from auditor.redact.plain import MARKER_START

    if MARKER_START in text:
        return False
    if any(redact(value) != value for _, value, _ in all_strings(data, ())):
        return False
    if any(redact(h) != h for n in _large_ints(data) for h in [format(n, "x")]):
        return False  # (an integer of a secret's bytes: R90 #3)
    if _held_by_directive_or_tag(text, redact):
        return False
    for m in _COMMENT.finditer(text):
        comment = text[m.start() : _line_end(text, m.start())]
        if redact(comment) != comment:
            return False
    return True


def _large_ints(data: Any) -> Iterator[int]:
    """The integers of `data` (keys too) as long as a secret's bytes (6 or more), as absolute
    values."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 1 << 40:
            yield abs(item)


#: A rule's conditions, where a scalar may be a path or a pattern.
_CONDITION_KEYS = frozenset({"assert", "when"})
#: Keys whose scalar is a path (a quantifier's array, a leaf's or a `{ref: …}`'s path).
_PATH_KEYS = frozenset({"path", "each", "some", "none", "ref"})


class _Local:
    """`plain`, or, for the scalar being rewritten (`node`, its id) when it is in `local`,
    the function `_shown_by_node` gives it."""

    def __init__(self, plain: Redact, local: Mapping[int, Redact]) -> None:
        self.plain = plain
        self.local = local
        self.node = 0

    def __call__(self, text: str) -> str:
        return self.local.get(self.node, self.plain)(text)


def _every_literal(redact: Redact, rules: RuleLiterals) -> Redact:
    """`redact`, then every rule's literals (`rules`) hidden: for a comment and `defaults:`,
    which judge nothing or belong to every rule (the longest literals first, so one that
    holds another is hidden whole)."""
    out = redact
    for _, hide in sorted(rules.values(), key=lambda own: -max(map(len, own[0]), default=0)):
        out = _Then(out, hide)
    return out


def _shown_by_node(
    root: Any, redact: Redact, every: Redact, rules: RuleLiterals
) -> tuple[dict[int, Redact], dict[Parts, Redact]]:
    """The scalars of a policy file shown otherwise than through `redact` alone, by node id
    and by their place in the file's data, each with the function giving its text: in a
    rule's item, every scalar with its own literals (`rules`, by id) hidden too, but its `id`
    and its paths; in `defaults:`, every scalar with every rule's literals hidden (`every`);
    an item of `controls:` as a control id (`_ControlShown`); in a rule's `assert` and
    `when`, a path as a path (`_PathShown`: a marker in a key or selector quoted), and a
    pattern (`matches`/`not_matches`) with each literal in it (as written or escaped,
    `orange\\-key`) its marker and each marker in it escaped, so it is still a pattern and
    matches the text it matched (`_MarkersEscaped`)."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    by_node: dict[int, Redact] = {}
    by_parts: dict[Parts, Redact] = {}
    if not isinstance(root, MappingNode):
        return by_node, by_parts
    path = _PathShown(redact)
    for key, value in root.value:
        if isinstance(key, ScalarNode) and key.value == "defaults":
            _all_shown(value, ("defaults",), every, by_node, by_parts)
            _controls_shown(value, ("defaults",), _ControlShown(every), by_node, by_parts)
        if not (isinstance(key, ScalarNode) and key.value == "rules"):
            continue
        if not isinstance(value, SequenceNode):
            continue
        for index, item in enumerate(value.value):
            if not isinstance(item, MappingNode):
                continue
            fields = {k.value: v for k, v in item.value if isinstance(k, ScalarNode)}
            rid = fields.get("id")
            own = rules.get(rid.value) if isinstance(rid, ScalarNode) else None
            literals, hide = own if own is not None else ((), None)
            text = redact if hide is None else _Then(redact, hide)
            at: Parts = ("rules", index)
            if hide is not None:
                _all_shown(item, at, text, by_node, by_parts)
            _controls_shown(item, at, _ControlShown(text), by_node, by_parts)
            pattern = _MarkersEscaped(text, _RegexLiterals(literals, hide))
            for name, node in fields.items():
                if name == "id" and isinstance(node, ScalarNode):
                    by_node[id(node)] = by_parts[(*at, name)] = redact
                if name not in _CONDITION_KEYS:
                    continue
                objects = _ref_fields(node)
                for scalar, op, parts in _condition_scalars(node, name, (*at, name)):
                    if op in _REGEX_OPS:
                        by_node[id(scalar)] = by_parts[parts] = pattern
                    elif id(scalar) not in objects and _is_path(op, parts[3:]):
                        by_node[id(scalar)] = by_parts[parts] = path
    return by_node, by_parts


def _is_path(key: str, parts: Parts) -> bool:
    """Whether the scalar under `key`, at `parts` below a rule's `assert` or `when`, is a
    path: a leaf's `path` (or one of a list of them), a quantifier's array, or a `{ref: …}`
    right under an operator; not a text of an operator's argument (`equals: {path: x}` is an
    object literal, whose texts a rule's literal is hidden in), nor of a `default:` object
    (`default: {type: file, path: x}`: reviewer R29a #2, the key reached the bundle)."""
    from auditor.operators import REGISTRY

    keys = [p for p in parts if isinstance(p, str)]
    if "default" in keys:
        return False
    ops = [i for i, k in enumerate(keys) if k in REGISTRY]
    if key == "ref":  # right under its operator: `not_in: [{ref: x}]` is a list of objects
        return ops == [len(keys) - 2] and len(parts) >= 2 and parts[-2] == keys[-2]
    return key in _PATH_KEYS and not ops


def _time_texts(root: Any, data: Any) -> dict[int, str]:
    """The unquoted times under `root` (the file's nodes), by node, each as the loader reads
    it (`data`: the file's data through `plain`): the text written, or the ISO form of one
    ISO 8601 cannot read (`2001-12-14 21:59:43.10 -5`), which is what a rule compares (R30 #1:
    the copy compared the text written, missed that form, and refused a file with it)."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    found: dict[int, str] = {}
    stack = [(root, data)]
    while stack:
        node, value = stack.pop()
        if isinstance(node, ScalarNode):
            if node.tag == _TIME_TAG and isinstance(value, str):
                found[id(node)] = value
        elif isinstance(node, SequenceNode) and isinstance(value, list):
            stack.extend(zip(node.value, value, strict=False))
        elif isinstance(node, MappingNode) and isinstance(value, dict):
            stack.extend(zip((v for _, v in node.value), value.values(), strict=False))
    return found


def _ref_fields(node: Any) -> set[int]:
    """The `ref` fields of the objects under `node` that have other fields too: an object
    literal (`equals: {ref: x, type: y}`), not a `{ref: …}` path (reviewer R29a #2)."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode

    found: set[int] = set()
    for n in _nodes(node):
        if isinstance(n, MappingNode) and len(n.value) > 1:
            found |= {id(v) for k, v in n.value if isinstance(k, ScalarNode) and k.value == "ref"}
    return found


def _all_shown(
    node: Any,
    at: Parts,
    shown: Redact,
    by_node: dict[int, Redact],
    by_parts: dict[Parts, Redact],
) -> None:
    """Every string scalar value under `node` (at `at` in the file's data) shown by `shown`
    (a key stays `redact`'s: it names, as a rule's fields do)."""
    for scalar, _, parts in _condition_scalars(node, "", at):
        by_node[id(scalar)] = by_parts[parts] = shown


def _controls_shown(
    node: Any,
    at: Parts,
    control: Redact,
    by_node: dict[int, Redact],
    by_parts: dict[Parts, Redact],
) -> None:
    """The items of `controls:` of the mapping `node` (a rule's item or `defaults`, at `at`)
    shown by `control` (`_ControlShown`)."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    if not isinstance(node, MappingNode):
        return
    for key, value in node.value:
        if (
            isinstance(key, ScalarNode)
            and key.value == "controls"
            and isinstance(value, SequenceNode)
        ):
            for index, item in enumerate(value.value):
                if isinstance(item, ScalarNode):
                    by_node[id(item)] = by_parts[(*at, "controls", index)] = control


#: A control id as the loader takes it (`policy.schema`: FRAMEWORK:ID, no space).
_CONTROL_ID = re.compile(r"[A-Za-z0-9_.-]+:\S+")


class _ControlShown:
    """`redact` for a control id (`SOC2:CC6.1`), which has no space: each marker it writes in
    one is written `[secret_fp:…_len:N]`; a control whose id part, so written, still reads as
    a secret (`SOC2:password=[secret_fp:…]`) is its framework and its markers
    (`SOC2:[secret_fp:…]`), and one whose framework part was the secret is `redacted:` and
    its markers (so the copy is still a policy the loader takes; `run`
    refused none, and `export` refused its own copy)."""

    def __init__(self, redact: Redact) -> None:
        self.redact = redact

    def __call__(self, text: str) -> str:
        from auditor.redact import MARKER_RE
        from auditor.redact.plain import ANY_MARKER_RE

        out = self.redact(text)
        if out == text:
            return text
        out = MARKER_RE.sub(lambda m: f"[secret_fp:{m['fp']}_len:{m['len']}]", out)
        if _CONTROL_ID.fullmatch(out) and self.redact(out) == out:
            return out
        # the framework part was the secret, or what is left reads as one to a detector
        # (`SOC2:password=[secret_fp:…]`), which the bundle's evaluation would hide again
        # under its scratch key: the framework (when it is no secret) and the markers alone
        markers = "".join(m.group() for m in ANY_MARKER_RE.finditer(out))
        framework = text.partition(":")[0]
        kept = f"{framework}:{markers}"
        if (
            out.startswith(f"{framework}:")
            and _CONTROL_ID.fullmatch(kept)
            and self.redact(kept) == kept
        ):
            return kept
        return f"redacted:{markers}"


class _PathShown:
    """`redact` for a policy path (`customModels[apiKey=sk-…].id`): a step whose key or
    selector value `redact` changes (a secret in it is its marker, which has spaces and a
    `]`) is written in the path grammar's quoted form, `['<marker>']` for a key and
    `[apiKey='<marker>']` for a selector's value (a string, as the marker is), so the copy is
    still a path the loader takes and that selects what the marker stands for in the
    bundle's data (reviewer R28 #4: `export` refused its own copy, exit 2). A path that does
    not parse, or a secret `redact` still finds in the path so written (one across steps, a
    selector's field name), is `redact` of the whole text: the copy then fails to load and
    `export` stops (exit 2), never showing the secret."""

    def __init__(self, redact: Redact) -> None:
        self.redact = redact

    def __call__(self, text: str) -> str:
        from auditor.policy.pathexpr import PathSyntaxError, parse_steps

        out = self.redact(text)
        if out == text:
            return text
        try:
            parse_steps(out)
        except PathSyntaxError:
            pass
        else:
            return out
        quoted = _quoted_steps(text, self.redact)
        if quoted is None or self.redact(quoted) != quoted:
            return out
        return quoted


def _quoted_steps(text: str, redact: Redact) -> str | None:
    """`text` (a path) with each key or selector value `redact` changes written quoted
    (`_PathShown`); None when that cannot be (a path that does not parse, a field name or a
    text that holds both quotes)."""
    from auditor.policy.pathexpr import _TOKEN

    pos = 2 if text.startswith(("$.", "@.")) else 1 if text.startswith(("$[", "@[")) else 0
    pieces = [text[:pos]]
    first = True
    while pos < len(text):
        dot = ""
        if not first and text[pos] == ".":
            dot, pos = ".", pos + 1
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        piece = m.group()
        if m["key"] is not None:
            name = redact(m["key"])
            if name != m["key"]:
                step = _quoted(name)
                if step is None:
                    return None
                piece, dot = f"[{step}]", ""
        elif m["qkey"] is not None:
            step = _quoted(redact(m["qkey"]), m["q"])
            if step is None:
                return None
            piece = f"[{step}]"
        elif m["field"] is not None:
            if redact(m["field"]) != m["field"]:
                return None
            value = m["qval"] if m["qval"] is not None else m["val"]
            shown = redact(value)
            if shown != value or m["qval"] is not None:
                step = _quoted(shown, m["vq"] or "'")
                if step is None:
                    return None
                piece = f"[{m['field']}={step}]"
        pieces += [dot, piece]
        pos, first = m.end(), False
    return "".join(pieces)


def _quoted(text: str, quote: str = "'") -> str | None:
    """`text` between quotes (`quote`, else the other one) as a path's quoted key or value
    reads it: no escapes, so a text holding both quotes cannot be."""
    for q in (quote, "'" if quote == '"' else '"'):
        if q not in text:
            return f"{q}{text}{q}"
    return None


_STR_TAG = "tag:yaml.org,2002:str"
#: The scalars the loader reads as text: an unquoted date or time too, as written (reviewer
#: R29a #1: such a literal compared with a secret place was left in clear in the copy, and
#: the bundle's evaluation hid it again under a key of its own, so `verify` failed).
_TIME_TAG = "tag:yaml.org,2002:timestamp"
_TEXT_TAGS = frozenset({_STR_TAG, _TIME_TAG})
_INT_TAG = "tag:yaml.org,2002:int"


def _number_texts(written: str) -> list[str]:
    """An integer's hex, as written (`0x…`) and of its value (the redactor finds a secret's
    bytes in a hex run: an integer of a secret's bytes, whatever base it is written in). Not
    its decimal text: a number equal to a numeric secret (a PIN) is copied as written, as a
    number is judged by its value (a result that differs is named in `notReproduced`)."""
    texts = [written] if written.lower().lstrip("+-").startswith("0x") else []
    with contextlib.suppress(ValueError):
        texts.append(format(abs(int(written.replace("_", ""), 0)), "x"))
    return texts


class _Then:
    """`first`, then `then`."""

    def __init__(self, first: Redact, then: Redact) -> None:
        self.first, self.then = first, then

    def __call__(self, text: str) -> str:
        return self.then(self.first(text))


class _RegexLiterals:
    r"""In a pattern, each of `literals` (a rule's secret literals) written as it is or with
    any of its punctuation escaped (`orange\-leaked\.key`) replaced by its marker (`hide`),
    which `_MarkersEscaped` then escapes: the pattern's text shows no copy of it."""

    def __init__(self, literals: tuple[str, ...], hide: Redact | None) -> None:
        self.hide = hide
        self.found = [
            (re.compile("".join(_char_written(c) for c in literal)), literal)
            for literal in sorted(set(literals), key=len, reverse=True)
        ]

    def __call__(self, text: str) -> str:
        hide = self.hide
        if hide is None:
            return text
        for written, literal in self.found:
            if written.search(text):
                marker = hide(literal).replace("\\", "\\\\")  # a replacement's text
                text = written.sub(marker, text)
        return text


def _char_written(c: str) -> str:
    """How a character of a literal may be written in a pattern: as itself, or (punctuation)
    escaped."""
    if c.isalnum() or c == "_":
        return re.escape(c)
    return r"\\?" + re.escape(c)


class _MarkersEscaped:
    r"""`redact` for a pattern: each marker it writes in it is escaped (`\[secret\ fp:…\]`),
    as a pattern's literal text must be (unescaped, `[secret fp:… len:17]` is a character
    class: `not_matches` of it failed on any value holding a `c`); `first` (`_RegexLiterals`)
    before `redact`."""

    def __init__(self, redact: Redact, first: Redact | None = None) -> None:
        self.redact = redact if first is None else _Then(first, redact)

    def __call__(self, text: str) -> str:
        from auditor.redact import MARKER_RE

        out = self.redact(text)
        if out == text:
            return text
        pieces, done = [], 0
        for m in MARKER_RE.finditer(out):
            if m.start() > 0 and out[m.start() - 1] == "\\":
                continue  # already escaped (the `^\[secret ` alternative is no marker)
            pieces += [out[done : m.start()], re.escape(m.group())]
            done = m.end()
        return "".join([*pieces, out[done:]])


def _condition_scalars(node: Any, name: str, parts: Parts) -> Iterator[tuple[Any, str, Parts]]:
    """The string scalars under `node` (the value of key `name`, at `parts` in the file's
    data), each with its key (a list's item: the list's) and its place in the data."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    if isinstance(node, ScalarNode):
        if node.tag in _TEXT_TAGS:
            yield node, name, parts
    elif isinstance(node, SequenceNode):
        for index, child in enumerate(node.value):
            yield from _condition_scalars(child, name, (*parts, index))
    elif isinstance(node, MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, ScalarNode) else ""
            yield from _condition_scalars(v, key, (*parts, key))


def _scalars(node: Any) -> Any:
    """Every scalar node under `node`, keys too, each once (an alias is its anchor's node)."""
    from ruamel.yaml.nodes import ScalarNode

    return (n for n in _nodes(node) if isinstance(n, ScalarNode))


def _nodes(node: Any) -> Any:
    """Every node under `node` and itself, keys too, each once (an alias is its anchor's)."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    seen: set[int] = set()
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        if isinstance(n, SequenceNode):
            stack.extend(n.value)
        elif isinstance(n, MappingNode):
            for k, v in n.value:
                stack.extend((k, v))


def _redacted_data(
    value: Any, redact: Redact, special: Mapping[Parts, Redact] | None = None, at: Parts = ()
) -> Any:
    """Parsed data with every string (keys too) through `redact`, or the one `special` gives
    for its place (`_shown_by_node`)."""
    if isinstance(value, str):
        return (special or {}).get(at, redact)(value) if special else redact(value)
    if isinstance(value, list):
        return [_redacted_data(v, redact, special, (*at, i)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {
            _redacted_data(k, redact): _redacted_data(v, redact, special, (*at, k))
            for k, v in value.items()
        }
    return value
