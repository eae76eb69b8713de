"""T51 #3: a pull-request review interrupted while it wrote its reports (a newer push's cancel,
a timeout) exits 130/143 with a whole report.md: the comment step posted it as the push's
review, not the notice README promises ("the job is cancelled or times out before the review
finished, the comment step replaces the comment with a notice that this push could not be
reviewed")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_workflows_yaml import REVIEW_MARKER, _comment_step

WHOLE = f"{REVIEW_MARKER}\n## Pre-change review: settings/enterprise-controls.yaml\n\n| x |\n"


@pytest.mark.parametrize("job", ["cancelled", "failure"])
@pytest.mark.parametrize("code", ["130", "143"])
def test_an_interrupted_review_s_whole_report_is_not_posted(
    tmp_path: Path, code: str, job: str
) -> None:
    ((kind, args),) = _comment_step(tmp_path, code, WHOLE, AUDITOR_JOB=job)
    assert kind == "update" and args["comment_id"] == 5
    body = args["body"]
    assert body.startswith(REVIEW_MARKER + "\n")
    assert "Pre-change review" not in body
    stopped = (
        "the run was cancelled or timed out" if job == "cancelled" else "the review was interrupted"
    )
    assert f"could not review this push** ({stopped}, exit {code})" in body
    assert "https://github.com/acme/settings/actions/runs/42" in body
    assert "in the artifact `auditor-review-42-1`" in body


def test_a_finished_review_is_still_posted_and_a_notice_without_reports_names_no_artifact(
    tmp_path: Path,
) -> None:
    for code in ("0", "1", "2"):
        ((kind, args),) = _comment_step(tmp_path / code, code, WHOLE)
        assert (kind, args["body"]) == ("update", WHOLE)
    ((kind, args),) = _comment_step(tmp_path / "none", "130", None, AUDITOR_JOB="cancelled")
    assert "could not review this push** (the run was cancelled" in args["body"]
    assert "artifact" not in args["body"]
