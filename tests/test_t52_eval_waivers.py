"""T52 #8: a waiver subject with a revision number over 4,300 digits is refused at its
`file:line:col` (exit 2), not an `unexpected ValueError` (Python's limit on converting such a
text to an integer) that names no line."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.errors import PolicyError
from auditor.findings.waivers import MAX_REVISION_DIGITS, load_waivers
from tests.test_waivers_inputs import review, waiver_file

LONG = "9" * 5000


@pytest.mark.parametrize(
    ("subject", "shown"),
    [
        pytest.param(f"change:1..{LONG}", "change:1..9999", id="change-forwards"),
        pytest.param(f"change:{LONG}..1", "change:9999", id="change-backwards"),
        pytest.param(f"change:{'1' * 5000}..{LONG}", "change:1111", id="both-long"),
        pytest.param(f"settings@{LONG}", "settings@9999", id="settings"),
    ],
)
def test_a_revision_number_too_long_is_refused_at_its_place(
    tmp_path: Path, subject: str, shown: str
) -> None:
    path = waiver_file(tmp_path, subject=f'"{subject}"')
    code, _, stderr = review(tmp_path, path)
    assert code == 2, stderr
    assert "unexpected" not in stderr
    assert f"{path}:3:14: error: $.waivers[0].subject: subject `{shown}" in stderr
    assert "names a revision number 5,000 digits long" in stderr
    assert LONG not in stderr  # the line is cut


def test_the_longest_number_python_reads_is_still_checked(tmp_path: Path) -> None:
    top = "9" * MAX_REVISION_DIGITS
    path = waiver_file(tmp_path, subject=f'"change:{top}..1"')
    with pytest.raises(PolicyError) as caught:
        load_waivers(path)
    assert "runs backwards" in str(caught.value)
    assert load_waivers(waiver_file(tmp_path, subject=f'"change:1..{top}"'))
