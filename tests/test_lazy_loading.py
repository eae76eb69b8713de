"""What loads late keeps working: patterns compiled on first use (`auditor.common.lazyre`), and
names the report folder keeps of modules a run does not load."""

from __future__ import annotations

import re
from typing import Any

from auditor.common.lazyre import lazy_regex


def test_a_lazy_pattern_matches_and_takes_its_place_in_the_module() -> None:
    namespace: dict[str, Any] = {}
    namespace["_WORD"] = lazy_regex(namespace, "_WORD", r"(?i)token=(\w+)")
    kept = namespace["_WORD"]  # a reference kept elsewhere (a tuple, another module)
    assert not isinstance(kept, re.Pattern)
    m = namespace["_WORD"].search("x TOKEN=abc y")
    assert m is not None and m.group(1) == "abc"
    assert namespace["_WORD"] is re.compile(r"(?i)token=(\w+)")  # compiled, in its place
    assert kept.sub("-", "token=a b") == "- b"  # the kept stand-in goes on working
    assert kept.pattern == r"(?i)token=(\w+)"


def test_a_lazy_bytes_pattern_with_flags() -> None:
    namespace: dict[str, Any] = {}
    namespace["_B"] = lazy_regex(namespace, "_B", rb"a.b", re.S)
    assert namespace["_B"].fullmatch(b"a\nb") is not None
    assert namespace["_B"].flags & re.S


def test_the_report_folder_knows_the_orgs_summary_by_its_name() -> None:
    # `cli.outdir` names the organizations' summary without loading `workflows.orgs`
    from auditor.cli.outdir import ORGS_SUMMARY
    from auditor.workflows.orgs import SUMMARY_FILE

    assert ORGS_SUMMARY == SUMMARY_FILE


def test_the_report_folder_knows_a_bundle_by_its_manifest() -> None:
    # `cli.outdir` recognises an evidence bundle without loading `workflows.export`
    from auditor.cli.outdir import BUNDLE_MANIFEST, BUNDLE_MANIFEST_MAX_BYTES
    from auditor.workflows.export import MANIFEST, MANIFEST_MAX_BYTES

    assert (BUNDLE_MANIFEST, BUNDLE_MANIFEST_MAX_BYTES) == (MANIFEST, MANIFEST_MAX_BYTES)
