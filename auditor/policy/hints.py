""" "Did you mean" for an unknown key in a condition: the operator (or key) an author meant.

Takes the key as written and the keys a condition accepts, gives ` (did you mean `x`?)` or "".
Spelling alone misleads here: `not_contains` is nearest `contains` and `contains_none` nearest
`contains_any`, each the opposite of what was meant (`excludes`). So the names authors reach
for from other languages come first (`greater_than`: `gt`, `regex`: `matches`, `ne`:
`not_equals`); a name that says "not" (`not_starts_with`) is the negative operator of what
follows (`excludes`, `not_in`, `not_equals`, `not_matches`) or, where there is none,
`not: {…}` around it; and a suggestion by spelling never changes the meaning's sign.
A name says "not" by a word (`not`, `no`, `none`, `ne`, `nin`, `without`) or by a prefix on a
name it negates (`unequal`, `unchanged`, `mismatches`, `nomatch`, `notset`). It also keeps its
direction (`below`, `less`, `max` against `at_least`, `above`), its edit (`deleted` against
`added`) and its set (`superset` against `subset_of`): where no key means the same, there is no
suggestion (`no_entry` gets none: `empty` by spelling from `entry` would be a guess).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from auditor.models import CHANGE_KINDS
from auditor.operators import REGISTRY

# Written without `_`, `-` or blanks, lower case: what each name means.
_SYNONYMS: dict[str, str] = {
    # equality and membership
    "eq": "equals", "equal": "equals", "equalto": "equals", "is": "equals", "==": "equals",
    "inequals": "not_equals", "nonexistent": "exists: false",
    "ne": "not_equals", "neq": "not_equals", "notequal": "not_equals", "isnot": "not_equals",
    "notequalto": "not_equals", "differs": "not_equals", "!=": "not_equals",
    "oneof": "in", "isoneof": "in", "isin": "in", "inlist": "in", "among": "in",
    "notoneof": "not_in", "noneof": "not_in", "isnotin": "not_in", "notinlist": "not_in",
    "nin": "not_in", "unequal": "not_equals", "inequal": "not_equals",
    "different": "not_equals", "differentfrom": "not_equals",
    # contents
    "includes": "contains", "include": "contains", "contain": "contains", "has": "contains",
    "includesall": "contains_all", "hasall": "contains_all", "containsevery": "contains_all",
    "includesany": "contains_any", "hasany": "contains_any", "containssome": "contains_any",
    "containsoneof": "contains_any",
    "notcontains": "excludes", "doesnotcontain": "excludes", "doesntcontain": "excludes",
    "notincludes": "excludes", "doesnotinclude": "excludes", "containsnone": "excludes",
    "includesnone": "excludes", "hasnone": "excludes",
    "exclude": "excludes", "excluding": "excludes", "without": "excludes", "lacks": "excludes",
    "subset": "subset_of", "issubset": "subset_of", "issubsetof": "subset_of",
    "superset": "contains_all", "supersetof": "contains_all", "issuperset": "contains_all",
    "issupersetof": "contains_all",
    # order
    "greaterthan": "gt", "morethan": "gt", "above": "gt", ">": "gt",
    "greaterthanorequal": "gte", "greaterthanorequals": "gte", "greaterorequal": "gte",
    "greaterthanequal": "gte", "ge": "gte", "min": "gte", "minimum": "gte", ">=": "gte",
    "lessthan": "lt", "fewerthan": "lt", "below": "lt", "<": "lt",
    "lessthanorequal": "lte", "lessthanorequals": "lte", "lessorequal": "lte",
    "lessthanequal": "lte", "le": "lte", "max": "lte", "maximum": "lte", "<=": "lte",
    # text
    "regex": "matches", "regexp": "matches", "match": "matches", "re": "matches",
    "pattern": "matches", "like": "matches", "matchesregex": "matches", "regexmatch": "matches",
    "mismatch": "not_matches", "mismatches": "not_matches", "nomatch": "not_matches",
    "nomatches": "not_matches", "notmatch": "not_matches", "unlike": "not_matches",
    "startswith": "starts_with", "beginswith": "starts_with", "prefix": "starts_with",
    "endswith": "ends_with", "suffix": "ends_with",
    # presence, size, time, versions
    "exist": "exists", "present": "exists", "defined": "exists", "haskey": "exists",
    "absent": "exists: false", "missing": "exists: false", "undefined": "exists: false",
    "set": "exists", "isset": "exists", "notset": "exists: false", "unset": "exists: false",
    "isnotset": "exists: false",
    "isempty": "empty", "nonempty": "empty: false", "len": "length", "size": "length",
    "count": "length", "olderthan": "older_than_days", "newerthan": "within_days",
    "youngerthan": "within_days", "within": "within_days", "minversion": "version_at_least",
    "versiongte": "version_at_least", "versionatleast": "version_at_least",
    "versionbelow": "not: {path: …, version_at_least: …}",
    "versionlessthan": "not: {path: …, version_at_least: …}",
    "versionlt": "not: {path: …, version_at_least: …}",
    "versionunder": "not: {path: …, version_at_least: …}",
    "maxversion": "not: {path: …, version_at_least: …}",
    # changes
    "unchanged": "changed: false", "notchanged": "changed: false",
    "modified": "changed", "updated": "changed",
    "deleted": "removed", "delete": "removed", "remove": "removed", "add": "added",
    # combining
    "and": "all", "allof": "all", "or": "any", "every": "each", "forall": "each",
}  # fmt: skip

# Each operator's negative twin, both ways; the order operators' negations are the others.
_TWIN = {"equals": "not_equals", "in": "not_in", "matches": "not_matches", "contains": "excludes"}
_TWIN |= {negative: positive for positive, negative in _TWIN.items()}
_ORDER_NOT = {"gt": "lte", "gte": "lt", "lt": "gte", "lte": "gt"}
_BOOLEAN = ("exists", "empty", "changed", "added", "removed")  # `x: false` says "not x"
# The keys that are no test: `not` around them means nothing an author would write.
_STRUCTURE = frozenset({"path", "default", "enum", "assert", "all", "any", "not"})
_STRUCTURE |= {"each", "some", "none"}

# How a name says "not", written at its start (`not_contains`, `doesNotContain`).
_NOT_PREFIX = re.compile(r"^(?:does_not|doesnt|is_not|isnt|dont|not|no|non)_(?=[a-z])")
# The same run into the name it negates (`unequal`, `mismatches`, `nomatch`, `notset`): taken
# only when the rest is a name known as it stands (`under`, `node` are not negations).
_GLUED_PREFIXES = ("un", "mis", "non", "not", "no", "dis")  # not `in`: `into`, `insubset`
# The words that say "not" in a name, the accepted keys' too (`not_in`, `none`): a spelling
# that adds or drops one (`not_contains`, `contains_none`) is never taken for a typo.
_NEGATIVE_WORDS = frozenset(
    {"not", "no", "non", "none", "never", "without", "ne", "neq", "doesnt", "isnt", "dont"}
    | {"nin", "unequal", "inequal", "missing", "absent", "undefined", "lacks", "unset"}
)
# The other meanings a name keeps whatever it is spelt like: its words for each pole, and
# the opposite poles (`version_below` is no `version_at_least`, `item_deleted` no
# `item_added`, `superset_of` no `subset_of`). Words of 4 letters or more are found inside a
# word too (`versionbelow`, `itemdeleted`).
_POLES: dict[str, frozenset[str]] = {
    "up": frozenset({
        "gt", "gte", "ge", "above", "over", "greater", "more", "higher", "larger", "bigger",
        "min", "minimum", "least", "atleast", "exceeds", "increase", "increased", "increases",
        "increasing",
    }),
    "down": frozenset({
        "lt", "lte", "le", "below", "under", "less", "lower", "fewer", "smaller", "max",
        "maximum", "most", "atmost", "decrease", "decreased", "decreases", "decreasing",
    }),
    "old": frozenset({
        "older", "old", "stale",
    }),
    "new": frozenset({
        "within", "newer", "younger", "recent", "fresh",
    }),
    "add": frozenset({
        "add", "added", "adds", "adding", "insert", "inserted", "create", "created", "appeared",
    }),
    "remove": frozenset({
        "remove", "removed", "removes", "removing", "delete", "deleted", "deletes", "drop",
        "dropped", "gone",
    }),
    "sub": frozenset({
        "subset",
    }),
    "super": frozenset({
        "superset",
    }),
}  # fmt: skip
_OPPOSITE = {"up": "down", "old": "new", "add": "remove", "sub": "super"}
_OPPOSITE |= {b: a for a, b in _OPPOSITE.items()}


def _words(key: str) -> str:
    """`doesNotContain`, `does-not-contain`, `Does Not Contain`: `does_not_contain`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)
    return re.sub(r"[^a-z0-9=!<>]+", "_", spaced.casefold()).strip("_")


