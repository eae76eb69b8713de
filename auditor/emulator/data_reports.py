"""Seeded agent-readiness reports: several per repository over time, as the service returns them.

Uses the criterion ids of the packaged readiness model; application-scoped criteria score
x/N over the repository's N apps, skippable ones are sometimes skipped (`numerator: null`),
some runs had a dirty tree, older agent versions omit optional fields, and newer ones report a
criterion the model does not know yet. Repositories mature over time, so levels move.
"""

from __future__ import annotations

import functools
import importlib.resources
import random
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from ruamel.yaml import YAML

from auditor.emulator.data_common import JsonObj, hexstr, unix_ms, uuid4

AGENT_VERSIONS = ("0.19.2", "0.20.1", "0.21.0", "0.22.3", "0.23.1", "0.24.0")
UNKNOWN_CRITERION = "ai_usage_policy"
_TEAMS = (
    "payments",
    "billing",
    "checkout",
    "auth",
    "identity",
    "search",
    "catalog",
    "inventory",
    "orders",
    "shipping",
    "notifications",
    "analytics",
    "reporting",
    "web",
    "mobile",
    "admin",
    "data",
    "ml",
    "infra",
    "platform",
    "gateway",
    "ledger",
    "pricing",
    "support",
    "docs",
    "design-system",
    "feature-flags",
    "observability",
    "security",
    "onboarding",
)
_KINDS = (
    "api",
    "service",
    "web",
    "app",
    "worker",
    "pipeline",
    "sdk",
    "cli",
    "terraform",
    "console",
    "frontend",
    "backend",
    "jobs",
    "portal",
)
_APPS = (
    ("services/api", "Public REST API (FastAPI)"),
    ("services/worker", "Background job worker (Celery)"),
    ("apps/web", "Customer web app (Next.js)"),
    ("apps/admin", "Internal admin console (React)"),
    ("packages/sdk", "TypeScript client SDK"),
    ("infra", "Terraform modules for the service"),
)


class Criterion(NamedTuple):
    """One readiness criterion of the packaged model."""

    id: str
    level: int
    app_scoped: bool
    skippable: bool


@functools.cache
def criteria() -> tuple[Criterion, ...]:
    """The criteria of the packaged readiness model (auditor/data/readiness-criteria.yaml)."""
    text = importlib.resources.files("auditor").joinpath("data/readiness-criteria.yaml").read_text()
    table: dict[str, Any] = YAML(typ="safe", pure=True).load(text)["criteria"]
    return tuple(
        Criterion(
            cid,
            int(spec["level"]),
            spec.get("scope") == "application",
            bool(spec.get("skippable", False)),
        )
        for cid, spec in table.items()
    )


def repo_names(rng: random.Random, count: int) -> list[str]:
    """`count` distinct repository names such as `payments-api`."""
    combos = [f"{team}-{kind}" for team in _TEAMS for kind in _KINDS]
    rng.shuffle(combos)
    return [
        combos[i % len(combos)] + (f"-{i // len(combos) + 1}" if i >= len(combos) else "")
        for i in range(count)
    ]


def _apps(rng: random.Random) -> JsonObj:
    if rng.random() < 0.7:
        return {".": {"description": "Single-application repository"}}
    picked = rng.sample(_APPS, rng.randint(2, 4))
    return {path: {"description": text} for path, text in sorted(picked)}


class _Repo:
    """A repository's fixed traits; `maturity` grows with each report."""

    def __init__(self, rng: random.Random, name: str) -> None:
        self.url = f"https://github.com/acme/{name}"
        self.apps = _apps(rng)
        self.maturity = rng.uniform(0.15, 0.85)
        self.skipped = {c.id for c in criteria() if c.skippable and rng.random() < 0.35}
        if len(self.apps) == 1:
            self.skipped.add("monorepo_tooling")
        self.hurdle = {c.id: [rng.random() for _ in self.apps] for c in criteria()}


