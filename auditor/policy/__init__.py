"""Policy: the language. YAML policy files in, validated and compiled rules (`PolicySet`) out.

`load_policies` reads files or folders safely (`yamlsafe`), checks them against the JSON Schema
built from the operator registry (`schema`), compiles each `when`/`assert` into a frozen
condition tree (`compile` → `conditions`, paths by `pathexpr`, `{ref: …}` by `refs`) and reports
every problem at once as `file:line:col: error: $.json.path: message`. `history_warnings`
(`lint`) checks rule paths against the stored history. Running the trees is not done here:
that is `auditor.evaluate`. `phrasing` words values and expectations for both stages.
"""

from __future__ import annotations

from pathlib import Path

from auditor.policy.conditions import Condition
from auditor.policy.lint import history_warnings
from auditor.policy.loader import PolicySet, load_policies, policy_files, sort_problems
from auditor.policy.model import PolicyFile, Rule


def _shipped_dir() -> Path:
    repo_copy = Path(__file__).resolve().parents[2] / "policies"
    return repo_copy if repo_copy.is_dir() else Path(__file__).resolve().parents[1] / "policies"


#: The policy packs that ship with the tool.
SHIPPED_POLICY_DIR: Path = _shipped_dir()

__all__ = [
    "SHIPPED_POLICY_DIR",
    "Condition",
    "PolicyFile",
    "PolicySet",
    "Rule",
    "history_warnings",
    "load_policies",
    "policy_files",
    "sort_problems",
]
