"""Small realistic edits admins make to the settings, one revision at a time.

Each mutation takes the current settings and gives new settings (copying only the touched
subtree, so thousands of revisions stay cheap) or `None` when it does not apply right now.
Models and entries listed in `PINNED` are left to the scripted story in `data_story`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from auditor.emulator import data_settings as vocab
from auditor.emulator.data_common import JsonObj, get_in, set_in

Mutation = Callable[[JsonObj, random.Random], JsonObj | None]
PINNED = frozenset({"custom:acme-gpt", "custom:local-llama"})


def _toggle_list(
    s: JsonObj,
    path: tuple[str, ...],
    pool: tuple[str, ...],
    rng: random.Random,
    keep: frozenset[str] = frozenset(),
) -> JsonObj | None:
    current = list(get_in(s, path, []) or [])
    addable = [x for x in pool if x not in current and x not in keep]
    removable = [x for x in current if x in pool and x not in keep]
    if addable and (not removable or rng.random() < 0.6):
        return set_in(s, path, [*current, rng.choice(addable)])
    if removable:
        gone = rng.choice(removable)
        return set_in(s, path, [x for x in current if x != gone])
    return None


def allowlist(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or remove a command on the allowlist."""
    return _toggle_list(s, ("commandAllowlist",), vocab.ALLOW_COMMANDS, rng)


