"""The emulator's dataset: a seed (plus sizes and `now`) in, realistic API objects out.

`Dataset.history` holds raw enterprise-control changes ascending by revision; each revision
is built from the previous one by a small mutation that copies only the touched subtree, so
revisions share unchanged subtrees: treat them as read-only. `Dataset.reports` holds raw
readiness reports ascending by `createdAt`. All timestamps derive from `now`, never the clock.
"""

from __future__ import annotations

import bisect
import random
import threading
from datetime import UTC, date, datetime, time, timedelta

from auditor.emulator import data_analytics, data_story
from auditor.emulator.data_common import (
    DEFAULT_NOW,
    EMAIL_DOMAIN,
    JsonObj,
    hexstr,
    iso,
    set_in,
    stable_id,
)
from auditor.emulator.data_mutations import models_of, mutate, put_models
from auditor.emulator.data_reports import generate_reports
from auditor.emulator.data_settings import baseline_settings

HISTORY_SPAN = timedelta(days=330)
# (name, email local part, weight, active from, active until) as fractions of the timeline
ADMINS = (
    ("Priya Raman", "priya.raman", 30, 0.0, 1.0),
    ("Marcus Chen", "marcus.chen", 25, 0.0, 1.0),
    ("Sofia Alvarez", "sofia.alvarez", 15, 0.0, 1.0),
    ("Daniel Okafor", "daniel.okafor", 10, 0.0, 0.72),
    ("Hannah Becker", "hannah.becker", 8, 0.2, 1.0),
    ("Tomás Novak", "tomas.novak", 6, 0.5, 1.0),
    ("Terraform Automation", "terraform-bot", 6, 0.3, 1.0),
)


def _user(name: str, local: str) -> dict[str, str]:
    email = f"{local}@{EMAIL_DOMAIN}"
    return {"id": stable_id("usr_", email), "email": email, "name": name}


USERS = {local: _user(name, local) for name, local, *_ in ADMINS}
USERS[data_story.SYSTEM_USER] = _user("Platform API migration", "system")


def _pick_author(rng: random.Random, era: float) -> dict[str, str]:
    active = [(local, weight) for _, local, weight, start, end in ADMINS if start <= era <= end]
    return USERS[rng.choices([a for a, _ in active], [w for _, w in active])[0]]


def _timeline(rng: random.Random, count: int, now: datetime) -> list[tuple[datetime, bool]]:
    """`count` ascending times over HISTORY_SPAN, each flagged True when it continues a burst."""
    gaps = [
        (rng.uniform(0.001, 0.02), True) if rng.random() < 0.35 else (rng.expovariate(1.0), False)
        for _ in range(count - 1)
    ]
    scale = (HISTORY_SPAN - timedelta(days=1)).total_seconds() / max(1e-9, sum(g for g, _ in gaps))
    moment = now - HISTORY_SPAN
    times = [(moment, False)]
    for gap, burst in gaps:
        moment += timedelta(seconds=max(1, int(gap * scale)))
        times.append((moment, burst))
    return times


