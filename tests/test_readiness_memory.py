"""The readiness reports a run evaluates, and their views, held in bounded memory.

A run reads each repository's newest report and keeps it, with its view (`repo_views`),
through the whole evaluation. At 500 repositories that was 26 MB: a dict for each criterion
of each report, twice (the parsed entry and its view), though a few hundred differ. Reports
read together now share their equal criterion entries (`EqualPool`), and views of the same
score share one dict (`readiness._SCORES`).
"""

from __future__ import annotations

import json

from conftest import printed_by_a_fresh_interpreter

_MEASURE = """
import json, tempfile, tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from auditor.emulator import generate_dataset
from auditor.evaluate.readiness import load_readiness_model, readiness_view, repo_views
from auditor.fetch.decode import to_report
from auditor.store import Store

dataset = generate_dataset(revisions=2, repos=500)
model, now = load_readiness_model(), datetime(2026, 11, 2, tzinfo=UTC)
with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "state.db") as store:
    with store.transaction():
        for raw in dataset.reports:
            report = to_report(raw, store.ingest_redactor(), "$")
            store.ingest_report(report, 1, datetime(2026, 11, 1, tzinfo=UTC))
    tracemalloc.start()
    reports = store.latest_reports()
    views = repo_views(reports, model, now, None)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    # what each view says, against a view of the same report read on its own
    alone = {r.report_id: r for r in store.iter_reports()}
    same = all(
        json.dumps(view) == json.dumps(readiness_view(alone[r.report_id], model, now))
        and r.data == alone[r.report_id].data
        for r, view in views
    )
    criteria = sum(len(view["criteria"]) for _, view in views)
print(json.dumps([len(reports), criteria, held, same]))
"""


def test_the_newest_reports_of_500_repositories_and_their_views_hold_a_few_mb() -> None:
    reports, criteria, held, same = json.loads(printed_by_a_fresh_interpreter(_MEASURE))
    assert reports == 500 and criteria > 30_000
    assert same  # sharing changed no report and no view
    # 5.4 MB here; 26 MB when every entry and every view of one was a dict of its own
    assert held < 10_000_000, held


def test_a_view_shared_by_score_keeps_its_model_s_credit() -> None:
    """Views of one score under two models, one giving partial credit, in one process: each
    has its own model's credit (the shared view is keyed by the model's way of crediting)."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from auditor.evaluate.readiness import load_readiness_model, readiness_view
    from auditor.models import ReadinessReport

    model = load_readiness_model()
    cid = next(iter(model.criteria))
    data = {"report": {cid: {"numerator": 1, "denominator": 4}}}
    when = datetime(2026, 11, 1, tzinfo=UTC)
    report = ReadinessReport("r1", "https://g/a", when, data, "hash")
    credits = [
        readiness_view(report, replace(model, partial_credit=mode), when)["criteria"][cid]["credit"]
        for mode in ("all_or_nothing", "fraction", "all_or_nothing")
    ]
    assert credits == [0.0, 0.25, 0.0]


def test_reports_share_no_entry_that_only_orjson_writes_the_same() -> None:
    """orjson writes NaN as `null`: a NaN is never taken for an earlier null, nor a null for it."""
    import math

    from auditor.common.jsonutil import EqualPool

    pool = EqualPool()
    null, nan = {"score": None}, {"score": math.nan}
    assert pool.shared(null) is null
    got = pool.shared(nan)
    assert got is nan and math.isnan(got["score"])
    assert pool.shared({"score": None}) is null
