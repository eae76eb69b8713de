"""Lint checks beyond the schema: rule paths that never appeared in the stored history, or
vanished; a rule's text or literal that looks like a secret.

Takes a `PolicySet` (and the stored revisions, ascending, streamed), gives warnings formatted
like every other policy problem (`file:line:col: warning: $.rules[2].assert.path: …`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.common.paths import render
from auditor.models import Revision
from auditor.policy.conditions import Condition, Leaf, Logic, iter_leaves
from auditor.policy.loader import PolicySet
from auditor.policy.model import Rule
from auditor.policy.yamlsafe import YamlDocument, load_yaml, problem

STAR = "[*]"
Keys = tuple[str, ...]


@dataclass(frozen=True)
class _Watched:
    """One settings leaf: its alternative key paths and where it is written."""

    rule: Rule
    leaf: Leaf
    keys: tuple[Keys, ...]


def _present(settings: Any, keys: tuple[str, ...]) -> bool:
    node = settings
    for at, key in enumerate(keys):
        if key == STAR:  # keys ending in [*]: the array has an element to look into
            rest = keys[at + 1 :]
            return isinstance(node, list) and any(_present(item, rest) for item in node)
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _leaves(cond: Condition, prefix: tuple[str, ...] = ()) -> Iterator[tuple[Leaf, Keys]]:
    """Every leaf with the keys its paths start with from the root (`[*]` per array level)."""
    if isinstance(cond, Leaf):
        yield cond, prefix
    elif isinstance(cond, Logic):
        for child in cond.children:
            yield from _leaves(child, prefix)
    elif len(cond.path.deps) == len(cond.path.steps):  # a plain array path: follow it inside
        yield from _leaves(cond.condition, (*prefix, *cond.path.deps, STAR))


def _watched(policy: PolicySet) -> Iterator[_Watched]:
    for rule in policy.rules:
        if rule.target != "settings":
            continue
        for cond in (rule.when, rule.condition):
            for leaf, prefix in _leaves(cond) if cond is not None else ():
                keys = tuple((*prefix, *p.deps) for p in leaf.paths if p.deps)
                if keys:
                    yield _Watched(rule, leaf, keys)


def _scope(keys: Keys) -> Keys:
    """The keys up to the innermost `[*]`: present when that array has elements to look at."""
    return keys[: len(keys) - keys[::-1].index(STAR)] if STAR in keys else ()


def _shown(keys: Keys) -> str:
    return ".".join(keys).replace(f".{STAR}", STAR)


def history_warnings(policy: PolicySet, revisions: Iterable[Revision]) -> list[str]:
    """Warn for settings paths absent from every stored revision or gone from the latest."""
    watched = list(_watched(policy))
    last_seen: dict[tuple[str, ...], int] = {}
    numbers: list[int] = []
    wanted = {k for w in watched for k in w.keys} | {_scope(k) for w in watched for k in w.keys}
    for revision in revisions:
        numbers.append(revision.revision)
        for keys in wanted:
            if _present(revision.settings, keys):
                last_seen[keys] = revision.revision
    if not numbers:
        return []
    docs: dict[str, YamlDocument] = {}
    return [msg for w in watched if (msg := _warning(w, last_seen, numbers, docs))]


def _warning(
    w: _Watched,
    last_seen: dict[tuple[str, ...], int],
    numbers: list[int],
    docs: dict[str, YamlDocument],
) -> str | None:
    seen = [last_seen[k] for k in w.keys if k in last_seen]
    observable = [last_seen[s] for s in map(_scope, w.keys) if s in last_seen]
    shown = " / ".join(_shown(k) for k in w.keys)
    if not observable:  # every array on the way was always empty: nothing to judge by
        return None
    if not seen:
        count = len(numbers)
        text = f"`{shown}` appears in none of the {count} stored revisions (typo or renamed key?)"
    elif max(seen) < max(observable):
        ago = len(numbers) - 1 - numbers.index(max(seen))
        text = f"`{shown}` last appeared in revision {max(seen)} ({ago} revisions ago)"
    else:
        return None
    source = w.rule.source
    if source is None:
        return f"{w.rule.id}: warning: {text}"
    doc = docs.get(source.file) or docs.setdefault(source.file, load_yaml(Path(source.file)))
    where = (*w.leaf.where, "path")
    return problem(doc.locate(where), render(where), f"rule {w.rule.id}: {text}", level="warning")


def secret_warnings(policy: PolicySet) -> list[str]:
    """Warn for a rule whose literal, title, description or remediation looks like a secret
    (the value detectors of `auditor.redact` match it): a policy file is read by whoever runs
    or reviews it. The secret itself is never printed; outputs show it as a marker."""
    from auditor.redact.values import find_secrets  # detect-secrets: only when linting

    docs: dict[str, YamlDocument] = {}
    found: list[str] = []
    for rule in policy.rules:
        leaves = [
            leaf for cond in (rule.when, rule.condition) if cond for leaf, _ in iter_leaves(cond)
        ]
        head = leaves[0].where[:2] if leaves and leaves[0].where[:1] == ("rules",) else ()
        spots: list[tuple[tuple[str | int, ...], str]] = [
            ((*head, name), f"its {name}")
            for name in ("title", "description", "remediation")
            if find_secrets(getattr(rule, name))
        ]
        for leaf in leaves:
            for op, _, raw in leaf.ops:
                if any(find_secrets(text) for text in _strings(raw)):
                    spots.append(((*leaf.where, op.name), f"the `{op.name}` literal"))
        for where, what in spots:
            text = (
                f"rule {rule.id}: {what} holds what looks like a secret (a credential "
                "detector matches it): a policy file is read by whoever runs or reviews it, "
                "so rotate it; outputs show it as `[secret fp:… len:…]`"
            )
            source = rule.source
            if source is None or not where:
                found.append(f"{rule.id}: warning: {text}")
                continue
            doc = docs.get(source.file) or docs.setdefault(
                source.file, load_yaml(Path(source.file))
            )
            found.append(problem(doc.locate(where), render(where), text, level="warning"))
    return found


def _strings(raw: Any) -> Iterator[str]:
    if isinstance(raw, str):
        yield raw
    elif isinstance(raw, list):
        for item in raw:
            yield from _strings(item)
    elif isinstance(raw, dict):
        for item in raw.values():
            yield from _strings(item)