def _squashed(words: str) -> str:
    return words.replace("_", "")


def _negative(words: str) -> bool:
    """The name says "not" somewhere (`not_contains`, `contains_none`, `ne`, `unequal`)."""
    return any(
        w in _NEGATIVE_WORDS
        or w.startswith(("not", "non"))
        or any(w.startswith(p) and _known_word(w[len(p) :]) for p in _GLUED_PREFIXES)
        for w in _words(words).split("_")
    )


def _known_word(word: str) -> bool:
    """`word` is a name a key or a change kind is known by (`equal`, `matches`, `changed`,
    `set`, `renamed`), or an inflection of one (`matched`, `matching`: `unmatched` says "not
    matches" as `unequal` says "not equal")."""
    forms = {word, word.removesuffix("ed"), word.removesuffix("d"), word.removesuffix("ing")}
    forms |= {word.removesuffix("s"), word.removesuffix("es")}
    forms |= {f + end for f in set(forms) for end in ("s", "es", "d", "ed")}
    return any(f in _SYNONYMS or f in _OPERATOR_WORDS or f in CHANGE_KINDS for f in forms if f)


def _poles(words: str) -> frozenset[str]:
    """The poles (`up`, `down`, `add`, `remove`, …) a name's words say."""
    found = set()
    for word in _words(words).split("_"):
        for pole, says in _POLES.items():
            if word in says or any(len(w) >= 4 and w in word for w in says):
                found.add(pole)
    return frozenset(found)


