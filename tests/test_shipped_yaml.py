"""The build's record of the shipped YAML (`yamlsafe.SHIPPED_YAML`): current, used only for the
exact bytes it was made from, giving what parsing them gives, and ignored when unusable."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.errors import PolicyError
from auditor.evaluate.readiness import DEFAULT_MODEL_PATH, ReadinessModel, load_readiness_model
from auditor.policy import (
    SHIPPED_POLICY_DIR,
    PolicySet,
    load_policies,
    policy_files,
    schema,
    yamlsafe,
)
from auditor.policy.shipped import record, shipped_files
from auditor.policy.yamlsafe import load_text, load_yaml


@pytest.fixture
def no_record(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Every file parsed: the record is missing."""
    monkeypatch.setattr(yamlsafe, "SHIPPED_YAML", tmp_path / "missing.json")
    yamlsafe._record.cache_clear()
    yield
    yamlsafe._record.cache_clear()


def test_the_record_is_current() -> None:
    """Fails when a shipped pack or the readiness model changed without the record (or parsing
    or the policy schema changed what it gives): run `python -m auditor.policy.shipped`."""
    assert record(shipped_files()) == yamlsafe.SHIPPED_YAML.read_bytes()


def test_every_shipped_file_is_recorded() -> None:
    recorded = {entry["file"] for entry in yamlsafe.shipped_yaml().values()}
    assert recorded == {p.name for p in shipped_files()}
    assert DEFAULT_MODEL_PATH.name in recorded


def _shown(policy: PolicySet) -> list[str]:
    # conditions compare by identity; their repr shows operators, arguments and order
    return [repr(rule) for rule in policy.rules] + [repr(policy.files), repr(policy.enums)]


@pytest.fixture
def recorded() -> tuple[PolicySet, ReadinessModel]:
    """The shipped packs and readiness model, loaded with the record."""
    yamlsafe._record.cache_clear()
    policy, model = load_policies([SHIPPED_POLICY_DIR]), load_readiness_model()
    assert load_yaml(DEFAULT_MODEL_PATH).positions  # from the record
    return policy, model


def test_the_shipped_packs_load_the_same_from_the_record_as_parsed(
    recorded: tuple[PolicySet, ReadinessModel], no_record: None
) -> None:
    assert not load_yaml(DEFAULT_MODEL_PATH).positions  # parsed
    assert _shown(load_policies([SHIPPED_POLICY_DIR])) == _shown(recorded[0])
    assert load_readiness_model() == recorded[1]


@pytest.mark.parametrize("path", shipped_files(), ids=lambda p: p.name)
def test_a_recorded_file_gives_the_parsed_data_positions_and_its_own_copy(path: Path) -> None:
    doc = load_yaml(path)
    parsed = load_text(path.read_text(), str(path))
    assert doc.positions  # it did come from the record
    assert repr(doc.data) == repr(parsed.data)  # same values, types and key order
    for parts in (("rules", 0), ("rules", 1), ("levels", 1), ("criteria", "readme")):
        for key in (False, True):
            assert doc.locate(parts, key=key) == parsed.locate(parts, key=key)
    doc.data.clear()  # a caller's change reaches no later load
    assert repr(load_yaml(path).data) == repr(parsed.data)


def test_changed_bytes_are_parsed_and_checked(tmp_path: Path) -> None:
    """One byte added to a shipped pack (a rule's severity misspelt): the file is parsed and
    validated as any other, its problem reported at its place."""
    pack = tmp_path / "baseline.yaml"
    text = (SHIPPED_POLICY_DIR / "baseline.yaml").read_text()
    assert "severity: high\n" in text
    pack.write_text(text.replace("severity: high\n", "severity: highh\n", 1))
    with pytest.raises(PolicyError) as info:
        load_policies([pack])
    assert "highh" in "\n".join(info.value.problems)
    assert not load_yaml(pack).positions  # parsed, not taken from the record