def denylist(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or remove a command on the denylist."""
    return _toggle_list(s, ("commandDenylist",), vocab.DENY_COMMANDS, rng)


def blocklist(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or remove a command on the blocklist."""
    return _toggle_list(s, ("commandBlocklist",), vocab.BLOCK_COMMANDS, rng)


def sandbox_mode(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Switch the sandbox mode."""
    mode = get_in(s, ("sandbox", "mode"))
    return set_in(s, ("sandbox", "mode"), rng.choice([m for m in vocab.SANDBOX_MODES if m != mode]))


def sandbox_write(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or remove a writable path (never `/`: that is scripted)."""
    path = ("sandbox", "filesystem", "allowWrite")
    return _toggle_list(s, path, vocab.ALLOW_WRITE, rng, keep=frozenset({"./"}))


def sandbox_deny_read(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or remove a path the agent may not read."""
    return _toggle_list(s, ("sandbox", "filesystem", "denyRead"), vocab.DENY_READ, rng)


def sandbox_domains(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or remove an allowed network domain."""
    return _toggle_list(s, ("sandbox", "network", "allowedDomains"), vocab.DOMAINS, rng)


def local_binding(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Flip whether sandboxed commands may bind local ports."""
    path = ("sandbox", "network", "allowLocalBinding")
    return set_in(s, path, not get_in(s, path, False))


def network_ips(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or remove an allowed IP range."""
    return _toggle_list(s, ("networkPolicy", "allowedIps"), vocab.IP_RANGES, rng)


def subagent_autonomy(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Move the sub-agent autonomy level between off and medium."""
    level = get_in(s, ("subagentAutonomyLevel",))
    choices = [x for x in ("off", "low", "medium") if x != level]
    return set_in(s, ("subagentAutonomyLevel",), rng.choice(choices))


def max_autonomy(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Move the autonomy ceiling between low and medium (high is scripted)."""
    level = get_in(s, ("maxAutonomyLevel",))
    if level not in ("low", "medium"):
        return None
    return set_in(s, ("maxAutonomyLevel",), "low" if level == "medium" else "medium")


def retention(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Change how long sessions are retained."""
    days = get_in(s, ("sessionRetentionDays",))
    return set_in(
        s, ("sessionRetentionDays",), rng.choice([d for d in vocab.RETENTION_DAYS if d != days])
    )


def toggle_flag(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Flip one of the organization-wide booleans."""
    key = rng.choice(vocab.TOGGLES)
    return set_in(s, (key,), not s.get(key, False))


def default_model(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Change the default session model or reasoning effort."""
    if rng.random() < 0.5:
        return set_in(s, ("sessionDefaultSettings", "model"), rng.choice(vocab.MODELS))
    effort = rng.choice(("low", "medium", "high", "dynamic"))
    return set_in(s, ("sessionDefaultSettings", "reasoningEffort"), effort)


def allowed_models(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or remove a model on the model policy's allowlist."""
    return _toggle_list(
        s,
        ("modelPolicy", "allowedModelIds"),
        vocab.MODELS,
        rng,
        keep=frozenset({"claude-sonnet-4-5"}),
    )


def model_policy_flag(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Flip one model-policy boolean."""
    key = rng.choice(("allowAllSvcModels", "isFastModelsAllowed", "allowSvcRouterByok"))
    return set_in(s, ("modelPolicy", key), not get_in(s, ("modelPolicy", key), False))


def mcp_allowlist(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Edit the MCP allowlist once the policy is on."""
    if not get_in(s, ("mcpPolicy", "enabled"), False):
        return None
    return _toggle_list(s, ("mcpPolicy", "allowlist"), vocab.MCP_SERVERS, rng)


def skills(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Disable or re-enable a skill."""
    return _toggle_list(s, ("disabledSkills",), vocab.SKILLS, rng)


def computer_emails(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Grant or revoke managed-computer access for an admin."""
    pool = tuple(f"{name}@{'acme.example'}" for name in vocab.ADMIN_EMAILS)
    return _toggle_list(s, ("managedComputersAllowedEmails",), pool, rng)


def models_of(s: JsonObj) -> list[JsonObj]:
    """The custom models that are objects."""
    return [m for m in s.get("customModels") or [] if isinstance(m, dict)]


def put_models(s: JsonObj, models: list[JsonObj]) -> JsonObj:
    """Settings with `customModels` replaced and each `index` renumbered."""
    return set_in(s, ("customModels",), [{**m, "index": i} for i, m in enumerate(models)])


def add_model(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add one of the not-yet-configured custom models."""
    present = {m.get("id") for m in models_of(s)}
    missing = [k for k in vocab.MODEL_FACTORIES if k not in present and k not in PINNED]
    if not missing:
        return None
    return put_models(s, [*models_of(s), vocab.MODEL_FACTORIES[rng.choice(missing)](rng)])


def remove_model(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Remove an unpinned custom model."""
    removable = [m for m in models_of(s) if m.get("id") not in PINNED]
    if not removable:
        return None
    gone = rng.choice(removable)["id"]
    return put_models(s, [m for m in models_of(s) if m.get("id") != gone])


def edit_model(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Rotate a key, or change output tokens or thinking on one custom model."""
    models = models_of(s)
    if not models:
        return None
    pick = rng.randrange(len(models))
    model = dict(models[pick])
    roll = rng.random()
    if roll < 0.45 and "apiKey" in model:
        model["apiKey"] = vocab.new_api_key(rng, model["apiKey"])
    elif roll < 0.75:
        model["maxOutputTokens"] = rng.choice((4096, 8192, 16384, 32000, 64000))
    else:
        model["enableThinking"] = not model.get("enableThinking", False)
    return put_models(s, [model if i == pick else m for i, m in enumerate(models)])


def hooks(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add a hook entry, remove one, or change a timeout."""
    event, matcher, command, timeout = rng.choice(vocab.hook_commands(rng))
    entries = list(get_in(s, ("hooks", event), []) or [])
    if entries and rng.random() < 0.4:
        entries.pop(rng.randrange(len(entries)))
    elif entries and rng.random() < 0.5:
        first = entries[0]
        inner = [{**h, "timeout": rng.choice((5, 10, 30, 60))} for h in first.get("hooks", [])]
        entries[0] = {**first, "hooks": inner}
    else:
        entry = {
            "matcher": matcher,
            "hooks": [{"type": "command", "command": command, "timeout": timeout}],
        }
        entries.append(entry)
    return set_in(s, ("hooks", event), entries)


def env(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add, change or remove an environment entry."""
    current = dict(s.get("env") or {})
    key, value = rng.choice(sorted(vocab.env_entries(rng).items()))
    if key in current and rng.random() < 0.4:
        del current[key]
    else:
        current[key] = value
    return set_in(s, ("env",), current)


def marketplace(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Pin a plugin marketplace, or bump a pin to a new commit."""
    pins = list(s.get("strictKnownMarketplaces") or [])
    repo = rng.choice(("acme/agent-plugins", "acme/security-skills", "vendor/official-plugins"))
    fresh = vocab.marketplace_pin(rng, repo)
    pins = [fresh if p.get("repo") == repo else p for p in pins]
    if fresh not in pins:
        pins.append(fresh)
    return set_in(s, ("strictKnownMarketplaces",), pins)


def url_override(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add an MCP URL autonomy override."""
    pattern = rng.choice(
        ("https://mcp.linear.app/*", "https://mcp.sentry.dev/*", "https://*.acme.example/mcp")
    )
    entries = [e for e in s.get("mcpAutonomyUrlOverrides") or [] if e.get("urlPattern") != pattern]
    entries.append({"urlPattern": pattern, "defaultLevel": rng.choice(("off", "low", "medium"))})
    return set_in(s, ("mcpAutonomyUrlOverrides",), entries)


def router_rules(s: JsonObj, rng: random.Random) -> JsonObj | None:
    """Add or replace a model-router rule."""
    rule = rng.choice(
        (
            {"guidance": "Use the heavy model for migrations", "when": "task mentions migration"},
            {"guidance": "Use the light model for docs", "when": "only markdown files change"},
            {"guidance": "Never route to BYOK models", "when": "repository is tagged pci"},
        )
    )
    rules = [r for r in s.get("svcRouterRules") or [] if r.get("when") != rule["when"]]
    return set_in(s, ("svcRouterRules",), [*rules, rule])


# (mutation, weight): list edits and model work dominate, as in real admin activity.
CATALOGUE: tuple[tuple[Mutation, int], ...] = (
    (allowlist, 14),
    (denylist, 8),
    (blocklist, 5),
    (sandbox_mode, 3),
    (sandbox_write, 6),
    (sandbox_deny_read, 4),
    (sandbox_domains, 10),
    (local_binding, 2),
    (network_ips, 4),
    (subagent_autonomy, 3),
    (max_autonomy, 3),
    (retention, 2),
    (toggle_flag, 8),
    (default_model, 5),
    (allowed_models, 6),
    (model_policy_flag, 3),
    (mcp_allowlist, 6),
    (skills, 2),
    (computer_emails, 3),
    (add_model, 4),
    (remove_model, 2),
    (edit_model, 9),
    (hooks, 6),
    (env, 6),
    (marketplace, 3),
    (url_override, 2),
    (router_rules, 2),
)


def mutate(s: JsonObj, rng: random.Random) -> JsonObj:
    """Apply one applicable random mutation (retrying until one applies)."""
    funcs = [f for f, _ in CATALOGUE]
    weights = [w for _, w in CATALOGUE]
    for _ in range(20):
        result = rng.choices(funcs, weights)[0](s, rng)
        if result is not None and result != s:
            return result
    return allowlist(s, rng) or s