def _same_sense(written: str, meant: str) -> bool:
    """`meant` keeps every pole `written` says, and says none opposite to them; a pole only
    `meant` says is in a word `written` misspells closely (`remved`, `increasd`; `renamed`
    is no `removed`)."""
    have, keep = _poles(written), _poles(meant)
    if not have <= keep or any(_OPPOSITE[p] in have for p in keep):
        return False
    mine = _words(written).split("_")
    return all(
        any(difflib.SequenceMatcher(None, w, k).ratio() >= 0.75 for w in mine)
        for k in _words(meant).split("_")
        if _poles(k) - have
    )


def _meant(words: str, choices: frozenset[str]) -> str | None:
    """The key a name means, by a known synonym or by being one written another way."""
    squashed = _squashed(words)
    by_key = {_squashed(c): c for c in choices}
    found = _SYNONYMS.get(squashed) or _SYNONYMS.get(words) or by_key.get(squashed)
    return found if found is None or found.split(":")[0] in choices else None


def _negated(positive: str, choices: frozenset[str]) -> str | None:
    """What `not <positive>` is written as (None for a key that is no test)."""
    if positive in _TWIN:
        return _TWIN[positive] if _TWIN[positive] in choices else None
    if positive in _ORDER_NOT:
        return _ORDER_NOT[positive]
    if positive in _BOOLEAN:
        return f"{positive}: false"
    if ":" in positive or positive not in choices or positive in _STRUCTURE:
        return None
    return f"not: {{path: …, {positive}: …}}"


