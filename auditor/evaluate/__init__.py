"""Evaluate: the interpreter. A `PolicySet` and `EvaluationInputs` in, an `Evaluation` out.

Read top-down: `engine.evaluate` sends each rule to its target's walk (`history` for settings
revisions, `change` for revision steps, readiness views from `readiness`); `memo` reuses a
verdict when the values a rule reads repeat; `rule.run_rule` applies `when`, `assert` and
`on_missing`; `conditions.evaluate_condition` runs the condition tree, worded by `outcome`,
`quantify`, `wording` and `refs`. `testing` runs the test cases kept beside policy files
(`auditor policy test`). Results are never two-valued: pass, fail, not_applicable, unknown or
error, each with a one-line message and evidence.

The names below are imported on first use (PEP 562), so loading a readiness model or a
waiver file does not load the evaluation engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from auditor.common import lazy

if TYPE_CHECKING:
    from auditor.evaluate.engine import Steps, evaluate
    from auditor.evaluate.model import Evaluation, EvaluationInputs, RuleResult
    from auditor.evaluate.readiness import ReadinessModel, load_readiness_model
    from auditor.evaluate.testing import CaseResult, run_policy_tests

_WHERE = {
    "Steps": "engine",
    "evaluate": "engine",
    "Evaluation": "model",
    "EvaluationInputs": "model",
    "RuleResult": "model",
    "ReadinessModel": "readiness",
    "load_readiness_model": "readiness",
    "CaseResult": "testing",
    "run_policy_tests": "testing",
}

__all__ = [
    "CaseResult",
    "Evaluation",
    "EvaluationInputs",
    "ReadinessModel",
    "RuleResult",
    "Steps",
    "evaluate",
    "load_readiness_model",
    "run_policy_tests",
]


def __getattr__(name: str) -> Any:
    return lazy.load(__name__, _WHERE, name)


def __dir__() -> list[str]:
    return lazy.listed(globals(), __all__)