@functools.cache
def _rationale(cid: str, num: int | None, den: int) -> str:
    label = cid.replace("_", " ")
    if num is None:
        return f"Skipped: {label} does not apply to this repository"
    if den > 1:
        return f"{num}/{den} apps satisfy {label}"
    return f"{label.capitalize()} is in place" if num else f"No {label} found"


def _scores(rng: random.Random, repo: _Repo, with_unknown: bool) -> JsonObj:
    scores: JsonObj = {}
    for c in criteria():
        den = len(repo.apps) if c.app_scoped else 1
        num: int | None = None
        if c.id not in repo.skipped:
            chance = repo.maturity * 1.35 - 0.17 * (c.level - 1)
            num = sum(1 for h in repo.hurdle[c.id][:den] if h < chance)
            if rng.random() < 0.03:  # a flaky check flips
                num = den - num if den == 1 else num
        scores[c.id] = {
            "numerator": num,
            "denominator": den,
            "rationale": _rationale(c.id, num, den),
        }
    if with_unknown:
        num = int(rng.random() < repo.maturity)
        scores[UNKNOWN_CRITERION] = {
            "numerator": num,
            "denominator": 1,
            "rationale": _rationale(UNKNOWN_CRITERION, num, 1),
        }
    return scores


def _optional_fields(rng: random.Random, era: float) -> JsonObj:
    version = AGENT_VERSIONS[min(len(AGENT_VERSIONS) - 1, int(era * len(AGENT_VERSIONS)))]
    fields: JsonObj = {}
    if rng.random() < 0.93:
        fields["commitHash"] = hexstr(rng, 40)
    if rng.random() < 0.9:
        fields["branch"] = rng.choice(
            ("main", "main", "main", "master", "develop", "feat/readiness")
        )
    fields["hasLocalChanges"] = rng.random() < 0.15
    if era > 0.3:
        fields["hasNonRemoteCommits"] = rng.random() < 0.1
    if era > 0.2 and rng.random() < 0.85:
        effort = rng.choice(("low", "medium", "medium", "high", "off"))
        fields["modelUsed"] = {
            "id": rng.choice(("claude-sonnet-4-5", "gpt-5-codex")),
            "reasoningEffort": effort,
        }
    if rng.random() < 0.9:
        fields["agentVersion"] = version
    return fields


def _report(rng: random.Random, repo: _Repo, when: datetime, era: float) -> JsonObj:
    report: JsonObj = {
        "reportId": uuid4(rng),
        "createdAt": unix_ms(when),
        "repoUrl": repo.url,
        "apps": repo.apps,
        "report": _scores(rng, repo, with_unknown=era > 0.8),
    }
    report.update(_optional_fields(rng, era))
    return report


#: Share of repositories whose team re-ran the readiness report in the last few weeks.
_ACTIVE_SHARE = 0.7


def _repo_reports(rng: random.Random, repo: _Repo, now: datetime) -> list[JsonObj]:
    window = timedelta(days=240)
    count = rng.choices((1, 2, 3, 4, 5, 6), (15, 20, 25, 20, 12, 8))[0]
    when = now - window + timedelta(days=rng.uniform(0, 200))
    out = []
    for _ in range(count):
        if when >= now:
            break
        era = 1 - (now - when) / window
        out.append(_report(rng, repo, when, era))
        repo.maturity = min(0.98, repo.maturity + rng.uniform(0.0, 0.08))
        when += timedelta(days=rng.uniform(5, 60), seconds=rng.randint(0, 86399))
    recent = now - timedelta(days=rng.uniform(0.5, 25))
    if rng.random() < _ACTIVE_SHARE and (not out or out[-1]["createdAt"] < unix_ms(recent)):
        out.append(_report(rng, repo, recent, 1 - (now - recent) / window))  # an active repo
    return out


def generate_reports(rng: random.Random, repos: int, now: datetime) -> list[JsonObj]:
    """Readiness reports for `repos` repositories, ascending by `createdAt`."""
    reports: list[JsonObj] = []
    for name in repo_names(rng, repos):
        reports.extend(_repo_reports(rng, _Repo(rng, name), now))
    reports.sort(key=lambda r: (r["createdAt"], r["reportId"]))
    return reports