def operator_hint(key: str, choices: Iterable[str]) -> str:
    """` (did you mean `x`?)` for an unknown condition key, or "": never a key whose meaning
    has the other sign (`contains` for `not_contains`), direction (`version_at_least` for
    `version_below`) or edit (`added` for `deleted`)."""
    known = frozenset(choices)
    words = _words(key)
    meant = _meant(words, known)
    if meant is None and (rest := _NOT_PREFIX.sub("", words, count=1)) != words:
        positive = _meant(rest, known) or _closest(rest, known, negative=False)
        meant = _negated(positive, known) if positive else None
    if meant is None:
        meant = _glued(words, known)
    if meant is None:
        meant = _closest(words, known, negative=_negative(words))
    return f" (did you mean `{meant}`?)" if meant else ""


def _glued(words: str, known: frozenset[str]) -> str | None:
    """`unequal`, `mismatches`, `nomatch`: the negation of the name after the prefix, taken
    only when that name is known as it stands (`under`, `node` are no negations)."""
    for prefix in _GLUED_PREFIXES:
        if words.startswith(prefix) and len(words) > len(prefix):
            positive = _meant(words[len(prefix) :], known)
            if positive and ":" not in positive:
                return _negated(positive, known)
    return None


# A change's `kind` as other tools, or a hurried author, name it.
_KIND_SYNONYMS: dict[str, str] = {
    "add": "added", "new": "added", "created": "added", "create": "added",
    "delete": "removed", "deleted": "removed", "remove": "removed",
    "modified": "changed", "updated": "changed", "valuechanged": "changed", "change": "changed",
    "retyped": "type_changed", "typechange": "type_changed",
    "itemadd": "item_added", "itemnew": "item_added", "entryadded": "item_added",
    "itemdelete": "item_removed", "itemdeleted": "item_removed",
    "itemremove": "item_removed", "entryremoved": "item_removed", "entrydeleted": "item_removed",
    "rename": "renamed", "moved": "renamed",
}  # fmt: skip


def kind_hint(value: str, kinds: Iterable[str]) -> str:
    """` (did you mean `x`?)` for a change kind that is none (`item_add`), or "": never a
    kind of the other edit (`item_added` for `item_deleted`) or another word (`type_changed`
    for `value_changed`)."""
    known = frozenset(kinds)
    words = _words(value)
    by_kind = {_squashed(k): k for k in known}
    squashed = _squashed(words)
    meant = _KIND_SYNONYMS.get(squashed) or by_kind.get(squashed)
    if meant not in known:
        meant = _closest(words, known, negative=_negative(words))
    return f" (did you mean `{meant}`?)" if meant else ""


def _closest(words: str, known: frozenset[str], *, negative: bool) -> str | None:
    """The nearest key by spelling among those that say "not" as `words` does or does not,
    keep its poles (`_same_sense`), and spell each of its words as one of the key's (a typo,
    not another word: `entry` is no `empty`, `value_changed` no `type_changed`)."""
    same = sorted(
        k for k in known if _negative(k) == negative and _same_sense(words, k) and _typo(words, k)
    )
    close = difflib.get_close_matches(words, same, n=1, cutoff=0.6)
    return close[0] if close else None


def _typo(words: str, key: str) -> bool:
    """Each word of `words` is spelt nearly as a word of `key` is (`exlcudes`, `startwith`)."""
    theirs = _words(key).split("_")
    return all(
        any(difflib.SequenceMatcher(None, w, k).ratio() > 0.6 for k in theirs)
        for w in words.split("_")
        if w
    )


_OPERATOR_WORDS = frozenset(
    {*_SYNONYMS.values(), *REGISTRY, "changed", "added", "removed", "exists", "empty", "equal"}
    | {"match", "change", "existent"}
)
