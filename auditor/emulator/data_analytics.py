"""Seeded analytics rows and computers for the emulator's secondary endpoints.

Analytics rows are derived from (seed, date), so any date range is answered consistently
without storing anything; computers are a small fixed set.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from auditor.emulator.data_common import JsonObj, hexstr, stable_id, unix_ms, uuid4

ORG_ID = "org_acme_7f3c2a"
CLIENTS = ("terminal-ui", "web", "non-interactive-cli")
TOOLS = ("Read", "Edit", "Execute", "Grep", "Glob", "Create", "WebSearch", "TodoWrite")
MODELS = ("claude-sonnet-4-5", "gpt-5-codex", "claude-haiku-4-5", "custom:acme-gpt")
_FIRST = (
    "alex",
    "bea",
    "chen",
    "dara",
    "eli",
    "fatima",
    "gus",
    "hiro",
    "ines",
    "jon",
    "kemi",
    "lars",
)
_LAST = ("adams", "brown", "costa", "diaz", "evans", "fischer")


def analytics_users() -> list[JsonObj]:
    """The organization's active developers, sorted by id (the users endpoint pages by id)."""
    users: list[JsonObj] = []
    for first in _FIRST:
        for last in _LAST[: 3 + len(first) % 4]:
            email = f"{first}.{last}@acme.example"
            users.append({"user_id": stable_id("usr_", email), "user_email": email})
    users.append({"user_id": stable_id("usr_", "ci-bot"), "user_email": None})
    return sorted(users, key=lambda u: u["user_id"])


def _day_rng(seed: int, topic: str, day: date) -> random.Random:
    return random.Random(f"{seed}:{topic}:{day.isoformat()}")


def days(start: date, end: date) -> list[date]:
    """Every date from `start` to `end` inclusive."""
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


# Service models people pick when the policy allows every service model.
SVC_MODELS = ("claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5-codex", "gemini-2.5-pro")
LEVELS = ("off", "low", "medium", "high")
#: A server outside every allowlist: someone connected it on two days (a planted violation).
ROGUE_MCP = "postgres-prod"
ROGUE_DAYS = (9, 8)  # days before the dataset's `now`


@dataclass(frozen=True)
class DayFacts:
    """What a day's analytics are generated from: the seed, the day, the settings in force at
    the end of it and the planted violations (a model used after it was blocked, a server
    outside the MCP allowlist)."""

    seed: int
    day: date
    settings: JsonObj
    leaked_model: str | None = None  # blocked that day or in the two days before
    rogue_mcp: bool = False


def _policy(s: JsonObj, key: str) -> Any:
    return (s.get("modelPolicy") or {}).get(key)


def day_models(facts: DayFacts) -> list[str]:
    """The models in use on the day: what the settings allow, plus a leaked one."""
    s = facts.settings
    blocked = set(_policy(s, "blockedModelIds") or [])
    allowed = list(_policy(s, "allowedModelIds") or [])
    svc = list(SVC_MODELS) if _policy(s, "allowAllSvcModels") or not allowed else allowed
    models = [m for m in svc if m not in blocked]
    custom = [m.get("id") for m in s.get("customModels") or [] if isinstance(m, dict)]
    if _policy(s, "allowCustomModels") and "custom:acme-gpt" in custom:
        models.append("custom:acme-gpt")
    if facts.leaked_model and facts.leaked_model not in models:
        models.append(facts.leaked_model)
    return models or ["claude-sonnet-4-5"]


def tokens_row(facts: DayFacts) -> JsonObj:
    """One day of token usage with per-model and per-user breakdowns."""
    rng = _day_rng(facts.seed, "tokens", facts.day)
    by_model = []
    for model in day_models(facts):
        inp, out = rng.randint(2_000_000, 40_000_000), rng.randint(200_000, 4_000_000)
        if model == facts.leaked_model:  # a few people's sessions, not the whole team
            inp, out = inp // 12, out // 12
        by_model.append(
            {
                "model": model,
                "input_tokens": inp,
                "output_tokens": out,
                "billable_tokens": inp // 10 + out,
            }
        )
    users = analytics_users()[:8]
    by_user = [
        {
            "user_id": u["user_id"],
            "user_email": u["user_email"],
            "billable_tokens": rng.randint(10_000, 900_000),
        }
        for u in users
    ]
    return {
        "date": facts.day.isoformat(),
        "billable_tokens": sum(m["billable_tokens"] for m in by_model),
        "input_tokens": sum(m["input_tokens"] for m in by_model),
        "output_tokens": sum(m["output_tokens"] for m in by_model),
        "cache_read_tokens": rng.randint(10_000_000, 90_000_000),
        "cache_write_tokens": rng.randint(1_000_000, 9_000_000),
        "by_model": by_model,
        "by_user": by_user,
    }


