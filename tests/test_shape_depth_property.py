"""The nesting-depth check on raw bytes agrees with the depth of the parsed value, whatever
the strings hold (brackets, quotes, backslashes, escapes) and however the body is encoded."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_tolerant_reader import _depth

from auditor.fetch.shape import deeper_than

_tricky = st.text(alphabet='[]{}"\\:,/u0aé\u2028 ', max_size=8)
_values = st.recursive(
    st.none() | st.integers() | _tricky,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_tricky, inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=1500, deadline=None)
@given(value=_values, ascii_only=st.booleans(), limit=st.integers(0, 8), indent=st.booleans())
def test_depth_on_bytes_matches_the_parsed_depth(
    value: Any, ascii_only: bool, limit: int, indent: bool
) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only, indent=1 if indent else None).encode()
    assert deeper_than(body, limit) == (_depth(value) > limit)
