"""Lint checks beyond the schema: rule paths (a quantifier's array, keys after `[*]` and
selectors too) that never appeared in the stored history, or vanished, and a `[key=value]`
that never picked an entry; a rule's text or literal that looks like a secret; a test a run
cannot decide on the marker the redactor leaves where a secret is (`undecided_warnings`); a
literal that decides nothing (`literal_warnings`); a readiness or org field no document has
(`field_warnings`).

Takes a `PolicySet` (and the stored revisions, ascending, streamed), gives `LintProblem`s:
each one's level, and its line formatted like every other policy problem
(`file:line:col: warning: $.rules[2].assert.path: …`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from auditor.common.paths import Match, parse, render
from auditor.models import Revision
from auditor.policy.conditions import Condition, Leaf, Logic
from auditor.policy.loader import PolicySet
from auditor.policy.model import Rule
from auditor.policy.pathexpr import Index, Key, Select, Star, Step, _pick
from auditor.policy.refs import Ref
from auditor.policy.yamlsafe import YamlDocument, load_yaml, problem

STAR = "[*]"


class LintProblem(NamedTuple):
    """One lint finding: its level, carried beside its line (never read back from the text,
    which quotes a rule's path and so may hold `: error: ` itself)."""

    level: Literal["error", "warning"]
    text: str


Keys = tuple[str, ...]
Parts = tuple[str | int, ...]
Steps = tuple[Step, ...]
_ALL = Star()
_ABSENT = object()  # no value (`None` is one)


@dataclass(frozen=True)
class _Watched:
    """One settings path a rule reads (a leaf's `path:`, a `{ref: …}`, a quantifier's array),
    from the settings root: its alternatives and where it is written."""

    rule: Rule
    where: Parts  # the YAML path of the `path:`, `ref:` or `each:`/`some:`/`none:` naming it
    steps: tuple[Steps, ...]


def _reached(node: Any, steps: Steps) -> Iterator[Any]:
    """The values `steps` lead to in `node`: through `[*]` every element, through
    `[key=value]` every entry it selects, through `[N]` that element."""
    for at, step in enumerate(steps):
        if isinstance(step, Key):
            if not isinstance(node, dict) or step.name not in node:
                return
            node = node[step.name]
            continue
        if not isinstance(node, list):
            return
        if isinstance(step, Index):
            if not -len(node) <= step.index < len(node):
                return
            node = node[step.index]
            continue
        rest = steps[at + 1 :]
        for item in node if isinstance(step, Star) else [node[i] for i in _pick(node, step)]:
            yield from _reached(item, rest)
        return
    yield node


def _present(node: Any, steps: Steps) -> bool:
    """`steps` lead to a value in `node` (in some element, some selected entry)."""
    return next(_reached(node, steps), _ABSENT) is not _ABSENT


def _reads(cond: Condition, where: Parts, prefix: Steps) -> Iterator[tuple[Parts, Steps, bool]]:
    """Every path `cond` reads, from the root (each array level a quantifier walks as `[*]`),
    with the YAML path naming it and whether a change operator reads it: leaf paths (each
    alternative), `{ref: …}` paths (read from the root), quantifiers' arrays."""
    if isinstance(cond, Leaf):
        for path in cond.paths:
            if path.steps:  # `@`: the element itself, read as its quantifier's array
                yield (*cond.where, "path"), (*prefix, *path.steps), cond.is_change
        if prefix == _OVER_CHANGES and any(p.steps == (_PATH,) for p in cond.paths):
            yield from _change_paths(cond)
        for op, arg, _ in cond.ops:
            if isinstance(arg, Ref) and arg.path.steps:
                yield (*cond.where, op.name, "ref"), arg.path.steps, False
    elif isinstance(cond, Logic):
        for at, child in enumerate(cond.children):
            inner = (*where, "not") if cond.kind == "not" else (*where, cond.kind, at)
            yield from _reads(child, inner, prefix)
    else:
        steps = (*prefix, *cond.path.steps)
        if steps:
            yield (*where, cond.kind), steps, False
        stars = sum(isinstance(step, Star) for step in cond.path.steps)
        if stars < 2:  # `a[*].b` walks the `b` of each element of `a`; deeper: not followed
            yield from _reads(
                cond.condition, (*where, "assert"), steps if stars else (*steps, _ALL)
            )


_OVER_CHANGES: Steps = (Key("changes"), _ALL)  # the element of `each|some|none: changes`
_PATH = Key("path")
# the operators whose literal a change's `path` is compared with as a whole
_PATH_OPS = ("equals", "not_equals", "in", "not_in")


def _change_paths(leaf: Leaf) -> Iterator[tuple[Parts, Steps, bool]]:
    """The settings paths a change's `path` is compared with in `leaf` (`{path: path, equals:
    "$.commandAllowlist"}`, as the shipped packs write it), each as a settings path read by a
    change operator: a misspelt one matches no change, so the rule passes every step."""
    for op, _, raw in leaf.ops:
        if op.name not in _PATH_OPS or isinstance(raw, dict):
            continue
        items = list(enumerate(raw)) if isinstance(raw, list) else [(None, raw)]
        for at, text in items:
            steps = _settings_path(text)
            if steps:
                where = (*leaf.where, op.name) if at is None else (*leaf.where, op.name, at)
                yield where, steps, True


def _settings_path(text: Any) -> Steps | None:
    """A change path (`$.customModels[?id=='x'].baseUrl`) as the steps of a rule's path."""
    if not isinstance(text, str):
        return None
    try:
        parts = parse(text)
    except ValueError:
        return None
    return tuple(
        Key(p)
        if isinstance(p, str)
        else Select(p.field, p.value, p.value if isinstance(p.value, str) else None)
        if isinstance(p, Match)
        else Index(p)
        for p in parts
    )


def _root(cond: Condition) -> Parts:
    """The YAML path of a compiled `assert` or `when` (`$.rules[2].assert`), from its first
    leaf (the compiler records where each leaf is written)."""
    while not isinstance(cond, Leaf):
        cond = cond.children[0] if isinstance(cond, Logic) else cond.condition
    return cond.where[:3]


_SIDES = ("before", "after")


def _settings_steps(rule: Rule, steps: Steps, *, change_leaf: bool = False) -> Steps | None:
    """The settings steps a path of `rule` reads (None when it reads no settings): a settings
    rule's paths as they are; a change rule's change-operator paths as they are, and its
    `before.…` / `after.…` paths without that first key (`changes`, `author`… are not
    settings)."""
    if rule.target == "settings" or change_leaf:
        return steps
    first = steps[0] if steps else None
    if rule.target == "change" and len(steps) > 1 and isinstance(first, Key):
        return steps[1:] if first.name in _SIDES else None
    return None


def _watched(policy: PolicySet) -> Iterator[_Watched]:
    """Every settings path each settings or change rule reads: leaf paths, change-operator
    paths, `before.`/`after.` paths, `{ref: …}` paths (refs read from the root) and the
    arrays `each`/`some`/`none` walk, whatever steps they take (`[*]`, `[key=value]`)."""
    for rule in policy.rules:
        if rule.target not in ("settings", "change"):
            continue
        for cond in (rule.when, rule.condition):
            if cond is None:
                continue
            found: dict[Parts, list[Steps]] = {}  # a leaf's alternatives: one `path:`
            for where, steps, change in _reads(cond, _root(cond), ()):
                read = _settings_steps(rule, steps, change_leaf=change)
                if read:
                    found.setdefault(where, []).append(read)
            for where, alternatives in found.items():
                yield _Watched(rule, where, tuple(alternatives))


def _key_form(steps: Steps) -> Steps:
    """The path with every array step as `[*]`: its keys are somewhere in the settings."""
    return tuple(_ALL if isinstance(step, Index | Select) else step for step in steps)


def _array_at(steps: Steps) -> int:
    """How many steps lead to the innermost array element of `steps` (0: none)."""
    return max((at + 1 for at, step in enumerate(steps) if not isinstance(step, Key)), default=0)


def _scope(steps: Steps) -> Steps:
    """The steps up to the innermost array element: present when that array has an element
    (a `[*]`) or the one an `[N]` or `[key=value]` picks: only then is the rest observable."""
    return steps[: _array_at(steps)]


def _selectors(steps: Steps) -> Iterator[tuple[Steps, Steps]]:
    """Each `[N]` / `[key=value]` of `steps`: the steps up to it, and the same with `[*]`
    instead (that array has an element: whether it picks one is observable)."""
    for at, step in enumerate(steps):
        if isinstance(step, Index | Select):
            yield steps[: at + 1], (*steps[:at], _ALL)


def _wanted(steps: Steps) -> Iterator[Steps]:
    """The paths whose presence judges `steps`: its keys, the exact path, their scopes, and
    each selector with its array."""
    keys = _key_form(steps)
    yield from (keys, _scope(keys), steps, _scope(steps))
    for picked, array in _selectors(steps):
        yield from (picked, array)


def _step_text(step: Step) -> str:
    if isinstance(step, Key):
        return f".{step.name}"
    if isinstance(step, Index):
        return f"[{step.index}]"
    if isinstance(step, Select):
        value = step.raw if step.raw is not None else f"'{step.value}'"
        return f"[{step.field}={value}]"
    return STAR


def _shown(steps: Steps) -> str:
    return "".join(map(_step_text, steps)).removeprefix(".")


def _quantified(w: _Watched) -> bool:
    """`w` is the array an `each` / `some` / `none` walks."""
    return w.where[-1] in _QUANTIFIERS


_QUANTIFIERS = ("each", "some", "none")


def _parent(steps: Steps) -> Steps | None:
    """The steps to the object holding a quantifier's array, when the array is named by a key
    (`hooks.Stop`: `hooks`)."""
    return steps[:-1] if steps and isinstance(steps[-1], Key) else None


def _keys_at(node: Any, steps: Steps, into: set[str]) -> None:
    """Add to `into` the keys of every object `steps` lead to in `node`."""
    for found in _reached(node, steps):
        if isinstance(found, dict):
            into.update(k for k in found if isinstance(k, str))


def history_warnings(policy: PolicySet, revisions: Iterable[Revision]) -> list[LintProblem]:
    """Warn for settings paths absent from every stored revision or gone from the latest, and
    for a `[key=value]` / `[N]` picking no entry in any (or not since some revision).

    The array a quantifier walks is optional by nature (`none: hooks.PreCompact`, a hook event
    the organization does not use: the rule's `on_missing`, which the author chose), so it is
    warned only where it looks like a typo: absent from every revision while the object that
    would hold it has a key close to its name (`commandDenyList`, where the settings have
    `commandDenylist`)."""
    watched = list(_watched(policy))
    last_seen: dict[Steps, int] = {}
    numbers: list[int] = []
    wanted = {want for w in watched for steps in w.steps for want in _wanted(steps)}
    # the keys beside each quantifier's array, across the history (for "did you mean")
    siblings: dict[Steps, set[str]] = {
        parent: set()
        for w in watched
        if _quantified(w)
        for steps in w.steps
        if (parent := _parent(_key_form(steps))) is not None
    }
    # Paths by their first key: a revision read from the store shares with the one before it
    # every object it left unchanged, so a first key whose value is the very object it was
    # keeps its paths' answers (present before: present now) without looking again.
    by_top: dict[str | None, list[Steps]] = {}
    for steps in wanted:
        top = steps[0].name if steps and isinstance(steps[0], Key) else None
        by_top.setdefault(top, []).append(steps)
    present: set[Steps] = set()  # the paths present in the previous revision
    # the paths `added` / `removed` read, and those found holding a list in some revision
    presence_leaves = _presence(policy)
    presence = {steps for *_, paths in presence_leaves for steps in paths}
    lists: set[Steps] = set()
    before: dict[str, Any] = {}
    for revision in revisions:  # one walk of the history, every path looked up in each
        numbers.append(revision.revision)
        settings = revision.settings
        for top, group in by_top.items():
            value = (
                settings.get(top, _ABSENT)
                if top is not None and isinstance(settings, dict)
                else _ABSENT
            )
            if top is not None and value is not _ABSENT and value is before.get(top, _ABSENT):
                found = [steps for steps in group if steps in present]  # unchanged
            else:
                found = [steps for steps in group if _present(settings, steps)]
                present.difference_update(group)
                present.update(found)
            for steps in found:
                last_seen[steps] = revision.revision
        for parent, keys in siblings.items():
            first = parent[0] if parent else None
            if (
                isinstance(first, Key)
                and isinstance(settings, dict)
                and first.name in before
                and settings.get(first.name, _ABSENT) is before[first.name]
            ):
                continue  # the object holding the array is the one looked at before
            _keys_at(settings, parent, keys)
        for steps in presence:
            first = steps[0] if steps else None
            if steps in lists or (
                isinstance(first, Key)
                and isinstance(settings, dict)
                and first.name in before
                and settings.get(first.name, _ABSENT) is before[first.name]
            ):
                continue  # known to hold a list, or the value looked at before
            if any(isinstance(value, list) for value in _reached(settings, steps)):
                lists.add(steps)
        before = settings if isinstance(settings, dict) else {}
    if not numbers:
        return []
    docs: dict[str, YamlDocument] = {}
    return [
        LintProblem("warning", msg)
        for w in watched
        if (msg := _warning(w, last_seen, numbers, docs, siblings))
    ] + [
        LintProblem("warning", _at(rule, where, _on_a_list(rule, op, listed[0]), docs))
        for rule, where, op, alternatives in presence_leaves
        if (listed := [a for a in alternatives if a in lists])
    ]


def _presence(policy: PolicySet) -> list[tuple[Rule, Parts, str, list[Steps]]]:
    """Each `added` / `removed` of a change rule: its rule, YAML path, operator and the
    settings paths its leaf reads; not a path the rule's `changes[]` idiom names too (`{path:
    path, equals: "$.x"}` under `none: changes`): there it means the list itself, on purpose."""
    found: list[tuple[Rule, Parts, str, list[Steps]]] = []
    for rule in policy.rules:
        if rule.target != "change":
            continue
        conds = [c for c in (rule.when, rule.condition) if c is not None]
        itemised = _literal_paths(conds)
        for cond in conds:
            for leaf, _ in _all_leaves(cond, ()):
                paths = [p.steps for p in leaf.paths if p.steps and p.steps not in itemised]
                found += [
                    (rule, (*leaf.where, op.name), op.name, paths)
                    for op, _, _ in leaf.ops
                    if op.name in _PRESENCE_OPS and paths
                ]
    return found


_PRESENCE_OPS = ("added", "removed")


def _literal_paths(conds: list[Condition]) -> set[Steps]:
    """The settings paths the `changes[]` idiom of these conditions names by a literal."""
    found: set[Steps] = set()
    for cond in conds:
        for leaf, keys in _all_leaves(cond, ()):
            if keys == ("changes", STAR) and any(p.steps == (_PATH,) for p in leaf.paths):
                found.update(steps for _, steps, _ in _change_paths(leaf))
    return found


def _on_a_list(rule: Rule, op: str, steps: Steps) -> str:
    """The warning for `added` / `removed` on a path that holds a list."""
    shown = _shown(steps)
    added = op == "added"
    moment = "appears (absent before)" if added else "goes (absent after)"
    entry = "added to it" if added else "removed from it"
    kind = "item_added" if added else "item_removed"
    return (
        f"rule {rule.id}: `{op}` on `{shown}`, which holds a list in the stored revisions, "
        f"is true only when the list itself {moment}, never when an entry is {entry}: for "
        f"entries, use `none: changes` with `{{path: kind, in: [{kind}]}}` and "
        f'`{{path: path, equals: "{render(_plain_parts(steps))}"}}`'
    )


def _plain_parts(steps: Steps) -> list[str | int]:
    """A path's keys and indexes as `render` takes them (a selector as `*`: only shown)."""
    return [
        s.name if isinstance(s, Key) else s.index if isinstance(s, Index) else "*" for s in steps
    ]


def _near(name: str, keys: set[str]) -> str | None:
    """A key of `keys` that `name` looks like a typo of: the same but for case, or one or two
    letters off (added, dropped, changed or swapped: `customModls`), ignoring case; the
    nearest, then the first in order. Not a word for another (`commandAllowlist` and
    `commandBlocklist`, `SubagentStop` and `SubagentStart`: more letters apart): other keys."""
    folded = name.casefold()
    found = sorted(
        (distance, key)
        for key in keys
        if key != name
        and (distance := _letters_off(folded, key.casefold(), _TYPO_LETTERS)) <= _TYPO_LETTERS
    )
    return found[0][1] if found else None


_TYPO_LETTERS = 2


def _letters_off(a: str, b: str, limit: int) -> int:
    """The optimal-string-alignment distance between `a` and `b` (insertions, deletions,
    substitutions, swaps of neighbours), or `limit + 1` once it is past `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return row[-1]


def _typo(w: _Watched, siblings: dict[Steps, set[str]], count: int) -> str | None:
    """For a quantifier's array absent from every revision: the warning, when a key beside
    it looks like what was meant; else None (an optional array nobody uses)."""
    for steps in w.steps:
        keys, parent = _key_form(steps), _parent(_key_form(steps))
        last = keys[-1] if keys else None
        if parent is None or not isinstance(last, Key):
            continue
        meant = _near(last.name, siblings.get(parent, set()))
        if meant is not None:
            shown = " / ".join(_shown(_key_form(p)) for p in w.steps)
            return f"`{shown}` appears in none of the {count} stored revisions (typo of `{meant}`?)"
    return None


def _warning(
    w: _Watched,
    last_seen: dict[Steps, int],
    numbers: list[int],
    docs: dict[str, YamlDocument],
    siblings: dict[Steps, set[str]],
) -> str | None:
    paths = list(w.steps)
    if _quantified(w):  # only a likely typo (an array gone or never used: nothing to walk)
        if any(_key_form(p) in last_seen for p in paths):
            return None
        text = _typo(w, siblings, len(numbers))
    else:
        # the keys first (no entry anywhere has them: a typo), then the exact path (the entry
        # a selector picks lacks the key), then the selectors themselves (they pick no entry)
        text = _judged(list(map(_key_form, paths)), last_seen, numbers)
        if text is None and any(p != _key_form(p) for p in paths):
            text = _judged(paths, last_seen, numbers) or _unpicked(paths, last_seen, numbers)
    if text is None:
        return None
    source = w.rule.source
    if source is None:
        return f"{w.rule.id}: warning: {text}"
    doc = docs.get(source.file) or docs.setdefault(source.file, load_yaml(Path(source.file)))
    where = w.where
    return problem(doc.locate(where), render(where), f"rule {w.rule.id}: {text}", level="warning")


def _judged(paths: list[Steps], last_seen: dict[Steps, int], numbers: list[int]) -> str | None:
    """Whether none of `paths` (a leaf's alternatives) is present, or none since some
    revision, where (and as late as) its scope was: `None` when one is, or when no scope ever
    was (every array on the way always empty: nothing to judge by)."""
    seen = [last_seen[p] for p in paths if p in last_seen]
    observable = [last_seen[s] for s in map(_scope, paths) if s in last_seen]
    shown = " / ".join(map(_shown, paths))
    if not observable:
        return None
    if not seen:
        count = len(numbers)
        return f"`{shown}` appears in none of the {count} stored revisions (typo or renamed key?)"
    if max(seen) < max(observable):
        ago = len(numbers) - 1 - numbers.index(max(seen))
        return f"`{shown}` last appeared in revision {max(seen)} ({ago} revisions ago)"
    return None


def _unpicked(paths: list[Steps], last_seen: dict[Steps, int], numbers: list[int]) -> str | None:
    """A `[key=value]` / `[N]` that matches no entry of its array in any stored revision
    where the array has entries (when no alternative is ever present), or none since some
    revision (a leaf of one path: another alternative may be read instead)."""
    resolved = any(p in last_seen for p in paths)
    for steps in paths:
        for picked, array in _selectors(steps):
            if array not in last_seen or (picked not in last_seen and resolved):
                break  # an array always empty (nothing to judge by), or another path read
            if picked not in last_seen:
                count = len(numbers)
                return (
                    f"`{_shown(picked)}` matches no entry in any of the {count} stored "
                    "revisions (typo, or an entry renamed or removed?)"
                )
            if len(paths) == 1 and last_seen[picked] < last_seen[array]:
                ago = len(numbers) - 1 - numbers.index(last_seen[picked])
                return (
                    f"`{_shown(picked)}` last matched an entry in revision "
                    f"{last_seen[picked]} ({ago} revisions ago)"
                )
    return None


def secret_warnings(policy: PolicySet) -> list[LintProblem]:
    """Warn for every string of a policy file (a rule's title, description, remediation, tags,
    controls, literal, `default:` value, path, the file's defaults and description: every
    value and key) that looks like a secret (the value detectors of `auditor.redact` match
    it): a policy file is read by whoever runs or reviews it. A rule id, an enum name or level
    that does is an error (`error:` lines): a run refuses it (`redacted_policy`), as no marker
    can stand for a name. The secret itself is never printed; outputs show it as a marker."""
    from auditor.redact.values import find_secrets  # detect-secrets: only when linting

    found: list[LintProblem] = []
    for file in policy.files:
        doc = load_yaml(Path(file.path))
        for where, text, at_key in all_strings(doc.data, ()):
            if find_secrets(text):
                found.append(_secret_problem(doc, where, at_key))
    return found


def _secret_problem(doc: YamlDocument, where: Parts, at_key: bool) -> LintProblem:
    from auditor.redact.values import find_secrets

    data = doc.data
    rule = data["rules"][where[1]] if where[:1] == ("rules",) and len(where) > 1 else None
    is_name = where[:1] == ("enums",) or (rule is not None and where[2:] == ("id",))
    if is_name:
        text = (
            "a rule id, an enum name or level holds what looks like a secret (a credential "
            "detector matches it): reports, the state file and waivers go by such names and no "
            "marker can stand for one, so a run refuses it; rename it and rotate the secret"
        )
        return LintProblem("error", problem(doc.locate(where, key=at_key), render(where), text))
    name = next((str(p) for p in reversed(where) if isinstance(p, str)), "")
    what = (
        f"its {name}"
        if len(where) >= 3 and where[2] in _RULE_TEXT
        else "the path"
        if name in ("path", "ref", "each", "some", "none")
        else "the `default` value"
        if name == "default"
        else f"the `{name}` literal"
        if rule is not None
        else f"the default {name}"
        if where[:1] == ("defaults",)
        else f"the file's {name}"
    )
    rule_id = rule.get("id") if isinstance(rule, dict) else None
    # a rule is named by its id, unless that is a secret too (its own error, not shown)
    owner = f"rule {rule_id}: " if isinstance(rule_id, str) and not find_secrets(rule_id) else ""
    text = (
        f"{owner}{what} holds what looks like a secret (a credential detector matches it): a "
        "policy file is read by whoever runs or reviews it, so rotate it; outputs show it as "
        "`[secret fp:… len:…]`"
    )
    line = problem(doc.locate(where, key=at_key), render(where), text, level="warning")
    return LintProblem("warning", line)


_RULE_TEXT = ("title", "description", "remediation", "tags", "controls")


def all_strings(value: Any, where: Parts) -> Iterator[tuple[Parts, str, bool]]:
    """Every string in YAML data, keys too, with where it is (and whether it is a key)."""
    if isinstance(value, str):
        yield where, value, False
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from all_strings(item, (*where, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield (*where, key), key, True
            yield from all_strings(item, (*where, str(key)))


# A value the redactor hid, as a run reads it: whole where a secret is by meaning (`apiKey`, a
# value of `env`, a hosted model's credential) and where an argv array's element is a password
# option's value (`["--api-key", X]`: `argv_secrets`); inside the text of a command line (a
# password argument, a token in a header) or of an argv element (`-pX`); an argv array holding
# a whole marker. The visible text around a marker inside a text is neutral: a pattern anchored
# at a command's start or end is decided by that text in a run, not by the marker.
_SAMPLE_MARKER = "[secret fp:0123abcd len:40]"
# A text holding a marker, with the visible text on both sides, on one side only (a token as a
# command's last word, `tool --token X`, or its first) and right after an option's dashes
# (`--api-key=X` is stored as `--[secret …]`): an anchored pattern is decided by the visible
# text in some of these forms and by the marker in others.
_SAMPLE_TEXTS = (
    f"x {_SAMPLE_MARKER} x",
    f"x {_SAMPLE_MARKER}",
    f"{_SAMPLE_MARKER} x",
    f"--{_SAMPLE_MARKER}",
)
_SAMPLE_ARGV = ["x", "--api-key", _SAMPLE_MARKER]
# The marker a literal of the rule has under the sample's key: never the sample's own (a rule's
# literal is not the hidden value), so equality is decided as a run decides it, by fingerprint.
_OTHER_MARKER = "[secret fp:fedcba98 len:{}]"
# What a `{ref: …}` argument may read from the document, unknown to lint: a neutral text or a
# list of one (the first an operator takes). A run decides nothing more on a whole marker with
# it, whatever the document holds.
_REF_SAMPLES: tuple[Any, ...] = ("y", ["y"])

_REGEX_OPS = ("matches", "not_matches")


def _fix(op: str, arg: Any, whole: bool) -> str:
    """How the shipped packs keep such a test decided (naming `[secret ` only where the
    argument is text the rule writes)."""
    texts = isinstance(arg, str) or (
        isinstance(arg, list) and bool(arg) and all(isinstance(a, str) for a in arg)
    )
    fixes = []
    if op in _REGEX_OPS and not isinstance(arg, Ref):
        fixes.append(
            "add a `\\[secret ` alternative to the pattern, as the shipped packs do "
            "(`'(\\[secret |…)'`)"
        )
    elif texts and op != "type" and not isinstance(arg, Ref):
        fixes.append("name `[secret ` among its arguments")
    if whole:
        fixes.append(
            "put `not_matches: '^\\[secret '` before it in the leaf "
            "(as the shipped BASE-MOD-003 does)"
        )
    elif not fixes:
        fixes.append("put `not_matches: '\\[secret '` before it in the leaf")
    return ", or ".join(fixes) + ": a marker is then judged by its text"


def static_warnings(policy: PolicySet) -> list[LintProblem]:
    """The warnings `policy lint` gives on a policy alone (without a state file's history):
    text that looks like a secret (`secret_warnings`), tests a redacted value cannot decide
    (`undecided_warnings`), literals that decide nothing (`literal_warnings`) and readiness or
    org fields no document has (`field_warnings`)."""
    return (
        secret_warnings(policy)
        + undecided_warnings(policy)
        + literal_warnings(policy)
        + field_warnings(policy)
    )


def undecided_warnings(policy: PolicySet) -> list[LintProblem]:
    """Warn for each leaf that reads a place where the redactor hides values by meaning (its
    table, `auditor.redact.names`, as the redactor walks it; an argv array, `argv_secrets`)
    with a test a run cannot decide on the marker standing there (`auditor.operators.hidden`:
    a pattern that does not speak of markers, tried on each form the hidden value may take
    there): every revision holding a secret there is an `error` result, so every run and
    review is incomplete (exit 2). The leaf's tests are tried in order, as a run applies them:
    one that fails on the marker first (`not_matches: '^\\[secret '`) leaves the rest unread."""
    docs: dict[str, YamlDocument] = {}
    found: list[LintProblem] = []
    for rule in policy.rules:
        for cond in (rule.when, rule.condition):
            for leaf, prefix in _all_leaves(cond, ()) if cond is not None else ():
                if leaf.is_change:
                    continue  # `from` / `to` … decide markers by fingerprint
                text = _hidden_value_problem(rule, leaf, prefix, docs)
                if text is not None:
                    found.append(LintProblem("warning", text))
    return found


def _all_leaves(cond: Condition, prefix: Keys) -> Iterator[tuple[Leaf, Keys]]:
    """Every leaf with the object keys on the way to it (a quantifier's keys too, each array
    level as `[*]`: the redactor judges a place by its keys, and an array's element apart)."""
    if isinstance(cond, Leaf):
        yield cond, prefix
    elif isinstance(cond, Logic):
        for child in cond.children:
            yield from _all_leaves(child, prefix)
    else:
        yield from _all_leaves(cond.condition, (*prefix, *_keys(cond.path), STAR))


def _keys(path: Any) -> Keys:
    from auditor.policy.pathexpr import Key

    return tuple(step.name if isinstance(step, Key) else STAR for step in path.steps)


def _argv_key(key: str) -> bool:
    """A key whose value is a command line or the words of one (`command`, `args`,
    `extraArgs`: the redactor's command keys, or a name ending in one)."""
    from auditor.redact.names import is_command_key, words

    named = words(key)
    return is_command_key(key) or (bool(named) and is_command_key(named[-1]))


def _samples(rule: Rule, keys: Keys) -> list[Any]:
    """What a run may read at `keys` where the redactor hides a value there by meaning: a whole
    marker, a command line holding one, an argv array holding one; none where it hides
    nothing by meaning."""
    from auditor.redact.commands import argv_secrets
    from auditor.redact.names import words
    from auditor.redact.redactor import _child  # the redactor's walk of its table of places

    if rule.target == "change" and keys[:1] and keys[0] in _SIDES:
        keys = keys[1:]
    secret, hosted = 0, False
    for key in keys:
        if key != STAR:  # an array's elements are redacted in its own context
            secret, hosted = _child(key, secret, hosted)
    if secret:
        return [_SAMPLE_MARKER]
    named = [k for k in keys if k != STAR]
    if not named or not _argv_key(named[-1]):
        return []
    if keys[-1] == STAR:
        # an element of an argv array: the redactor hides a password option's value whole
        # (`argv_secrets` takes `["--api-key", X]`'s X), or the part after an attached option
        hidden = argv_secrets(["x", "--api-key", "s3cret-sample-0123"])
        return [_SAMPLE_MARKER, *_SAMPLE_TEXTS] if hidden else [*_SAMPLE_TEXTS]
    if words(named[-1])[-1:] == ["args"]:
        return [_SAMPLE_ARGV]  # the words of a command: an array
    # a command line (or a command that is a token by its form, hidden whole), or its exec form
    return [_SAMPLE_MARKER, *_SAMPLE_TEXTS, _SAMPLE_ARGV]


def _undecided(leaf: Leaf, sample: Any) -> tuple[str, Any] | None:
    """The first operator of `leaf` (with its argument) a run cannot decide on `sample` (a
    `HiddenValueError`), the operators before it holding there; None when one fails first or
    all are decided. A `{ref: …}` argument is tried with what the document may hold there."""
    for op, arg, shown in leaf.ops:
        if op.kind not in ("value", "time"):
            return None  # not a test of the value
        verdict = None
        for tried in _REF_SAMPLES if isinstance(arg, Ref) else (arg,):
            verdict = _verdict(op, tried, sample)
            if verdict != "type":
                break
        if verdict == "hidden":
            return op.name, arg if isinstance(arg, Ref) else shown
        if verdict != "held":
            return None
    return None


def _verdict(op: Any, arg: Any, sample: Any) -> str:
    """`held`, `failed`, `hidden` (not decided on the marker) or `type` (an error of its own
    kind, whatever the redactor does)."""
    from datetime import UTC, datetime

    from auditor.operators import HiddenValueError, OperandTypeError, fingerprinting

    with fingerprinting(lambda text: _OTHER_MARKER.format(len(text))):
        try:
            now = (datetime.now(UTC),) if op.kind == "time" else ()
            ok = op.fn(sample, arg, *now)
        except HiddenValueError:
            return "hidden"
        except (OperandTypeError, TypeError, ValueError, ArithmeticError):
            return "type"
    return "held" if ok else "failed"


def _hidden_value_problem(
    rule: Rule, leaf: Leaf, prefix: Keys, docs: dict[str, YamlDocument]
) -> str | None:
    from auditor.policy.pathexpr import Star

    for path in leaf.paths:
        keys = (*prefix, *_keys(path))
        samples = _samples(rule, keys)
        element = keys[-1:] == (STAR,) and len(samples) > 1  # an argv array's
        if samples and any(isinstance(step, Star) for step in path.steps):
            # `args[*]` projects: the leaf reads the list of the elements, one of them hidden
            samples = [["x", *(s for s in samples if isinstance(s, str))]]
        for sample in samples:
            found = _undecided(leaf, sample)
            if found is None:
                continue
            op, arg = found
            whole = sample == _SAMPLE_MARKER
            what = (
                "an argv array's element, where the redactor hides a password option's value"
                if element
                else "a value the redactor hides"
                if whole
                else "an argv array, where the redactor hides a password option's value"
                if isinstance(sample, list)
                else "a command line, where the redactor hides passwords and tokens"
            )
            fix = _fix(op, arg, whole and not element)  # an element's guard: `\[secret `
            text = (
                f"rule {rule.id}: `{op}` on `{path.text}` ({what}) cannot be decided on a "
                "`[secret fp:… len:…]` marker, so a revision with a secret there is an `error` "
                f"result and the run or review is incomplete (exit 2); {fix}"
            )
            source = rule.source
            if source is None:
                return f"{rule.id}: warning: {text}"
            doc = docs.get(source.file) or docs.setdefault(
                source.file, load_yaml(Path(source.file))
            )
            where = (*leaf.where, op)
            return problem(doc.locate(where), render(where), text, level="warning")
    return None


# Literals with which a test decides nothing: what it is of every value it applies to. Not
# `contains: ""` / `excludes: ""` (nor a list holding ""): true / false of every string, but of
# an array they ask whether it holds a blank entry, and a path's type is not known here.
_VACUOUS: dict[tuple[str, str], str] = {
    ("in", "[]"): "false of every value (nothing is in an empty list)",
    ("not_in", "[]"): "true of every value (nothing is in an empty list)",
    ("contains_all", "[]"): "true of every array (it holds all of no items)",
    ("contains_any", "[]"): "false of every array (it holds none of no items)",
    ("excludes", "[]"): "true of every value (it holds none of no items)",
    ("starts_with_any", "[]"): "false of every string (it starts with none of no prefixes)",
    ("starts_with", "[]"): "false of every string (it starts with none of no prefixes)",
    ("ends_with", "[]"): "false of every string (it ends with none of no suffixes)",
    ("starts_with", '""'): "true of every string (each starts with the empty string)",
    ("ends_with", '""'): "true of every string (each ends with the empty string)",
    ("matches", '""'): "true of every string (the empty pattern matches anywhere)",
    ("not_matches", '""'): "false of every string (the empty pattern matches anywhere)",
}
# A list of prefixes (suffixes) holding "": true of every string whatever else it holds.
_HOLDING_BLANK: dict[str, str] = {
    "starts_with": "true of every string (each starts with the empty string)",
    "starts_with_any": "true of every string (each starts with the empty string)",
    "ends_with": "true of every string (each ends with the empty string)",
}


def _vacuous(name: str, raw: Any) -> tuple[str, str, tuple[int, ...]] | None:
    """How the literal is shown, what the test is of every value, and where in the literal
    (a list's entry), for a literal that decides nothing; else None."""
    if raw == [] or raw == "":
        shown = "[]" if raw == [] else '""'
        said = _VACUOUS.get((name, shown))
        return (shown, said, ()) if said else None
    if isinstance(raw, list) and "" in raw and name in _HOLDING_BLANK:
        return '["", …]' if len(raw) > 1 else '[""]', _HOLDING_BLANK[name], (raw.index(""),)
    return None


def literal_warnings(policy: PolicySet) -> list[LintProblem]:
    """Warn for each test whose literal decides nothing (`not_in: []`, `starts_with: ""`): the
    test is always true (or always false) whatever the value, so the rule, or a `not` around
    it, is decided before any settings are read."""
    docs: dict[str, YamlDocument] = {}
    found: list[LintProblem] = []
    for rule in policy.rules:
        for cond in (rule.when, rule.condition):
            for leaf, _ in _all_leaves(cond, ()) if cond is not None else ():
                for op, _, raw in leaf.ops:
                    vacuous = _vacuous(op.name, raw)
                    if vacuous is None:
                        continue
                    shown, said, at = vacuous
                    text = (
                        f"rule {rule.id}: `{op.name}: {shown}` is {said}, so this test decides "
                        "nothing (under `not`, `none` or `when` it decides the other way): "
                        "write the values meant, or drop the test"
                    )
                    where = (*leaf.where, op.name, *at)
                    found.append(LintProblem("warning", _at(rule, where, text, docs)))
    return found


def _at(rule: Rule, where: Parts, text: str, docs: dict[str, YamlDocument]) -> str:
    """`text` as a warning at `where` in `rule`'s file (`file:line:col: warning: $.…: …`)."""
    source = rule.source
    if source is None:
        return f"{rule.id}: warning: {text}"
    doc = docs.get(source.file) or docs.setdefault(source.file, load_yaml(Path(source.file)))
    return problem(doc.locate(where), render(where), text, level="warning")


# What a readiness or org rule reads: the documents `auditor.evaluate.readiness` makes, a
# closed set of names (a test checks they agree). A readiness rule reads a report's fields
# (`report`, `apps`: the agent's, open), `criteria.<id>.…` and the computed `$` fields.
READINESS_FIELDS = (
    "$score", "$level", "$age_days", "$clean", "criteria",
    "reportId", "repoUrl", "createdAt", "branch", "commitHash", "hasLocalChanges",
    "hasNonRemoteCommits", "modelUsed", "agentVersion", "apps", "report",
)  # fmt: skip
CRITERION_FIELDS = (
    "passed",
    "numerator",
    "denominator",
    "skipped",
    "credit",
    "level",
    "pillar",
    "problem",
)
ORG_FIELDS = (
    "$level", "repo_count", "levels", "clean_share", "oldest_report_days",
    "fresh_share_7d", "fresh_share_30d", "fresh_share_90d",
)  # fmt: skip
_BELOW_LEVEL = re.compile(r"below_level_[0-9]+")


def field_warnings(policy: PolicySet) -> list[LintProblem]:
    """Warn for each path of a readiness or org rule that names a field its document never
    has (`$levle`, `fresh_share_30`): always absent, so the rule always gives its `on_missing`
    (a pass with `on_missing: pass`). With a "did you mean" among the fields it has."""
    docs: dict[str, YamlDocument] = {}
    found: list[LintProblem] = []
    for rule in policy.rules:
        if rule.target not in ("readiness", "org"):
            continue
        for cond in (rule.when, rule.condition):
            if cond is None:
                continue
            for where, steps, _ in _reads(cond, _root(cond), ()):
                text = _unknown_field(rule.target, steps)
                if text is not None:
                    found.append(
                        LintProblem("warning", _at(rule, where, f"rule {rule.id}: {text}", docs))
                    )
    return found


def _unknown_field(target: str, steps: Steps) -> str | None:
    """What is wrong with a path of a `target` rule, or None."""
    first = steps[0] if steps else None
    if not isinstance(first, Key):
        return None
    from auditor.policy.yamlsafe import suggest

    if target == "org":
        if first.name in ORG_FIELDS or _BELOW_LEVEL.fullmatch(first.name):
            return None
        known: tuple[str, ...] = (*ORG_FIELDS, "below_level_2")
        return (
            f"`{first.name}` is not a field org rules see{suggest(first.name, known)}: it is "
            f"always absent, so the rule always gives its `on_missing`; they see "
            f"{', '.join(ORG_FIELDS)}, below_level_N"
        )
    if first.name not in READINESS_FIELDS:
        return (
            f"`{first.name}` is not a field readiness rules see"
            f"{suggest(first.name, READINESS_FIELDS)}: it is always absent, so the rule always "
            f"gives its `on_missing`; they see {', '.join(READINESS_FIELDS)}"
        )
    third = steps[2] if first.name == "criteria" and len(steps) > 2 else None
    if isinstance(third, Key) and isinstance(steps[1], Key) and third.name not in CRITERION_FIELDS:
        return (
            f"`criteria.{steps[1].name}.{third.name}`: a criterion has no `{third.name}`"
            f"{suggest(third.name, CRITERION_FIELDS)}, so the rule always gives its "
            f"`on_missing`; it has {', '.join(CRITERION_FIELDS)}"
        )
    return None