def test_a_shipped_file_copied_elsewhere_is_named_by_its_own_path(tmp_path: Path) -> None:
    copy = tmp_path / "mine.yaml"
    shutil.copy(SHIPPED_POLICY_DIR / "usage.yaml", copy)
    policy = load_policies([copy])
    assert {r.source.file for r in policy.rules if r.source} == {str(copy)}
    assert policy.files[0].path == str(copy)


@pytest.mark.parametrize("content", [b"", b"{", b'{"files": []}', b'{"files": {"x": 1}}'])
def test_an_unusable_record_is_ignored(
    content: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = tmp_path / "shipped-yaml.json"
    bad.write_bytes(content)
    monkeypatch.setattr(yamlsafe, "SHIPPED_YAML", bad)
    yamlsafe._record.cache_clear()
    try:
        assert yamlsafe.shipped_yaml() == {}
        assert len(load_policies([SHIPPED_POLICY_DIR]).rules) > 0
        assert not load_yaml(DEFAULT_MODEL_PATH).positions
    finally:
        yamlsafe._record.cache_clear()


def test_a_changed_policy_schema_checks_the_shipped_files_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recorded verdict holds only under the schema it was reached under: with another
    (operators changed, the record not rewritten), the shipped packs are validated again."""
    checked: list[object] = []
    real = schema.schema_problems

    def counted(data: object) -> Iterator[schema.Problem]:
        checked.append(data)
        return real(data)

    monkeypatch.setattr(schema, "schema_problems", counted)
    load_policies([SHIPPED_POLICY_DIR])
    assert checked == []  # the record's verdict was used
    monkeypatch.setattr(schema, "schema_digest", lambda: "another schema")
    load_policies([SHIPPED_POLICY_DIR])
    assert len(checked) == len(policy_files([SHIPPED_POLICY_DIR]))


def test_other_limits_parse_the_file() -> None:
    """The record holds what the default limits give; a caller with others gets a parse."""
    assert load_yaml(SHIPPED_POLICY_DIR / "usage.yaml").positions  # recorded
    with pytest.raises(PolicyError, match="more than 10 values"):
        load_yaml(SHIPPED_POLICY_DIR / "usage.yaml", max_nodes=10)


def _damaged(value: Any, how: str) -> Any:
    """`value` (a record entry's data) with every `ITEMS` list's pairs cut to one item."""
    if isinstance(value, dict):
        if how == "items" and value.keys() == {yamlsafe.ITEMS}:
            return {yamlsafe.ITEMS: [[1] for _ in value[yamlsafe.ITEMS]]}
        return {k: _damaged(v, how) for k, v in value.items()}
    if isinstance(value, list):
        return [_damaged(v, how) for v in value]
    return value


@pytest.mark.parametrize("how", ["positions a list", "a position a string", "items"])
def test_a_damaged_entry_of_the_record_means_parsing_that_file(
    how: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An entry whose positions or data are not of the form the build writes is not used: the
    file is parsed and validated, and the packs load as from their text (no Python error)."""
    whole = orjson.loads(yamlsafe.SHIPPED_YAML.read_bytes())
    for entry in whole["files"].values():
        if how == "positions a list":
            entry["positions"] = [1]
        elif how == "a position a string":
            entry["positions"] = {place: "x" for place in entry["positions"]}
        else:
            entry["data"] = _damaged(entry["data"], how)
    bad = tmp_path / "shipped-yaml.json"
    bad.write_bytes(orjson.dumps(whole))
    expected = [(r.id, r.source) for r in load_policies([SHIPPED_POLICY_DIR]).rules]
    monkeypatch.setattr(yamlsafe, "SHIPPED_YAML", bad)
    yamlsafe._record.cache_clear()
    try:
        assert [(r.id, r.source) for r in load_policies([SHIPPED_POLICY_DIR]).rules] == expected
        assert load_readiness_model(DEFAULT_MODEL_PATH).criteria
    finally:
        yamlsafe._record.cache_clear()
