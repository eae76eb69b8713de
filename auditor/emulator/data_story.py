"""The scripted part of the settings history: the events a compliance audit should find.

Placed at fixed fractions of the timeline (so any size of history tells the same story):
sandbox switched on, off for a while and on again; a custom model with a literal key that is
rotated twice; a model served over plain http; MCP policy enabled and edited; hooks; the
autonomy ceiling raised to `high` and lowered; `/` made writable and reverted; retention
lengthened; `enableDroidShield` renamed to `enableAgentShield` by an API migration;
`gpt-5-codex` blocked near the end (the analytics show it used for two more days).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from auditor.emulator import data_settings as vocab
from auditor.emulator.data_common import JsonObj, drop_in, get_in, set_in
from auditor.emulator.data_mutations import models_of, put_models

Event = Callable[[JsonObj, random.Random], JsonObj]
SYSTEM_USER = "system"


def _sandbox_on(s: JsonObj, rng: random.Random) -> JsonObj:
    return set_in(set_in(s, ("sandbox", "enabled"), True), ("sandbox", "mode"), "per-command")


def _sandbox_off(s: JsonObj, rng: random.Random) -> JsonObj:
    return set_in(s, ("sandbox", "enabled"), False)


def _upsert_model(s: JsonObj, model: JsonObj) -> JsonObj:
    models = [m for m in models_of(s) if m.get("id") != model["id"]]
    return put_models(s, [*models, model])


def _add_acme_gpt(s: JsonObj, rng: random.Random) -> JsonObj:
    return _upsert_model(s, vocab.MODEL_FACTORIES["custom:acme-gpt"](rng))


def _add_local_llama(s: JsonObj, rng: random.Random) -> JsonObj:
    return _upsert_model(s, vocab.MODEL_FACTORIES["custom:local-llama"](rng))


def _edit_model(s: JsonObj, model_id: str, **fields: object) -> JsonObj:
    models = [{**m, **fields} if m.get("id") == model_id else m for m in models_of(s)]
    return put_models(s, models)


def _rotate_acme_key(s: JsonObj, rng: random.Random) -> JsonObj:
    current = next((m for m in models_of(s) if m.get("id") == "custom:acme-gpt"), None)
    if current is None:
        s = _add_acme_gpt(s, rng)
        current = models_of(s)[-1]
    return _edit_model(s, "custom:acme-gpt", apiKey=vocab.new_api_key(rng, current.get("apiKey")))


def _move_acme_gateway(s: JsonObj, rng: random.Random) -> JsonObj:
    if not any(m.get("id") == "custom:acme-gpt" for m in models_of(s)):
        s = _add_acme_gpt(s, rng)
    return _edit_model(
        s, "custom:acme-gpt", baseUrl="https://llm-gateway-v2.acme.example/openai/v1"
    )


def _mcp_on(s: JsonObj, rng: random.Random) -> JsonObj:
    return set_in(s, ("mcpPolicy",), {"enabled": True, "allowlist": ["github", "linear"]})


def _mcp_add_sentry(s: JsonObj, rng: random.Random) -> JsonObj:
    current = list(get_in(s, ("mcpPolicy", "allowlist"), []) or [])
    return set_in(s, ("mcpPolicy", "allowlist"), [*[x for x in current if x != "sentry"], "sentry"])


def _audit_hook(s: JsonObj, rng: random.Random) -> JsonObj:
    entry = {
        "matcher": "Execute",
        "hooks": [
            {
                "type": "command",
                "timeout": 10,
                "command": "python3 /opt/acme/hooks/block_dangerous_commands.py",
            }
        ],
    }
    entries = list(get_in(s, ("hooks", "PreToolUse"), []) or [])
    return set_in(s, ("hooks", "PreToolUse"), [*entries, entry])


def _webhook_hook(s: JsonObj, rng: random.Random) -> JsonObj:
    event, matcher, command, timeout = vocab.hook_commands(rng)[6]
    entry = {
        "matcher": matcher,
        "hooks": [{"type": "command", "command": command, "timeout": timeout}],
    }
    entries = list(get_in(s, ("hooks", event), []) or [])
    return set_in(s, ("hooks", event), [*entries, entry])


def _autonomy(level: str) -> Event:
    def event(s: JsonObj, rng: random.Random) -> JsonObj:
        return set_in(s, ("maxAutonomyLevel",), level)

    return event


def _write_root(s: JsonObj, rng: random.Random) -> JsonObj:
    path = ("sandbox", "filesystem", "allowWrite")
    return set_in(s, path, [*(get_in(s, path, []) or []), "/"])


def _unwrite_root(s: JsonObj, rng: random.Random) -> JsonObj:
    path = ("sandbox", "filesystem", "allowWrite")
    return set_in(s, path, [p for p in get_in(s, path, []) or [] if p != "/"])


def _retention_long(s: JsonObj, rng: random.Random) -> JsonObj:
    return set_in(s, ("sessionRetentionDays",), 365)


def _rename_shield(s: JsonObj, rng: random.Random) -> JsonObj:
    value = s.get("enableDroidShield", True)
    return set_in(drop_in(s, ("enableDroidShield",)), ("enableAgentShield",), value)


def _shield_opt_in(s: JsonObj, rng: random.Random) -> JsonObj:
    return set_in(s, ("agentShield20OptIn",), True)


def _github_token_env(s: JsonObj, rng: random.Random) -> JsonObj:
    env = dict(s.get("env") or {})
    env["GITHUB_TOKEN"] = vocab.env_entries(rng)["GITHUB_TOKEN"]
    return set_in(s, ("env",), env)


def _block_codex(s: JsonObj, rng: random.Random) -> JsonObj:
    policy = s.get("modelPolicy") or {}
    blocked = [m for m in policy.get("blockedModelIds") or [] if m != "gpt-5-codex"]
    allowed = [m for m in policy.get("allowedModelIds") or [] if m != "gpt-5-codex"]
    s = set_in(s, ("modelPolicy", "blockedModelIds"), [*blocked, "gpt-5-codex"])
    return set_in(s, ("modelPolicy", "allowedModelIds"), allowed)


# (fraction of the timeline, author email local part or SYSTEM_USER, event)
STORY: tuple[tuple[float, str, Event], ...] = (
    (0.04, "priya.raman", _sandbox_on),
    (0.08, "marcus.chen", _add_acme_gpt),
    (0.15, "sofia.alvarez", _mcp_on),
    (0.20, "priya.raman", _audit_hook),
    (0.26, "sofia.alvarez", _mcp_add_sentry),
    (0.30, "marcus.chen", _rotate_acme_key),
    (0.35, "daniel.okafor", _add_local_llama),
    (0.40, "daniel.okafor", _autonomy("high")),
    (0.47, "priya.raman", _autonomy("medium")),
    (0.55, SYSTEM_USER, _rename_shield),
    (0.56, "hannah.becker", _shield_opt_in),
    (0.60, "tomas.novak", _write_root),
    (0.64, "priya.raman", _unwrite_root),
    (0.70, "hannah.becker", _retention_long),
    (0.75, "marcus.chen", _move_acme_gateway),
    (0.80, "tomas.novak", _sandbox_off),
    (0.83, "priya.raman", _sandbox_on),
    (0.88, "tomas.novak", _github_token_env),
    (0.90, "hannah.becker", _webhook_hook),
    (0.95, "marcus.chen", _rotate_acme_key),
    (0.97, "priya.raman", _block_codex),  # usage of it goes on for two more days (analytics)
)


def schedule(total: int) -> dict[int, tuple[str, Event]]:
    """Revision index (0-based, > 0) -> scripted (author, event), spread over `total` revisions."""
    slots: dict[int, tuple[str, Event]] = {}
    for fraction, author, event in STORY:
        index = max(1, round(fraction * total))
        while index in slots:
            index += 1
        if index < total:
            slots[index] = (author, event)
    return slots