class Dataset:
    """Seeded settings history, readiness reports, computers and analytics users."""

    def __init__(self, *, seed: int, now: datetime) -> None:
        self.seed = seed
        self.now = now
        self.history: list[JsonObj] = []
        self.reports: list[JsonObj] = []
        self.computers: list[JsonObj] = []
        self.analytics_users: list[JsonObj] = data_analytics.analytics_users()
        self.lock = threading.RLock()
        self._rng = random.Random(f"{seed}:later")
        self._canaries = 0
        self._newest: tuple[tuple[int, str], list[JsonObj], dict[str, int]] = ((-1, ""), [], {})
        # The readiness listing as another service may serve it within the spec (which states
        # no order and only a positive `limit`): "newest" first (the real service), "oldest"
        # first or by report "id"; and `report_limit_cap`, the most reports a page holds
        # whatever `limit` asks (None: as asked).
        self.report_order = "newest"
        self.report_limit_cap: int | None = None
        self._times: tuple[int, list[datetime], list[tuple[date, str]]] = (-1, [], [])

    def _timeline(self) -> tuple[list[datetime], list[tuple[date, str]]]:
        """Each revision's time, and (day, model) for every model a revision newly blocked."""
        with self.lock:
            if self._times[0] != len(self.history):
                times, blocks = [], []
                before: set[str] = set()
                for change in self.history:
                    when = datetime.fromisoformat(change["updatedAt"].replace("Z", "+00:00"))
                    times.append(when)
                    policy = change["settings"].get("modelPolicy") or {}
                    now_blocked = set(policy.get("blockedModelIds") or [])
                    blocks += [(when.date(), m) for m in sorted(now_blocked - before)]
                    before = now_blocked
                self._times = (len(self.history), times, blocks)
            return self._times[1], self._times[2]

    def day_facts(self, day: date) -> data_analytics.DayFacts:
        """What the analytics of `day` are made from: the settings in force at its end, and
        the planted violations (a model used on the day it was blocked and the two after; a
        server outside the MCP allowlist on two days)."""
        times, blocks = self._timeline()
        end = datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)
        index = max(0, bisect.bisect_left(times, end) - 1)
        with self.lock:
            settings = self.history[index]["settings"] if self.history else {}
        leaked = next((m for d, m in reversed(blocks) if 0 <= (day - d).days <= 2), None)
        mcp = settings.get("mcpPolicy") or {}
        rogue = (
            bool(mcp.get("enabled")) and (self.now.date() - day).days in data_analytics.ROGUE_DAYS
        )
        return data_analytics.DayFacts(self.seed, day, settings, leaked, rogue)

    def reports_newest_first(self) -> tuple[list[JsonObj], dict[str, int]]:
        """Reports in the listing's order (newest first unless `report_order` says otherwise),
        and each reportId's position in that order (cached)."""
        with self.lock:
            key = (len(self.reports), self.report_order)
            if self._newest[0] != key:
                if self.report_order == "id":
                    ordered = sorted(self.reports, key=lambda r: str(r["reportId"]))
                else:
                    ordered = sorted(
                        self.reports,
                        key=lambda r: (r["createdAt"], r["reportId"]),
                        reverse=self.report_order != "oldest",
                    )
                positions = {r["reportId"]: i for i, r in enumerate(ordered)}
                self._newest = (key, ordered, positions)
            return self._newest[1], self._newest[2]

    def _append(self, settings: JsonObj, user: dict[str, str], when: datetime) -> JsonObj:
        revision = self.history[-1]["revision"] + 1 if self.history else 1
        change = {"revision": revision, "settings": settings, "user": user, "updatedAt": iso(when)}
        self.history.append(change)
        return change

    def _next_time(self) -> datetime:
        last = datetime.fromisoformat(self.history[-1]["updatedAt"].replace("Z", "+00:00"))
        return last + timedelta(minutes=self._rng.uniform(10, 180))

    def add_revisions(self, n: int) -> list[JsonObj]:
        """Append `n` realistic revisions after the latest one; returns them."""
        with self.lock:
            added = []
            for _ in range(n):
                settings = mutate(self.history[-1]["settings"], self._rng)
                added.append(
                    self._append(settings, _pick_author(self._rng, 1.0), self._next_time())
                )
            return added

    def plant_canaries(self) -> list[str]:
        """Append one revision carrying unique canary secrets everywhere secrets live."""
        with self.lock:
            self._canaries += 1
            key, header, query, env_value, bearer = (
                f"CANARY-{self._canaries:02d}{i}-{hexstr(self._rng, 24)}" for i in range(5)
            )
            settings = _with_canaries(
                self.history[-1]["settings"], key, header, query, env_value, bearer
            )
            self._append(settings, USERS["priya.raman"], self._next_time())
            return [key, header, query, env_value, bearer]


def _with_canaries(
    s: JsonObj, key: str, header: str, query: str, env_value: str, bearer: str
) -> JsonObj:
    model = {
        "model": "gpt-4.1",
        "provider": "openai",
        "id": "custom:canary-gateway",
        "index": 0,
        "baseUrl": f"https://llm-canary.acme.example/v1?api_key={query}",
        "apiKey": key,
        "displayName": f"Canary gateway {key}",
        "maxOutputTokens": 8192,
        "extraHeaders": {"Authorization": f"Bearer {header}", "X-Canary-Token": header},
        "extraArgs": {},
    }
    s = put_models(s, [*models_of(s), model])
    s = set_in(s, ("env",), {**(s.get("env") or {}), "CANARY_SERVICE_TOKEN": env_value})
    hook = {
        "matcher": "",
        "hooks": [
            {
                "type": "command",
                "timeout": 10,
                "command": f"curl -sf -H 'Authorization: Bearer {bearer}' https://audit.acme.example/canary",
            }
        ],
    }
    entries = list((s.get("hooks") or {}).get("SessionStart") or [])
    return set_in(s, ("hooks", "SessionStart"), [*entries, hook])


def _build_history(dataset: Dataset, rng: random.Random, revisions: int) -> None:
    script = data_story.schedule(revisions)
    settings = baseline_settings()
    author = USERS["priya.raman"]
    for index, (when, burst) in enumerate(_timeline(rng, revisions, dataset.now)):
        era = index / max(1, revisions - 1)
        if index in script:
            local, event = script[index]
            settings, author = event(settings, rng), USERS[local]
        elif index > 0:
            author = (
                author
                if burst and author["email"] != "system@acme.example"
                else _pick_author(rng, era)
            )
            roll = rng.random()
            if roll > 0.01:  # about one save in a hundred changes nothing
                settings = mutate(settings, rng)
            if roll > 0.8:
                settings = mutate(settings, rng)
        dataset._append(settings, author, when)


def generate_dataset(
    *, seed: int = 7, revisions: int = 240, repos: int = 36, now: datetime | None = None
) -> Dataset:
    """A realistic dataset determined by `seed`, the sizes and `now` (default 2026-11-01 12:00Z)."""
    if revisions < 1 or repos < 0:
        raise ValueError("revisions must be >= 1 and repos >= 0")
    dataset = Dataset(seed=seed, now=now or DEFAULT_NOW)
    _build_history(dataset, random.Random(f"{seed}:history"), revisions)
    dataset.reports = generate_reports(random.Random(f"{seed}:reports"), repos, dataset.now)
    dataset.computers = data_analytics.computers(random.Random(f"{seed}:computers"), dataset.now)
    return dataset