def _mcp_servers(facts: DayFacts) -> list[str]:
    policy = facts.settings.get("mcpPolicy") or {}
    if policy.get("enabled"):
        servers = sorted(set(policy.get("allowlist") or []))[:3]
    else:
        servers = ["github", "linear"]
    return servers + ([ROGUE_MCP] if facts.rogue_mcp else [])


def _hook_events(facts: DayFacts, rng: random.Random) -> list[JsonObj]:
    hooks = facts.settings.get("hooks") or {}
    if hooks.get("hooksDisabled"):
        return []
    events = []
    for event, entries in sorted(hooks.items()):
        for entry in entries if isinstance(entries, list) else ():
            for hook in entry.get("hooks") or []:
                events.append(
                    {
                        "event": event,
                        "matcher": entry.get("matcher", ""),
                        "command": hook.get("command", ""),
                        "count": rng.randint(0, 900),
                    }
                )
    return events


def _autonomy(facts: DayFacts, rng: random.Random) -> JsonObj:
    ceiling = facts.settings.get("maxAutonomyLevel")
    rank = LEVELS.index(ceiling) if ceiling in LEVELS else len(LEVELS) - 1
    shares = [rng.uniform(0.1, 1.0) if rank >= i else 0.0 for i in (3, 2, 1)]
    shares.append(rng.uniform(0.1, 0.6))
    total = sum(shares)
    high, medium, low, manual = (round(x / total, 3) for x in shares)
    return {"auto_high": high, "auto_medium": medium, "auto_low": low, "manual": manual}


def tools_row(facts: DayFacts) -> JsonObj:
    """One day of tool usage."""
    rng = _day_rng(facts.seed, "tools", facts.day)
    by_tool = [{"tool": t, "invocations": rng.randint(50, 5000)} for t in TOOLS]
    hooks = _hook_events(facts, rng)
    disabled = set(facts.settings.get("disabledSkills") or [])
    skills = [
        {"name": n, "count": rng.randint(0, 30)} for n in ("code-review",) if n not in disabled
    ]
    return {
        "date": facts.day.isoformat(),
        "tool_calls": sum(t["invocations"] for t in by_tool),
        "by_tool": by_tool,
        "mcp_users_with_mcp": rng.randint(0, 20),
        "mcp_by_server": [
            {"server": s, "invocations": rng.randint(1, 400) if s != ROGUE_MCP else 37}
            for s in _mcp_servers(facts)
        ],
        "skills_invocations": sum(k["count"] for k in skills),
        "skills_by_name": skills,
        "slash_commands_invocations": rng.randint(0, 80),
        "slash_commands_by_name": [{"name": "/review", "count": rng.randint(0, 40)}],
        "hooks_invocations": sum(h["count"] for h in hooks),
        "hooks_by_event": hooks,
        "web_users": rng.randint(0, 15),
        "autonomy_ratio_avg": round(rng.uniform(2, 9), 2),
        "autonomy_ratio_p50": round(rng.uniform(2, 6), 2),
        "autonomy_ratio_p90": round(rng.uniform(8, 20), 2),
        "tool_calls_per_session_avg": round(rng.uniform(10, 60), 1),
        "user_turns_per_session_avg": round(rng.uniform(2, 9), 1),
        "tool_autonomy_level_ratio": _autonomy(facts, rng),
    }


def activity_row(facts: DayFacts) -> JsonObj:
    """One day of active users, sessions and messages."""
    rng = _day_rng(facts.seed, "activity", facts.day)
    by_client = {c: rng.randint(0, 40) for c in CLIENTS}
    sessions = rng.randint(40, 400)
    return {
        "date": facts.day.isoformat(),
        "daily_active_users": max(by_client.values()) + rng.randint(0, 5),
        "weekly_active_users": rng.randint(40, 55),
        "monthly_active_users": rng.randint(55, 61),
        "daily_active_users_by_client": by_client,
        "sessions": sessions,
        "messages": sessions * rng.randint(8, 20),
        "user_messages": sessions * rng.randint(2, 6),
    }


