"""The vocabulary of realistic enterprise-control settings: the first revision, and factories
for the things admins add later (custom models, hooks, env entries, marketplace pins).

Secrets look like the real thing (`sk-proj-…`, `ghp_…`, bearer tokens, credentials in URLs);
`${VAR}` references are deliberately mixed in, because they are not secrets.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from auditor.emulator.data_common import ALNUM, JsonObj, hexstr, token

AUTONOMY = ("off", "low", "medium", "high")
MODELS = (
    "claude-sonnet-4-5",
    "claude-opus-4-1",
    "claude-haiku-4-5",
    "gpt-5",
    "gpt-5-codex",
    "gemini-2.5-pro",
    "glm-4.6",
)
ALLOW_COMMANDS = (
    "ls",
    "cat",
    "pwd",
    "git status",
    "git diff",
    "git log",
    "npm test",
    "npm run lint",
    "pnpm install",
    "pytest",
    "go test ./...",
    "cargo test",
    "make",
    "rg",
    "docker ps",
    "kubectl get pods",
    "terraform plan",
    "uv sync",
)
DENY_COMMANDS = (
    "rm -rf /",
    "rm -rf ~",
    "git push --force",
    "curl * | sh",
    "wget * | bash",
    "chmod 777",
    "docker run --privileged",
    "kubectl delete",
    "terraform apply",
    "npm publish",
)
BLOCK_COMMANDS = ("sudo", "su", "shutdown", "reboot", "mkfs", "dd if=", "nc -l", "ssh", "scp")
ALLOW_WRITE = ("./", "/tmp", "~/.cache", "/var/tmp", "~/.npm", "/workspace", "~/.gradle")
DENY_READ = ("~/.ssh", "~/.aws", "/etc/shadow", ".env", "~/.config/gcloud", "~/.kube")
DOMAINS = (
    "github.com",
    "*.github.com",
    "registry.npmjs.org",
    "pypi.org",
    "files.pythonhosted.org",
    "proxy.golang.org",
    "*.acme.example",
    "crates.io",
    "api.openai.com",
    "*.s3.amazonaws.com",
)
IP_RANGES = ("10.0.0.0/8", "192.168.10.0/24", "203.0.113.17/32", "198.51.100.0/24", "0.0.0.0/0")
MCP_SERVERS = ("github", "linear", "sentry", "notion", "slack", "postgres-readonly", "jira")
SKILLS = ("web-search", "browser", "image-generation", "code-review", "deploy-preview")
RETENTION_DAYS = (30, 60, 90, 180, 365, 730)
SANDBOX_MODES = ("per-command", "per-session", "container")
TOGGLES = (
    "cloudSessionSync",
    "voiceDictationEnabled",
    "wikiCloudSync",
    "advancedAnalyticsEnabled",
    "localSignalsOptIn",
    "includeCoAuthoredByAgent",
    "ideAutoConnect",
    "allowManagedHooksOnly",
    "restrictMemberVisibility",
    "restrictApiKeyCreationToManagers",
    "managedComputersEnabled",
    "byomComputersEnabled",
    "disableAutoUpdate",
    "disableWeeklyUsageSummary",
)
ADMIN_EMAILS = (
    "priya.raman",
    "marcus.chen",
    "sofia.alvarez",
    "daniel.okafor",
    "hannah.becker",
    "tomas.novak",
    "li.wei",
    "amara.nwosu",
)


def openai_key(rng: random.Random) -> str:
    """An OpenAI-style project key."""
    return "sk-proj-" + token(rng, 48)


def anthropic_key(rng: random.Random) -> str:
    """An Anthropic-style API key."""
    return "sk-ant-api03-" + token(rng, 86, ALNUM + "-_") + "AA"


def _custom_model(rng: random.Random, spec: tuple[str, ...]) -> JsonObj:
    model_id, provider, model, base_url, display = spec
    return {
        "model": model,
        "provider": provider,
        "id": model_id,
        "index": 0,
        "baseUrl": base_url,
        "displayName": display,
        "maxContextLimit": rng.choice((128000, 200000, 262144)),
        "enableThinking": rng.random() < 0.4,
        "thinkingMaxTokens": 8192,
        "maxOutputTokens": rng.choice((8192, 16384, 32000)),
        "reasoningEffort": rng.choice(("low", "medium", "high")),
        "extraHeaders": {},
        "extraArgs": {},
        "noImageSupport": rng.random() < 0.3,
        "useInRouter": rng.random() < 0.5,
    }


def _with(model: JsonObj, **fields: object) -> JsonObj:
    return {**model, **fields}


def _acme_gpt(rng: random.Random) -> JsonObj:
    spec = (
        "custom:acme-gpt",
        "openai",
        "gpt-4o",
        "https://llm-gateway.acme.example/v1",
        "Acme GPT-4o (gateway)",
    )
    return _with(
        _custom_model(rng, spec),
        apiKey=openai_key(rng),
        extraHeaders={"X-Acme-Team": "team-7c1f3a"},
    )


def _local_llama(rng: random.Random) -> JsonObj:
    spec = (
        "custom:local-llama",
        "generic-chat-completion-api",
        "meta-llama/Llama-3.3-70B-Instruct",
        "http://10.20.0.15:8000/v1",
        "Llama 3.3 (GPU pool)",
    )
    return _with(_custom_model(rng, spec), apiKey="${LLAMA_API_KEY}")


def _azure(rng: random.Random) -> JsonObj:
    spec = (
        "custom:azure-gpt4o",
        "azure_openai",
        "gpt-4o",
        "https://acme-eastus.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-10-21",
        "Azure GPT-4o (East US)",
    )
    return _with(
        _custom_model(rng, spec),
        apiKey="${AZURE_OPENAI_API_KEY}",
        extraHeaders={"api-key": hexstr(rng, 32)},
    )


def _bedrock(rng: random.Random) -> JsonObj:
    spec = (
        "custom:bedrock-sonnet",
        "bedrock",
        "claude-sonnet-4-5",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
        "Claude Sonnet (Bedrock)",
    )
    hosted = {
        "cloudProfile": "acme-prod",
        "cloudRegion": "us-east-1",
        "hostedBaseUrl": "https://bedrock-runtime.us-east-1.amazonaws.com",
        "cloudAuthRefresh": "aws sso login --profile acme-prod",
        "cloudCredentialExport": "aws configure export-credentials --profile acme-prod",
    }
    model = _with(_custom_model(rng, spec), hosted=hosted)
    return _with(model, baseModelId="anthropic.claude-sonnet-4-5-20250929-v1:0")


def _openrouter(rng: random.Random) -> JsonObj:
    spec = (
        "custom:openrouter-deepseek",
        "generic-chat-completion-api",
        "deepseek/deepseek-chat",
        "https://openrouter.ai/api/v1",
        "DeepSeek V3 (OpenRouter)",
    )
    headers = {"HTTP-Referer": "https://acme.example", "X-Title": "Acme Agents"}
    return _with(
        _custom_model(rng, spec), apiKey="sk-or-v1-" + hexstr(rng, 64), extraHeaders=headers
    )


def _anthropic(rng: random.Random) -> JsonObj:
    spec = (
        "custom:anthropic-direct",
        "anthropic",
        "claude-opus-4-1",
        "https://api.anthropic.com",
        "Claude Opus (direct)",
    )
    return _with(_custom_model(rng, spec), apiKey=anthropic_key(rng))


def _groq(rng: random.Random) -> JsonObj:
    spec = (
        "custom:groq-llama",
        "generic-chat-completion-api",
        "llama-3.3-70b-versatile",
        "https://api.groq.com/openai/v1",
        "Llama 3.3 (Groq)",
    )
    return _with(_custom_model(rng, spec), apiKey="gsk_" + token(rng, 52))


MODEL_FACTORIES: dict[str, Callable[[random.Random], JsonObj]] = {
    "custom:acme-gpt": _acme_gpt,
    "custom:local-llama": _local_llama,
    "custom:azure-gpt4o": _azure,
    "custom:bedrock-sonnet": _bedrock,
    "custom:openrouter-deepseek": _openrouter,
    "custom:anthropic-direct": _anthropic,
    "custom:groq-llama": _groq,
}


def new_api_key(rng: random.Random, old: object) -> str:
    """A rotated key in the same style as `old` (env references stay references)."""
    text = old if isinstance(old, str) else ""
    if text.startswith("${"):
        return text
    prefix = next(
        (p for p in ("sk-proj-", "sk-ant-api03-", "sk-or-v1-", "gsk_") if text.startswith(p)),
        "sk-proj-",
    )
    return prefix + token(rng, max(32, len(text) - len(prefix)))


def hook_commands(rng: random.Random) -> list[tuple[str, str, str, int]]:
    """(event, matcher, command, timeout) entries admins add; some embed credentials."""
    slack = (
        f"https://hooks.slack.com/services/T0ACME{token(rng, 5)}/B0{token(rng, 8)}/{token(rng, 24)}"
    )
    bearer = "tok_" + token(rng, 32)
    return [
        ("PreToolUse", "Execute", "python3 /opt/acme/hooks/block_dangerous_commands.py", 10),
        ("PreToolUse", "Edit|Write", "/opt/acme/hooks/protect-secrets.sh", 5),
        ("PostToolUse", "Edit|Write", "/opt/acme/hooks/format-changed-files.sh", 30),
        ("SessionStart", "", "/opt/acme/hooks/session-banner.sh", 5),
        ("UserPromptSubmit", "", "python3 /opt/acme/hooks/pii_guard.py", 15),
        ("Notification", "", f"curl -s -X POST --data @- {slack}", 10),
        (
            "SessionEnd",
            "",
            f"curl -sf -H 'Authorization: Bearer {bearer}' "
            "https://audit.acme.example/v1/sessions -d @-",
            20,
        ),
        ("Stop", "", "/opt/acme/hooks/summarize-session.sh", 60),
    ]


def env_entries(rng: random.Random) -> dict[str, str]:
    """Environment entries admins set: literal tokens, references, and plain config."""
    return {
        "GITHUB_TOKEN": "ghp_" + token(rng, 36),
        "NPM_TOKEN": "npm_" + token(rng, 36),
        "DD_API_KEY": hexstr(rng, 32),
        "SENTRY_AUTH_TOKEN": "sntrys_" + token(rng, 48),
        "OPENAI_API_KEY": "${OPENAI_API_KEY}",
        "ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}",
        "PIP_INDEX_URL": f"https://ci:{token(rng, 20)}@pypi.acme.example/simple",
        "NODE_OPTIONS": "--max-old-space-size=4096",
        "NO_PROXY": "localhost,127.0.0.1,.acme.internal",
    }


def marketplace_pin(rng: random.Random, repo: str) -> dict[str, str]:
    """A pinned plugin marketplace entry."""
    return {"source": "github", "repo": repo, "ref": "main", "sha": hexstr(rng, 40)}


def baseline_settings() -> JsonObj:
    """The settings of revision 1: a cautious but incomplete first configuration."""
    return {
        "sessionDefaultSettings": {
            "model": "claude-sonnet-4-5",
            "reasoningEffort": "medium",
            "interactionMode": "auto",
            "autonomyLevel": "low",
            "autonomyMode": "normal",
            "specModeModel": "gpt-5",
            "specModeReasoningEffort": "high",
            "runInWorktree": False,
        },
        "maxAutonomyLevel": "medium",
        "subagentAutonomyLevel": "low",
        "subagentModelSettings": {
            "lightModel": "claude-haiku-4-5",
            "lightReasoningEffort": "low",
            "mediumModel": "claude-sonnet-4-5",
            "mediumReasoningEffort": "medium",
            "heavyModel": "claude-opus-4-1",
            "heavyReasoningEffort": "high",
        },
        "mcpAutonomyOverrides": {},
        "builtInToolAutonomyOverrides": {"Execute": "low"},
        "mcpAutonomyUrlOverrides": [],
        "userModelPolicies": {},
        "enabledPlugins": {},
        "extraKnownMarketplaces": {},
        "env": {"HTTPS_PROXY": "http://proxy.acme.example:3128", "NO_PROXY": "localhost,127.0.0.1"},
        "cloudSessionSync": True,
        "voiceDictationEnabled": False,
        "wikiCloudSync": False,
        "advancedAnalyticsEnabled": True,
        "localSignalsOptIn": False,
        "includeCoAuthoredByAgent": True,
        "enableDroidShield": True,
        "ideAutoConnect": True,
        "allowManagedHooksOnly": False,
        "restrictMemberVisibility": False,
        "restrictApiKeyCreationToManagers": False,
        "managedComputersEnabled": True,
        "byomComputersEnabled": False,
        "disableAutoUpdate": False,
        "disableWeeklyUsageSummary": False,
        "commandAllowlist": ["ls", "cat", "git status", "git diff", "npm test", "pytest"],
        "commandDenylist": ["rm -rf /", "curl * | sh"],
        "commandBlocklist": ["sudo", "shutdown"],
        "disabledSkills": [],
        "managedComputersAllowedEmails": ["priya.raman@acme.example", "marcus.chen@acme.example"],
        "byomComputersAllowedEmails": [],
        "customModels": [],
        "modelPolicy": {
            "allowedModelIds": ["claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5"],
            "blockedModelIds": [],
            "allowedBaseUrls": [],
            "requireExplicitOptInModelIds": [],
            "allowCustomModels": True,
            "allowAllSvcModels": False,
            "isFastModelsAllowed": True,
            "allowSvcRouterByok": False,
            "svcRouterByokOnly": False,
        },
        "mcpPolicy": {"enabled": False, "allowlist": []},
        "missionPolicy": {"restrictedAccess": False, "allowedUserIds": []},
        "strictKnownMarketplaces": [],
        "networkPolicy": {"allowedIps": []},
        "sandbox": {
            "enabled": False,
            "mode": "per-command",
            "filesystem": {
                "allowWrite": ["./"],
                "allowRead": [],
                "denyWrite": [".git/hooks"],
                "denyRead": ["~/.ssh"],
            },
            "network": {
                "allowedDomains": ["github.com", "registry.npmjs.org", "pypi.org"],
                "allowUnixSockets": [],
                "allowAllUnixSockets": False,
                "allowLocalBinding": False,
                "httpProxyPort": 3128,
                "socksProxyPort": 1080,
            },
        },
        "hooks": {"hooksDisabled": False, "showHookOutput": True},
        "personaSettings": {"enabledRoles": ["engineering"], "personaConnectors": {}},
        "sessionRetentionDays": 90,
        "svcRouterGuidance": "Prefer the cheapest model that can finish the task.",
        "svcRouterRules": [],
    }
