""" "Did you mean" for an unknown key in a condition: the operator (or key) an author meant.

Takes the key as written and the keys a condition accepts, gives ` (did you mean `x`?)` or "".
Spelling alone misleads here: `not_contains` is nearest `contains` and `contains_none` nearest
`contains_any`, each the opposite of what was meant (`excludes`). So the names authors reach
for from other languages come first (`greater_than`: `gt`, `regex`: `matches`, `ne`:
`not_equals`); a name that says "not" (`not_starts_with`) is the negative operator of what
follows (`excludes`, `not_in`, `not_equals`, `not_matches`) or, where there is none,
`not: {…}` around it; and a suggestion by spelling never changes the meaning's sign.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

# Written without `_`, `-` or blanks, lower case: what each name means.
_SYNONYMS: dict[str, str] = {
    # equality and membership
    "eq": "equals", "equal": "equals", "equalto": "equals", "is": "equals", "==": "equals",
    "ne": "not_equals", "neq": "not_equals", "notequal": "not_equals", "isnot": "not_equals",
    "notequalto": "not_equals", "differs": "not_equals", "!=": "not_equals",
    "oneof": "in", "isoneof": "in", "isin": "in", "inlist": "in", "among": "in",
    "notoneof": "not_in", "noneof": "not_in", "isnotin": "not_in", "notinlist": "not_in",
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
    "startswith": "starts_with", "beginswith": "starts_with", "prefix": "starts_with",
    "endswith": "ends_with", "suffix": "ends_with",
    # presence, size, time, versions
    "exist": "exists", "present": "exists", "defined": "exists", "haskey": "exists",
    "absent": "exists: false", "missing": "exists: false", "undefined": "exists: false",
    "isempty": "empty", "nonempty": "empty: false", "len": "length", "size": "length",
    "count": "length", "olderthan": "older_than_days", "newerthan": "within_days",
    "youngerthan": "within_days", "within": "within_days", "minversion": "version_at_least",
    "versiongte": "version_at_least", "versionatleast": "version_at_least",
    # combining
    "and": "all", "allof": "all", "or": "any", "every": "each", "forall": "each",
}  # fmt: skip

# Each operator's negative twin, both ways; the order operators' negations are the others.
_TWIN = {"equals": "not_equals", "in": "not_in", "matches": "not_matches", "contains": "excludes"}
_TWIN |= {negative: positive for positive, negative in _TWIN.items()}
_ORDER_NOT = {"gt": "lte", "gte": "lt", "lt": "gte", "lte": "gt"}

# How a name says "not", written at its start (`not_contains`, `doesNotContain`).
_NOT_PREFIX = re.compile(r"^(?:does_not|doesnt|is_not|isnt|dont|not|no|non)_(?=[a-z])")
# The words that say "not" in a name, the accepted keys' too (`not_in`, `none`): a spelling
# that adds or drops one (`not_contains`, `contains_none`) is never taken for a typo.
_NEGATIVE_WORDS = frozenset(
    {"not", "no", "non", "none", "never", "without", "ne", "neq", "doesnt", "isnt", "dont"}
)


def _words(key: str) -> str:
    """`doesNotContain`, `does-not-contain`, `Does Not Contain`: `does_not_contain`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)
    return re.sub(r"[^a-z0-9=!<>]+", "_", spaced.casefold()).strip("_")


def _squashed(words: str) -> str:
    return words.replace("_", "")


def _negative(words: str) -> bool:
    """The name says "not" somewhere (`not_contains`, `contains_none`, `ne`)."""
    return any(w in _NEGATIVE_WORDS or w.startswith(("not", "non")) for w in words.split("_"))


def _meant(words: str, choices: frozenset[str]) -> str | None:
    """The key a name means, by a known synonym or by being one written another way."""
    squashed = _squashed(words)
    by_key = {_squashed(c): c for c in choices}
    found = _SYNONYMS.get(squashed) or _SYNONYMS.get(words) or by_key.get(squashed)
    return found if found is None or found.split(":")[0] in choices else None


def _negated(positive: str, choices: frozenset[str]) -> str | None:
    """What `not <positive>` is written as."""
    if positive in _TWIN:
        return _TWIN[positive] if _TWIN[positive] in choices else None
    if positive in _ORDER_NOT:
        return _ORDER_NOT[positive]
    if positive in ("exists", "empty"):
        return f"{positive}: false"
    if ":" in positive or positive not in choices:
        return None
    return f"not: {{path: …, {positive}: …}}"


def operator_hint(key: str, choices: Iterable[str]) -> str:
    """` (did you mean `x`?)` for an unknown condition key, or "": never a key whose meaning
    has the other sign (`contains` for `not_contains`)."""
    known = frozenset(choices)
    words = _words(key)
    meant = _meant(words, known)
    if meant is None and (rest := _NOT_PREFIX.sub("", words, count=1)) != words:
        positive = _meant(rest, known) or _closest(rest, known, negative=False)
        meant = _negated(positive, known) if positive else None
    if meant is None:
        meant = _closest(words, known, negative=_negative(words))
    return f" (did you mean `{meant}`?)" if meant else ""


def _closest(words: str, known: frozenset[str], *, negative: bool) -> str | None:
    """The nearest key by spelling among those that say "not" as `words` does or does not."""
    same_sign = sorted(k for k in known if _negative(k) == negative)
    close = difflib.get_close_matches(words, same_sign, n=1, cutoff=0.6)
    return close[0] if close else None
