"""Evaluate: the interpreter. A `PolicySet` and `EvaluationInputs` in, an `Evaluation` out.

Read top-down: `engine.evaluate` sends each rule to its target's walk (`history` for settings
revisions, `change` for revision steps, readiness views from `readiness`); `memo` reuses a
verdict when the values a rule reads repeat; `rule.run_rule` applies `when`, `assert` and
`on_missing`; `conditions.evaluate_condition` runs the condition tree, worded by `outcome`,
`quantify`, `wording` and `refs`. `testing` runs the test cases kept beside policy files
(`auditor policy test`). Results are never two-valued: pass, fail, not_applicable, unknown or
error, each with a one-line message and evidence.
"""

from __future__ import annotations

from auditor.evaluate.engine import Steps, evaluate
from auditor.evaluate.model import Evaluation, EvaluationInputs, RuleResult
from auditor.evaluate.readiness import ReadinessModel, load_readiness_model
from auditor.evaluate.testing import CaseResult, run_policy_tests

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
