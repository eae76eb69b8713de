"""Policy: the language. YAML policy files in, validated and compiled rules (`PolicySet`) out.

`load_policies` reads files or folders safely (`yamlsafe`), checks them against the JSON Schema
built from the operator registry (`schema`), compiles each `when`/`assert` into a frozen
condition tree (`compile` → `conditions`, paths by `pathexpr`, `{ref: …}` by `refs`) and reports
every problem at once as `file:line:col: error: $.json.path: message`. `history_warnings`
(`lint`) checks rule paths against the stored history. Running the trees is not done here:
that is `auditor.evaluate`. `phrasing` words values and expectations for both stages.

The names below are imported on first use (PEP 562), so what needs only a submodule (the
readiness model reads its YAML with `yamlsafe`; a rule's `model`) does not load the loader,
the linter and the JSON Schema validator.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.common import lazy

if TYPE_CHECKING:
    from auditor.policy.conditions import Condition
    from auditor.policy.lint import history_warnings
    from auditor.policy.loader import PolicySet, load_policies, policy_files, sort_problems
    from auditor.policy.model import PolicyFile, Rule


def _shipped_dir() -> Path:
    repo_copy = Path(__file__).resolve().parents[2] / "policies"
    return repo_copy if repo_copy.is_dir() else Path(__file__).resolve().parents[1] / "policies"


#: The policy packs that ship with the tool.
SHIPPED_POLICY_DIR: Path = _shipped_dir()

#: How the reports name a shipped pack that lies outside the working folder: `(shipped)
#: policies/baseline.yaml`, never `policies/baseline.yaml`, which names the working folder's
#: own file of that path (a copy of the packs kept in the repository, edited or not). SARIF
#: keeps `policies/…` as its location (`report.sarif.shipped_artifact_location`).
SHIPPED_PREFIX = "(shipped) policies/"

_WHERE = {
    "Condition": "conditions",
    "history_warnings": "lint",
    "PolicySet": "loader",
    "load_policies": "loader",
    "policy_files": "loader",
    "sort_problems": "loader",
    "PolicyFile": "model",
    "Rule": "model",
}

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


def __getattr__(name: str) -> Any:
    return lazy.load(__name__, _WHERE, name)


def __dir__() -> list[str]:
    return lazy.listed(globals(), __all__)
