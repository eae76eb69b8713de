"""A readiness report dated after any clock can be (a platform's bad date) hides nothing.

It was the newest by date, so the run read it and no other of its repository: every readiness
rule of that repository was an `error` (exit 2) every night, which no waiver can settle, until
the date came. It is now passed over for the repository's newest report dated before it, and
named in every report as a data-quality warning; a repository with no other report is still
judged an `error` on it.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN

_2100 = 4102444800000  # Unix ms


def _cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    err = io.StringIO()
    ctx = Context(env=env, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), err.getvalue()


def test_a_report_dated_2100_is_passed_over_for_the_repositorys_real_one(tmp_path: Path) -> None:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=5, repos=3) as emu:
        real = max(emu.dataset.reports, key=lambda r: r["createdAt"])
        ahead = copy.deepcopy(real)
        ahead["reportId"], ahead["createdAt"] = "rpt-dated-2100", _2100
        emu.dataset.reports.append(ahead)
        env = {
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_APP_URL": emu.app_url,
            "AUDITOR_TOKEN": OWNER_TOKEN,
            "AUDITOR_STATE": str(tmp_path / "s.db"),
        }
        code, err = _cli(["sync", "--no-usage"], env, tmp_path)
        assert code == 0, err
    code, err = _cli(
        ["run", "--offline", "--no-usage", "--out", "r", "-o", "json,md"], env, tmp_path
    )
    assert code in (0, 1), err  # was 2: the repository's readiness rules were errors
    data = json.loads((tmp_path / "r" / "findings.json").read_text(encoding="utf-8"))
    repo = [f for f in data["findings"] if f["subject"]["kind"] == "readiness"]
    mine = [f for f in repo if real["repoUrl"] in json.dumps(f["subject"])]
    assert mine and not [f for f in mine if f["status"] == "error"], mine[:2]
    assert "rpt-dated-2100" not in json.dumps(mine)
    (warning,) = [w for w in data["data_quality"] if "rpt-dated-2100" in json.dumps(w)]
    assert "2100-01-01T00:00:00Z is" in json.dumps(warning)
    assert real["reportId"] in json.dumps(warning)
    assert "rpt-dated-2100" in (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