def productivity_row(facts: DayFacts) -> JsonObj:
    """One day of files, commits and pull requests."""
    rng = _day_rng(facts.seed, "productivity", facts.day)
    return {
        "date": facts.day.isoformat(),
        "files_created": rng.randint(0, 120),
        "files_edited": rng.randint(50, 900),
        "by_extension": [
            {"extension": e, "count": rng.randint(0, 300)} for e in (".py", ".ts", ".go")
        ],
        "by_language": [
            {"language": lang, "count": rng.randint(0, 300)}
            for lang in ("Python", "TypeScript", "Go")
        ],
        "git_commits": rng.randint(5, 120),
        "git_prs_created": rng.randint(0, 40),
    }


def user_row(facts: DayFacts, user: JsonObj) -> JsonObj:
    """One developer's totals over the requested range (`facts` is its last day)."""
    rng = random.Random(f"{facts.seed}:user:{user['user_id']}:{facts.day.isoformat()}")
    messages = rng.randint(10, 900)
    models = [m for m in day_models(facts) if m != facts.leaked_model]
    primary = rng.choice(models or ["claude-sonnet-4-5"])
    if facts.leaked_model and int(user["user_id"][-2:], 16) % 16 == 0:
        primary = facts.leaked_model  # the few who kept using the blocked model
    return {
        **user,
        "date": facts.day.isoformat(),
        "tool_calls": rng.randint(0, 4000),
        "billable_tokens": rng.randint(0, 5_000_000),
        "primary_model": primary,
        "primary_model_tier": rng.choice(("standard", "thinking")),
        "files_created": rng.randint(0, 60),
        "files_edited": rng.randint(0, 400),
        "git_commits": rng.randint(0, 80),
        "git_prs_created": rng.randint(0, 20),
        "mcp_calls": rng.randint(0, 200),
        "skill_calls": rng.randint(0, 30),
        "slash_commands": rng.randint(0, 40),
        "hooks": rng.randint(0, 500),
        "sessions": rng.randint(1, 90),
        "messages": messages,
        "user_messages": messages // 3,
        "assistant_messages": messages - messages // 3,
        "autonomy_ratio": round(rng.uniform(1, 12), 2),
        "delegation_level": rng.choice(("normal", "auto-medium", "auto-high")),
        "languages": rng.sample(["Python", "TypeScript", "Go", "Rust", "SQL"], 2),
    }


_COMPUTERS = (
    ("dev-box-priya", "user", "e2b"),
    ("ci-runner-01", "service_account", "e2b"),
    ("laptop-marcus", "user", "byom"),
    ("gpu-worker", "service_account", "e2b"),
)


def _steps(rng: random.Random, created: int) -> list[JsonObj]:
    step = {"id": "step-1", "name": "clone repositories", "status": "completed", "error": ""}
    return [
        {
            **step,
            "startedAt": created,
            "completedAt": created + 42_000,
            "installSessionId": uuid4(rng),
        }
    ]


def _computer(rng: random.Random, index: int, now: datetime) -> JsonObj:
    name, owner_kind, provider = _COMPUTERS[index]
    created = unix_ms(now - timedelta(days=40 - 7 * index))
    return {
        "id": f"cmp_{hexstr(rng, 16)}",
        "name": name,
        "providerType": provider,
        "createdAt": created,
        "hostId": uuid4(rng),
        "status": "error" if name == "gpu-worker" else "active",
        "provisioningSteps": [] if provider == "byom" else _steps(rng, created),
        "relayClientUrl": f"wss://relay.acme.example/c/{index}",
        "relayAgentUrl": f"wss://relay.acme.example/a/{index}",
        "remoteUser": "dev",
        "clonedRepoDirectories": ["/workspace/payments-api"],
        "ownerPrincipalKind": owner_kind,
        "ownerId": stable_id("usr_" if owner_kind == "user" else "sa_", name),
        "computerSource": {"kind": "template", "templateId": "tmpl_python311"},
    }


def computers(rng: random.Random, now: datetime) -> list[JsonObj]:
    """A few managed and bring-your-own-machine computers, some owned by service accounts."""
    return [_computer(rng, i, now) for i in range(len(_COMPUTERS))]
