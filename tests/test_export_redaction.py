"""Bundles made before and after an upgrade that widens redaction: which redaction made them.

An upgrade that catches more secrets redacts the stored revisions again, which changes their
`content_sha256`: a bundle made before (by the older release) and one made after disagree on
those rows, and to an auditor a changed hash with no note looked like a row edited after it
was stored. The manifest now names the release and rules the bundle's rows are redacted under
(the same whether the store has been migrated yet or the export redacted each row as it read
it), and a bundle made without that entry still verifies.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import orjson

import auditor
from auditor.cli import Context, main
from auditor.redact import RULES_VERSION
from auditor.store.database import Store
from tests.conftest import FIXED_NOW
from tests.test_store import OLD_RULES_SECRET, _stored_by_an_older_auditor


def cli(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


def _hashes(bundle: Path) -> dict[str, str]:
    text = (bundle / "revisions.csv").read_text(encoding="utf-8")
    return {row["revision"]: row["content_sha256"] for row in csv.DictReader(io.StringIO(text))}


def test_a_bundle_names_the_redaction_its_rows_went_through(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    _stored_by_an_older_auditor(state)  # revision 2 holds a password the older rules missed
    with Store.open(state, readonly=True) as store:
        old = store._db.execute("SELECT content_hash FROM revisions WHERE revision = 2")
        (before,) = old.fetchone()  # what the older release's bundle gave for it
    # before the upgrade's first writing command: the export redacts each row as it reads it
    code, _, err = cli(["export", "--state", str(state), "--out", "before"], tmp_path)
    assert code == 0, err
    with Store.open(state):  # the upgrade's first writing opening: rows redacted again
        pass
    code, _, err = cli(["export", "--state", str(state), "--out", "after"], tmp_path)
    assert code == 0, err
    for name in ("before", "after"):
        manifest = json.loads((tmp_path / name / "manifest.json").read_text())
        redaction = manifest["redaction"]
        assert (redaction["release"], redaction["rules"]) == (auditor.__version__, RULES_VERSION)
        assert "content SHA-256" in redaction["note"]
        assert OLD_RULES_SECRET not in (tmp_path / name / "revisions.jsonl").read_text()
    # the rows are redacted under the rules the manifest names, migrated or not
    assert _hashes(tmp_path / "before") == _hashes(tmp_path / "after")
    assert _hashes(tmp_path / "after")["2"] != before  # the row the newer rules hid more of
    assert _hashes(tmp_path / "after")["1"] == _hashes(tmp_path / "before")["1"]


def test_a_bundle_of_this_release_without_the_redaction_entry_is_named(tmp_path: Path) -> None:
    """Only a bundle made before 0.3.0 has no `redaction` (reviewer R16 #2: one of this release
    whose entry was deleted verified, reading as an older release's; that one still verifies,
    tests/test_bundle_facts.py)."""
    state = tmp_path / "state.db"
    _stored_by_an_older_auditor(state)
    assert cli(["export", "--state", str(state), "--out", "b"], tmp_path)[0] == 0
    manifest_path = tmp_path / "b" / "manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    del manifest["redaction"]
    manifest_path.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    code, _, err = cli(["verify", str(tmp_path / "b")], tmp_path)
    assert code == 2, err
    assert (
        f"auditor: verify: manifest: redaction is missing, but auditor {auditor.__version__} "
        "writes it in every bundle\n"
    ) in err
