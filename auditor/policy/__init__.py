"""Policy files: YAML in, validated and compiled rules (`PolicySet`) out.

`load_policies` reads files or folders, validates them (JSON Schema, then meaning) and reports
every problem at once as `file:line:col: error: $.json.path: message`.
"""

from __future__ import annotations

from pathlib import Path

from auditor.policy.loader import PolicySet, load_policies, policy_files, sort_problems


def _shipped_dir() -> Path:
    repo_copy = Path(__file__).resolve().parents[2] / "policies"
    return repo_copy if repo_copy.is_dir() else Path(__file__).resolve().parents[1] / "policies"


#: The policy packs that ship with the tool.
SHIPPED_POLICY_DIR: Path = _shipped_dir()

__all__ = ["SHIPPED_POLICY_DIR", "PolicySet", "load_policies", "policy_files", "sort_problems"]
