"""A policy's own text through the run's redactor, before any of it reaches an output.

Takes a `PolicySet` and a text redactor (`Redactor.redact_text`: value detectors and the
memory of secrets); gives the same policy with every secret in a rule's title, description and
remediation, and in each leaf's argument *as written* (what messages and evidence show as the
expectation), replaced by its marker. The prepared arguments the operators compare with stay
as they are, so a rule still judges the value (by fingerprint where it is redacted,
`auditor.operators.hidden`). A rule with nothing to redact is the same object.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from auditor.errors import PolicyError
from auditor.policy.conditions import Condition, Leaf, Logic, Quantifier
from auditor.policy.loader import PolicySet
from auditor.policy.model import Rule

Redact = Callable[[str], str]


def redacted_policy(policy: PolicySet, redact: Redact, scrub: Redact | None = None) -> PolicySet:
    """`policy` with the secrets in its rules' text replaced by markers (see the module).

    `scrub` (the memory of secrets alone, `Redactor.scrub_known`), when given, serves the rules
    of shipped files as built (their sha256 in the build's record), in which no detector finds
    anything (`tests/test_hidden_values.py` checks): a run of the shipped packs alone does not
    load the value detectors (a tenth of a second)."""
    built = _as_built(policy) if scrub is not None else frozenset()
    rules = tuple(
        redacted_rule(rule, scrub if scrub is not None and rule.id in built else redact)
        for rule in policy.rules
    )
    if all(a is b for a, b in zip(rules, policy.rules, strict=True)):
        return policy
    return replace(policy, rules=rules)


def _as_built(policy: PolicySet) -> frozenset[str]:
    """The ids of the rules of shipped files as the build recorded them."""
    from auditor.policy.yamlsafe import shipped_yaml

    record = shipped_yaml()
    return frozenset(i for f in policy.files if f.sha256 in record for i in f.rule_ids)


def redacted_rule(rule: Rule, redact: Redact) -> Rule:
    """`rule` with the secrets in its text replaced by markers, or `rule` itself."""
    title, description = redact(rule.title), redact(rule.description)
    remediation = redact(rule.remediation)
    condition = _condition(rule.condition, redact)
    when = None if rule.when is None else _condition(rule.when, redact)
    if (
        title == rule.title
        and description == rule.description
        and remediation == rule.remediation
        and condition is rule.condition
        and when is rule.when
    ):
        return rule
    return replace(
        rule,
        title=title,
        description=description,
        remediation=remediation,
        condition=condition,
        when=when,
    )


def _condition(cond: Condition, redact: Redact) -> Condition:
    if isinstance(cond, Leaf):
        ops = tuple((op, arg, _written(raw, redact)) for op, arg, raw in cond.ops)
        if all(new[2] is old[2] for new, old in zip(ops, cond.ops, strict=True)):
            return cond
        return Leaf(cond.paths, ops, cond.default, cond.where)
    if isinstance(cond, Logic):
        children = tuple(_condition(c, redact) for c in cond.children)
        if all(a is b for a, b in zip(children, cond.children, strict=True)):
            return cond
        return Logic(cond.kind, children)
    inner = _condition(cond.condition, redact)
    return cond if inner is cond.condition else Quantifier(cond.kind, cond.path, inner)


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


def redacted_source(text: str, file: str, redact: Redact) -> str:
    """The text of a YAML (or JSON) input file with every string scalar, key or value, that
    `redact` changes written instead as a double-quoted string of what it gives (a secret
    becomes its marker), and every comment through `redact` too; everything else stays as
    written, byte for byte, so the copy reads as the file did but for those strings. The copy
    is read back and must give the file's data with those strings replaced; anything else (a
    construct this does not rewrite) is a `PolicyError` naming the file, so no secret is
    copied. A text with nothing to redact is returned as it is."""
    import bisect
    import json

    from auditor.policy import yamlparse
    from auditor.policy.yamlsafe import load_text

    data = load_text(text, file).data  # a file the loader refuses: its PolicyError
    root = yamlparse.compose(text, pure=True)
    edits: dict[int, tuple[int, str]] = {}
    spans: list[tuple[int, int]] = []
    for node in _scalars(root):
        start, end = node.start_mark.index, node.end_mark.index
        written = text[start:end]
        props = re.match(r"(?:[&!]\S*\s+)*", written)
        keep = props.end() if props else 0
        content, header = start, ""
        if node.style in ("|", ">"):  # its header line (`|-2 # a comment`) is no content
            content = text.find("\n", start + keep, end) + 1 or end
            header = text[start + keep : content].rstrip("\n")
        spans.append((content, end))
        value = node.value
        if node.tag != "tag:yaml.org,2002:str" or (out := redact(value)) == value:
            continue
        note = re.search(r"[ \t]#.*", header)  # the header's comment, redacted, stays
        said = f" {redact(note.group()[1:])}" if note else ""
        tail = len(written.rstrip())  # a block scalar's line breaks stay
        new = written[:keep] + json.dumps(out, ensure_ascii=False) + said + written[tail:]
        edits[start] = (end, new)
    spans.sort()
    starts = [s for s, _ in spans]
    edited = sorted((s, e) for s, (e, _) in edits.items())
    line_done = -1  # a comment runs to its line's end: no `#` before then starts another
    for m in _COMMENT.finditer(text):  # a `#` after a space, outside every scalar
        at = bisect.bisect_right(starts, m.start()) - 1
        if m.start() < line_done or (at >= 0 and spans[at][0] <= m.start() < spans[at][1]):
            continue
        cut = bisect.bisect_right(edited, (m.start(), len(text) + 1)) - 1
        if cut >= 0 and edited[cut][0] <= m.start() < edited[cut][1]:
            continue  # in the header of a block scalar rewritten whole, its comment kept there
        end = text.find("\n", m.start())
        line_done = end = len(text) if end < 0 else end
        if (out := redact(text[m.start() : end])) != text[m.start() : end]:
            edits[m.start()] = (end, out.replace("\n", " "))
    if not edits:
        return text
    pieces, done = [], 0
    for start in sorted(edits):
        end, new = edits[start]
        pieces += [text[done:start], new]
        done = end
    copy = "".join([*pieces, text[done:]])
    try:
        same = load_text(copy, file).data == _redacted_data(data, redact)
    except PolicyError:
        same = False
    if not same:
        from auditor.models import SourceLocation
        from auditor.policy.yamlsafe import problem

        where = SourceLocation(file, 1, 1)
        why = "holds what looks like a secret where it cannot be copied redacted"
        raise PolicyError([problem(where, "", f"{why} (write each such value as a quoted string)")])
    return copy


_COMMENT = re.compile(r"(?:(?<=[ \t])|^)#", re.M)


def _scalars(node: Any) -> Any:
    """Every scalar node under `node`, keys too, each once (an alias is its anchor's node)."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    seen: set[int] = set()
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, ScalarNode):
            yield n
        elif isinstance(n, SequenceNode):
            stack.extend(n.value)
        elif isinstance(n, MappingNode):
            for k, v in n.value:
                stack.extend((k, v))


def _redacted_data(value: Any, redact: Redact) -> Any:
    """Parsed data with every string (keys too) through `redact`."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted_data(v, redact) for v in value]
    if isinstance(value, dict):
        return {_redacted_data(k, redact): _redacted_data(v, redact) for k, v in value.items()}
    return value
