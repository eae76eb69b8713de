"""Diff: two settings documents in, a list of `Change`s out, as generic JSON.

Takes any two JSON values (the settings object is never given a fixed shape), gives `Change`
records in the one path notation (`engine`), using the list-identity table that says which lists
are sets and which objects are matched by a key (`table`), an RFC 6902 JSON Patch that turns the
older document into the newer (`patch`), and the wording of changes for people (`render`).
"""

from __future__ import annotations

from auditor.diff.engine import changed_paths, diff_revisions
from auditor.diff.patch import to_json_patch
from auditor.diff.render import (
    change_as_json,
    change_summary,
    describe_change,
    render_changes_markdown,
    render_changes_text,
)
from auditor.diff.table import DEFAULT_LIST_TABLE, ListTable, list_table_from_config, strict_equal

__all__ = [
    "DEFAULT_LIST_TABLE",
    "ListTable",
    "change_as_json",
    "change_summary",
    "changed_paths",
    "describe_change",
    "diff_revisions",
    "list_table_from_config",
    "render_changes_markdown",
    "render_changes_text",
    "strict_equal",
    "to_json_patch",
]
