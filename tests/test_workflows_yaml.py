"""The GitHub workflows, the composite Action and the pre-commit hooks, read as GitHub and
pre-commit read them: the structure they require, and the steps that make the advertised setup
work (the state saved on every outcome, one PR comment edited in place, SARIF uploaded)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from auditor.cli import build_parser
from auditor.report.markdown import REVIEW_MARKER
from tests.github_expressions import evaluate, truthy

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((REPO / "examples" / "github").glob("*.yml"))
STATE = ".auditor/state.db"
STATE_PATHS = [STATE, f"{STATE}-journal"]  # a run killed mid-write leaves the journal
PINNED = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")
AUDIT = re.compile(r"^\s*auditor (run|review) ", re.MULTILINE)
UPLOAD = "github/codeql-action/upload-sarif"


def load(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def steps(workflow: Any) -> list[dict[str, Any]]:
    return [s for job in workflow["jobs"].values() for s in job["steps"]]


def uses(step: dict[str, Any]) -> str:
    return str(step.get("uses", "")).split("@")[0]


def test_the_examples_are_there() -> None:
    assert {p.name for p in WORKFLOWS} == {"nightly.yml", "pr-review.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_structure(path: Path) -> None:
    wf = load(path)
    assert {"name", "on", "jobs"} <= set(wf), "ruamel's safe loader keeps `on` a string key"
    for job in wf["jobs"].values():
        assert job["runs-on"] and job["steps"]
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:  # a tag can be moved to other code; a commit SHA cannot
                assert PINNED.fullmatch(step["uses"]), step["uses"]


def test_nightly_restores_the_state_before_the_run_and_saves_it_on_every_outcome() -> None:
    """`auditor run` exits 1 on findings: a save that needs success would never happen."""
    all_steps = steps(load(REPO / "examples" / "github" / "nightly.yml"))
    names = [uses(s) or s.get("name", "") for s in all_steps]
    assert "actions/cache" not in names, "actions/cache saves only when the job succeeds"
    restore = names.index("actions/cache/restore")
    audit = next(i for i, s in enumerate(all_steps) if AUDIT.search(s.get("run", "")))
    save = names.index("actions/cache/save")
    assert restore < audit < save
    restore_with, save_step = all_steps[restore]["with"], all_steps[save]
    assert restore_with["path"].split() == save_step["with"]["path"].split() == STATE_PATHS
    assert save_step["if"].startswith("always()")
    key = save_step["with"]["key"]
    assert "github.run_id" in key and "github.run_attempt" in key, "a cache key is write-once"
    assert restore_with["key"] == key
    assert key.startswith(restore_with["restore-keys"]), "the restore finds the newest save"


def test_the_state_is_saved_only_once_auditor_has_exited() -> None:
    """The runner ends a cancelled step by signalling its shell alone and, 10 s on, killing it;
    auditor can outlive it and still be writing the state file, and a copy taken then can be
    damaged (the file without the journal it was being written with). The audit step writes
    its exit code only once auditor has exited: the save needs that code."""
    all_steps = steps(load(REPO / "examples" / "github" / "nightly.yml"))
    (audit,) = [s for s in all_steps if s.get("id") == "audit"]
    assert AUDIT.search(audit["run"])
    (save,) = [s for s in all_steps if uses(s) == "actions/cache/save"]
    condition = " ".join(save["if"].split())
    assert condition.startswith("always() && ")
    assert f"steps.{audit['id']}.outputs.exit-code != ''" in condition, condition
    assert "||" not in condition, condition
    script = audit["run"]
    assert script.index("wait ") < script.index('echo "exit-code=$code"'), "written last"


def test_every_step_after_the_audit_runs_on_findings() -> None:
    """The audit step fails on findings (exit 1): a step without a status function in its
    `if:` (an implied `success()`) would be skipped. The nightly's drift report runs on
    findings but not on a cancel (`!cancelled()`)."""
    for path in WORKFLOWS:
        all_steps = steps(load(path))
        audit = next(i for i, s in enumerate(all_steps) if AUDIT.search(s.get("run", "")))
        for step in all_steps[audit + 1 :]:
            condition = str(step.get("if", ""))
            assert condition.startswith(("always()", "!cancelled()")), (path.name, step)


def test_pr_review_updates_one_comment_found_by_the_reports_marker() -> None:
    all_steps = steps(load(REPO / "examples" / "github" / "pr-review.yml"))
    (comment,) = [s for s in all_steps if uses(s) == "actions/github-script"]
    script = comment["with"]["script"]
    assert REVIEW_MARKER in script
    assert "updateComment" in script and "createComment" in script
    (sarif,) = [s for s in all_steps if uses(s) == "github/codeql-action/upload-sarif"]
    assert sarif["with"]["sarif_file"] == "reports/review/findings.sarif"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_commands_parse_with_the_real_cli(path: Path) -> None:
    """The command lines shown to users are ones auditor accepts (the audit step starts auditor
    in the background, `… &`, to pass the runner's signals on to it)."""
    parser = build_parser()
    for step in steps(load(path)):
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            if line.strip().startswith("auditor "):
                parser.parse_args(shlex.split(line.removesuffix(" &"))[1:])


def test_composite_action_structure() -> None:
    action = load(REPO / "action.yml")
    assert {"name", "description", "inputs", "runs"} <= set(action)
    runs = action["runs"]
    assert runs["using"] == "composite"
    for step in runs["steps"]:
        assert ("uses" in step) != ("run" in step), step
        if "uses" in step:  # as in the example workflows: a tag can be moved, a SHA cannot
            assert PINNED.fullmatch(step["uses"]), step["uses"]
        if "run" in step:
            assert step["shell"] == "bash", step.get("name")
            assert "${{" not in step["run"], "inputs reach scripts as env, never pasted in"
    for name, spec in action["inputs"].items():
        assert spec["description"], name
        assert "default" in spec or spec.get("required"), name
    referenced = set(re.findall(r"inputs\.([\w-]+)", (REPO / "action.yml").read_text()))
    assert referenced <= set(action["inputs"]), referenced - set(action["inputs"])


def test_composite_action_installs_runs_uploads_sarif_and_posts_the_summary() -> None:
    action = load(REPO / "action.yml")
    all_steps = action["runs"]["steps"]
    kinds = [uses(s) or s["name"] for s in all_steps]
    assert kinds[0] == "actions/setup-python"
    install = next(s for s in all_steps if "pip install" in s.get("run", ""))
    run = next(s for s in all_steps if 'auditor "${args[@]}"' in s.get("run", ""))
    upload = next(s for s in all_steps if uses(s) == "github/codeql-action/upload-sarif")
    summary = next(s for s in all_steps if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    order = [all_steps.index(s) for s in (install, run, upload, summary)]
    assert order == sorted(order)
    assert "run) args=(run)" in run["run"] and "review)" in run["run"]
    assert upload["if"].startswith("always()") and summary["if"].startswith("always()")
    assert action["inputs"]["command"]["default"] == "run"
    assert action["inputs"]["output"]["default"] == "html,md,json,sarif,junit"
    assert "exit-code" in action["outputs"]
    last = all_steps[-1]
    assert last["if"] == "always()" and 'exit "$code"' in last["run"]


def test_pre_commit_hooks() -> None:
    hooks = load(REPO / ".pre-commit-hooks.yaml")
    assert isinstance(hooks, list)
    by_id = {h["id"]: h for h in hooks}
    assert {"auditor-policy-lint", "auditor-review"} <= set(by_id)
    parser = build_parser()
    for hook in hooks:
        assert {"id", "name", "entry", "language", "files"} <= set(hook), hook["id"]
        assert hook["language"] == "python"
        re.compile(hook["files"])
        argv = shlex.split(hook["entry"])
        assert argv[0] == "auditor"
        if hook["id"] == "auditor-review":  # the user gives the file in `args`
            argv.append("settings.yaml")
        parser.parse_args(argv[1:])
    assert by_id["auditor-review"]["pass_filenames"] is False
    lint = by_id["auditor-policy-lint"]
    assert re.search(lint["exclude"], "policies/changes.tests.yaml")
    assert re.search(lint["files"], "policies/changes.yaml")


def _job(path: Path) -> dict[str, Any]:
    (job,) = load(path)["jobs"].values()
    return dict(job)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_step_can_read_the_checkouts_token_and_no_script_interpolates(path: Path) -> None:
    """`persist-credentials: false`: the GITHUB_TOKEN is not left in .git/config for the steps
    that run auditor on repository (or pull-request) content; and no `run:` script contains a
    `${{ }}` expression, where a value such as a pull request's title would become shell code."""
    for step in steps(load(path)):
        if uses(step) == "actions/checkout":
            assert step["with"]["persist-credentials"] is False, step
        assert "${{" not in step.get("run", ""), step


def test_the_nightly_audit_stops_in_time_for_the_state_to_be_saved() -> None:
    """A job that hits its own timeout is cut off whole; a step that hits its timeout is ended
    (SIGINT, then SIGTERM, which the step passes on to auditor: it exits 130/143 leaving the
    file consistent, tests/test_workflow_cancel.py) and the `always()` steps after it still
    save the state and keep the reports."""
    job = _job(REPO / "examples" / "github" / "nightly.yml")
    (audit,) = [s for s in job["steps"] if s.get("id") == "audit"]
    assert audit["timeout-minutes"] < job["timeout-minutes"]


def test_the_pr_review_reads_only_the_settings_file_from_the_pull_request() -> None:
    """Policies, waivers and configuration come from the base branch: a pull request cannot
    waive its own findings, edit the rules it is judged by, or point auditor elsewhere."""
    job = _job(REPO / "examples" / "github" / "pr-review.yml")
    checkouts = [s for s in job["steps"] if uses(s) == "actions/checkout"]
    base, pr = checkouts
    assert base["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    assert "path" not in base["with"], "the base branch is the working tree auditor runs in"
    pr_dir = pr["with"]["path"]
    # only the settings file of the pull request is put on disk
    assert pr["with"]["sparse-checkout"].split() == ["settings/enterprise-controls.yaml"]
    assert pr["with"]["sparse-checkout-cone-mode"] is False
    (take,) = [s for s in job["steps"] if f"-C {pr_dir} " in s.get("run", "")]
    assert f"git -C {pr_dir} show HEAD:settings/enterprise-controls.yaml > " in take["run"]
    after = job["steps"][job["steps"].index(take) + 1 :]
    (sarif,) = [s for s in job["steps"] if uses(s) == "github/codeql-action/upload-sarif"]
    assert not any(pr_dir in str(s) for s in after if s is not sarif), "nothing reads the PR"


def test_the_pr_reviews_sarif_is_filed_under_the_pull_requests_merge_commit() -> None:
    """codeql-action takes the analysis commit from `git rev-parse HEAD` in `checkout_path`
    (the `sha` input is only its fallback when git fails: github/codeql-action src/git-utils.ts
    `getCommitOid`, issue #2807). The working tree is the base branch, so the upload must name
    the pull request's checkout, whose HEAD is the merge commit (github.sha), or the results
    are filed under the base commit and never annotate the pull request."""
    job = _job(REPO / "examples" / "github" / "pr-review.yml")
    _, pr = [s for s in job["steps"] if uses(s) == "actions/checkout"]
    assert "ref" not in pr["with"], "the default ref of a pull_request event: the merge commit"
    (sarif,) = [s for s in job["steps"] if uses(s) == "github/codeql-action/upload-sarif"]
    assert sarif["with"]["checkout_path"] == "${{ github.workspace }}/" + pr["with"]["path"]
    assert "ref" not in sarif["with"] and "sha" not in sarif["with"], "ignored beside git"
    perms = load(REPO / "examples" / "github" / "pr-review.yml")["permissions"]
    assert perms == {
        "contents": "read",
        "pull-requests": "write",
        "security-events": "write",
        "actions": "read",
    }


@pytest.mark.parametrize("name", ["nightly.yml", "pr-review.yml"])
def test_a_workflow_that_uploads_sarif_may_read_its_own_run(name: str) -> None:
    """codeql-action's upload-sarif reads the workflow run it belongs to; in a private
    repository that needs `actions: read`, without which the upload is refused ('Resource not
    accessible by integration'), and an explicit `permissions:` block grants nothing else."""
    workflow = load(REPO / "examples" / "github" / name)
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    assert any(uses(s) == "github/codeql-action/upload-sarif" for s in steps)
    assert workflow["permissions"]["actions"] == "read"
    assert workflow["permissions"]["security-events"] == "write"


# The first major of each action that runs on Node.js 24 (`runs.using: node24`): GitHub has
# run Node 20 actions on Node 24 with a deprecation warning since June 2026 and removed Node 20
# from its runners in September 2026; CodeQL Action v3 is deprecated in December 2026.
NODE24 = {
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/cache/restore": 5,
    "actions/cache/save": 5,
    "actions/upload-artifact": 6,
    "actions/github-script": 8,
    "github/codeql-action/upload-sarif": 4,
}
USES = re.compile(r"uses: ([\w./-]+)@([0-9a-f]{40}) # v(\d+)\.[\d.]+\n")


@pytest.mark.parametrize("path", [*WORKFLOWS, REPO / "action.yml"], ids=lambda p: p.name)
def test_every_action_is_a_release_that_runs_on_node_24(path: Path) -> None:
    """Pinned to a commit with its release beside it, and that release is no deprecated one."""
    text = path.read_text(encoding="utf-8")
    pins = USES.findall(text)
    steps = re.findall(r"^\s*(?:- )?uses: ", text, re.MULTILINE)  # not the comments' examples
    assert len(pins) == len(steps), "each action pinned, its release in a comment"
    old = [(name, major) for name, _, major in pins if int(major) < NODE24[name]]
    assert old == [], old


def _uploads_and_audit(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if path.name == "action.yml":
        all_steps = load(path)["runs"]["steps"]
        audit = next(s for s in all_steps if 'auditor "${args[@]}"' in s.get("run", ""))
    else:
        all_steps = steps(load(path))
        audit = next(s for s in all_steps if AUDIT.search(s.get("run", "")))
    uploads = [s for s in all_steps if uses(s) == "github/codeql-action/upload-sarif"]
    return uploads, audit


@pytest.mark.parametrize("path", [*WORKFLOWS, REPO / "action.yml"], ids=lambda p: p.name)
def test_sarif_is_uploaded_only_after_a_run_that_finished(path: Path) -> None:
    """A cancelled or timed-out run (130/143), an error (2) or a killed step (no code) must
    not upload a SARIF: code scanning would mark every alert it leaves out fixed. The audit
    step keeps its exit code as an output and the upload runs on 0 or 1 only."""
    uploads, audit = _uploads_and_audit(path)
    assert uploads
    script = audit["run"]
    written = 'echo "exit-code=$code" >> "$GITHUB_OUTPUT"'
    assert "set +e" in script and written in script
    assert script.index("set +e") < script.index("code=$?") < script.index(written)
    for upload in uploads:
        assert " ".join(upload["if"].split()).startswith("always() && ")
        for code in ("0", "1"):
            assert _upload_runs(upload, audit["id"], code), (path.name, code)
        for code in ("2", "130", "143", "137", ""):
            assert not _upload_runs(upload, audit["id"], code), (path.name, code)


def _upload_runs(upload: dict[str, Any], audit_id: str, exit_code: str | None) -> bool:
    """Whether GitHub runs the SARIF upload after the audit step wrote `exit_code` (None: it
    wrote none) and every other output, the SARIF file there and the Action's inputs at their
    defaults."""
    outputs = {"sarif": "true"} | ({} if exit_code is None else {"exit-code": exit_code})
    context = {"steps": {audit_id: {"outputs": outputs}}, "inputs": {"upload-sarif": "true"}}
    functions = {"always": lambda: True, "hashFiles": lambda *_: "e3b0c44298fc1c14"}
    return truthy(evaluate(upload["if"], context, functions))


@pytest.mark.parametrize("path", [*WORKFLOWS, REPO / "action.yml"], ids=lambda p: p.name)
def test_an_audit_step_that_wrote_no_exit_code_uploads_no_sarif(path: Path) -> None:
    """The runner kills the step's shell 10 s after a cancel (or it dies some other way) and
    auditor may still be writing: the step has no exit code. GitHub reads the missing output
    as null, and its `==` makes null equal to '0' (both become the number 0), so
    `exit-code == '0' || exit-code == '1'` alone let the upload run: the conditions are
    evaluated here by GitHub's documented rules (tests/github_expressions.py)."""
    uploads, audit = _uploads_and_audit(path)
    for upload in uploads:
        assert not _upload_runs(upload, audit["id"], None), (path.name, upload["if"])


def test_the_expression_rules_are_githubs() -> None:
    """The cases of GitHub's docs and `@actions/expressions` that the conditions lean on."""
    null_output = {"steps": {"audit": {"outputs": {}}}}
    assert evaluate("steps.audit.outputs.exit-code == '0'", null_output) is True
    assert evaluate("steps.audit.outputs.exit-code != ''", null_output) is False
    assert evaluate("steps.audit.outputs.exit-code != 'true'", null_output) is True
    assert evaluate("'0' != ''", {}) is True and evaluate("'' == '0'", {}) is False
    assert evaluate("'ABC' == 'abc'", {}) is True and evaluate("' 0x1F ' == 31", {}) is True
    assert evaluate('contains(fromJSON(\'["0","1"]\'), null)', {}) is True  # no way out
    assert evaluate("'' || 'x'", {}) == "x" and evaluate("1 < 2 == true", {}) is True


@pytest.mark.parametrize("path", [*WORKFLOWS, REPO / "action.yml"], ids=lambda p: p.name)
def test_the_sarif_category_is_set_where_code_scanning_reads_it(path: Path) -> None:
    """upload-sarif applies its `category` input only to a run without
    `automationDetails.id` (github/codeql-action#463), and auditor always writes one: an input
    there does nothing. The category is auditor's `--sarif-category`; the Action passes its
    `sarif-category` input to it."""
    uploads, audit = _uploads_and_audit(path)
    for upload in uploads:
        assert "category" not in upload["with"], upload["with"]
    if path.name == "action.yml":
        assert audit["env"]["SARIF_CATEGORY"] == "${{ inputs.sarif-category }}"
        assert 'args+=(--sarif-category "$SARIF_CATEGORY")' in audit["run"]


PIN = re.compile(r"your-org/auditor@(v[\w.]+)|^\W*rev: (v[\w.]+)", re.MULTILINE)


def test_every_pin_of_auditor_is_the_packages_version() -> None:
    """The examples install the release they document: 0.1.0 kept some secrets in plain text."""
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    (version,) = re.findall(r'^version = "([^"]+)"$', pyproject, re.MULTILINE)
    files = [*WORKFLOWS, REPO / "action.yml", REPO / ".pre-commit-hooks.yaml", REPO / "README.md"]
    pins = {
        (path.name, a or b)
        for path in files
        for a, b in PIN.findall(path.read_text(encoding="utf-8"))
    }
    assert {name for name, _ in pins} == {p.name for p in files}, "every file shows a pin"
    assert {pin for _, pin in pins} == {f"v{version}"}, sorted(pins)


def test_the_pinned_release_is_the_one_the_changelog_adds_to() -> None:
    """The examples rely on what the newest CHANGELOG section adds (no SARIF from an
    interrupted run, `--sarif-category`): they pinned v0.2.0, released before those changes,
    which still closed every code-scanning alert on an interrupted night. The package's
    version (which the pins follow) is the newest section's, released or not."""
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    (version,) = re.findall(r'^version = "([^"]+)"$', pyproject, re.MULTILINE)
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    newest = re.search(r"^## (.+)$", changelog, re.MULTILINE)
    assert newest is not None
    assert newest.group(1).split()[0] == version, newest.group(1)


def test_pr_reviews_of_one_pull_request_do_not_overtake_each_other() -> None:
    """An older push's review finishing after the newer one's would overwrite the comment."""
    workflow = load(REPO / "examples" / "github" / "pr-review.yml")
    concurrency = workflow["concurrency"]
    assert concurrency["group"].endswith("${{ github.event.pull_request.number }}")
    assert concurrency["cancel-in-progress"] is True


def test_every_pull_request_starts_the_review() -> None:
    """No `paths:` filter: GitHub applies one to the pull request's diff against its base, so
    a push that puts the settings file back would start nothing, and the earlier push's
    comment and alerts would stand (tester T96 #1); the take step tells an unchanged file."""
    trigger = load(REPO / "examples" / "github" / "pr-review.yml")["on"]
    event = trigger["pull_request"] or {}
    assert not {"paths", "paths-ignore", "branches", "branches-ignore"} & set(event), event


# github-script runs `script` as the body of an async function of (require, github, context,
# core, …); the harness gives it fakes and prints what it did.
_HARNESS = r"""
const script = require('fs').readFileSync(process.argv[2], 'utf8');
const calls = [];
const fake = (name) => async (args) => { calls.push([name, args]); return {}; };
const github = {
  paginate: async () => JSON.parse(process.env.COMMENTS),
  rest: {issues: {listComments: fake('list'), updateComment: fake('update'),
                  createComment: fake('create')}},
};
const repo = {full_name: 'acme/settings'};
const context = {
  repo: {owner: 'acme', repo: 'settings'}, serverUrl: 'https://github.com', runId: 42,
  payload: {pull_request: {number: 7, base: {repo},
                           head: {repo: process.env.HEAD_REPO === 'null' ? null
                                            : {full_name: process.env.HEAD_REPO}}}},
};
const core = {notice: (text) => calls.push(['notice', text])};
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction('require', 'github', 'context', 'core', script)(require, github, context, core)
  .then(() => console.log(JSON.stringify(calls)));
"""


def _comment_step(tmp_path: Path, exit_code: str, report: str | None, **env: str) -> Any:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    job = _job(REPO / "examples" / "github" / "pr-review.yml")
    (step,) = [s for s in job["steps"] if uses(s) == "actions/github-script"]
    assert step["env"] == {
        "AUDITOR_EXIT": "${{ steps.review.outputs.exit-code }}",
        "AUDITOR_JOB": "${{ job.status }}",
        "AUDITOR_DELETED": "${{ steps.take.outputs.deleted }}",
        "AUDITOR_UNCHANGED": "${{ steps.take.outputs.unchanged }}",
        "AUDITOR_ARTIFACT": "auditor-review-${{ github.run_id }}-${{ github.run_attempt }}",
    }
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "script.js").write_text(step["with"]["script"])
    (tmp_path / "harness.js").write_text(_HARNESS)
    if report is not None:
        (tmp_path / "reports" / "review").mkdir(parents=True)
        (tmp_path / "reports" / "review" / "report.md").write_text(report)
    done = subprocess.run(
        [node, "harness.js", "script.js"],
        cwd=tmp_path,
        env={
            "AUDITOR_EXIT": exit_code,
            "COMMENTS": json.dumps(
                [{"id": 5, "user": {"type": "Bot"}, "body": f"{REVIEW_MARKER}\n0 introduced"}]
            ),
            "HEAD_REPO": "acme/settings",
            "AUDITOR_JOB": "failure",
            "AUDITOR_DELETED": "",
            "AUDITOR_UNCHANGED": "",
            "AUDITOR_ARTIFACT": "auditor-review-42-1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_a_review_that_wrote_no_report_replaces_the_earlier_comment_with_a_notice(
    tmp_path: Path,
) -> None:
    """Exit 2 before the reports (no report.md): the previous push's "0 introduced" must not
    stand for this push. The comment step runs (a cancel too) and says the review failed."""
    job = _job(REPO / "examples" / "github" / "pr-review.yml")
    (step,) = [s for s in job["steps"] if uses(s) == "actions/github-script"]
    assert step["if"] == "always()", "runs without report.md, and on a cancel or a timeout"
    ((kind, args),) = _comment_step(tmp_path, "2", None)
    assert kind == "update" and args["comment_id"] == 5
    assert args["body"].startswith(REVIEW_MARKER + "\n")
    assert "could not review this push** (exit 2)" in args["body"]
    assert "https://github.com/acme/settings/actions/runs/42" in args["body"]


def test_the_comment_step_posts_the_report_and_skips_a_fork(tmp_path: Path) -> None:
    report = f"{REVIEW_MARKER}\n# the review\n"
    ((kind, args),) = _comment_step(tmp_path / "a", "1", report)
    assert (kind, args["body"]) == ("update", report)
    ((kind, text),) = _comment_step(tmp_path / "b", "2", None, HEAD_REPO="someone/settings")
    assert kind == "notice" and "fork" in text


def test_a_cancelled_or_timed_out_review_replaces_the_earlier_comment_with_a_notice(
    tmp_path: Path,
) -> None:
    """A job cancelled by hand or by its timeout before the review finished: no newer push's
    run will replace the comment, so the earlier push's "0 introduced" must not stand. A
    report.md without the review step's exit code is not this push's finished review."""
    ((kind, args),) = _comment_step(tmp_path / "a", "", None, AUDITOR_JOB="cancelled")
    assert kind == "update" and args["comment_id"] == 5
    assert (
        "could not review this push** (the run was cancelled or timed out, exit none)"
        in (args["body"])
    )
    report = f"{REVIEW_MARKER}\n# half a review\n"
    ((kind, args),) = _comment_step(tmp_path / "b", "", report, AUDITOR_JOB="cancelled")
    assert kind == "update" and "could not review this push" in args["body"]


def test_the_comment_step_skips_a_pull_request_whose_fork_was_deleted(tmp_path: Path) -> None:
    """GitHub gives `head.repo: null` once the fork is gone: a notice, not a TypeError."""
    ((kind, text),) = _comment_step(tmp_path, "2", None, HEAD_REPO="null")
    assert kind == "notice" and "fork" in text


@pytest.mark.parametrize("inside", [True, False], ids=["out-in-workspace", "out-in-runner-temp"])
def test_the_actions_sarif_upload_follows_the_file_wherever_out_is(
    tmp_path: Path, inside: bool
) -> None:
    """The upload's condition read `hashFiles('<out>/findings.sarif')`, and hashFiles() sees
    only the workspace: with `out: ${{ runner.temp }}/auditor` the SARIF was never uploaded,
    without a word. The run step, which sees the real file, says whether there is one."""
    action = load(REPO / "action.yml")
    run = next(s for s in action["runs"]["steps"] if 'auditor "${args[@]}"' in s.get("run", ""))
    upload = next(
        s for s in action["runs"]["steps"] if uses(s) == "github/codeql-action/upload-sarif"
    )
    condition = " ".join(upload["if"].split())
    assert "hashFiles" not in condition
    assert f"steps.{run['id']}.outputs.sarif == 'true'" in condition
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    workspace, temp, bin_dir = tmp_path / "work", tmp_path / "runner-temp", tmp_path / "bin"
    for d in (workspace, temp, bin_dir):
        d.mkdir()
    out = "reports/auditor" if inside else str(temp / "auditor")
    fake = bin_dir / "auditor"  # writes the reports `--out` names, exits 1 (findings)
    fake.write_text(
        '#!/bin/bash\nwhile [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done\n'
        'mkdir -p "$out" && echo {} > "$out/findings.sarif" && exit 1\n'
    )
    fake.chmod(0o755)
    outputs = tmp_path / "github-output"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "GITHUB_OUTPUT": str(outputs),
        **{k: str(v) for k, v in run["env"].items() if "${{" not in str(v)},
        "COMMAND": "run",
        "PROPOSED": "",
        "AGAINST": "live",
        "AUTHOR": "",
        "POLICIES": "",
        "WAIVERS": "",
        "FAIL_ON": "low",
        "OUT": out,
        "OUTPUT": "sarif",
        "SARIF_CATEGORY": "",
    }
    shell = [bash, "--noprofile", "--norc", "-eo", "pipefail", "-c"]  # GitHub's `shell: bash`
    subprocess.run([*shell, run["run"]], cwd=workspace, env=env, check=True)
    assert outputs.read_text().splitlines() == ["exit-code=1", "sarif=true"]
    assert (Path(out) if not inside else workspace / out).joinpath("findings.sarif").is_file()


@pytest.mark.parametrize(
    ("given", "passed"),
    [
        ("", []),
        ("policies/ extra.yaml", ["policies/", "extra.yaml"]),
        ("policies/*.yaml", ["policies/*.yaml"]),  # was a.yaml b.yaml: bash expanded the glob
        ("  my policies/a.yaml\nb.yaml  \n\n", ["my policies/a.yaml", "b.yaml"]),
    ],
    ids=["none", "spaces", "glob", "lines"],
)
def test_the_actions_policies_input_reaches_auditor_as_written(
    tmp_path: Path, given: str, passed: list[str]
) -> None:
    """`for policy in $POLICIES` split and globbed: `policies/*.yaml` became every file it
    matched in the workspace, and a path holding a space could not be given at all."""
    action = load(REPO / "action.yml")
    run = next(s for s in action["runs"]["steps"] if 'auditor "${args[@]}"' in s.get("run", ""))
    bash = shutil.which("bash")
    assert bash is not None
    workspace, bin_dir = tmp_path / "work", tmp_path / "bin"
    (workspace / "policies").mkdir(parents=True)
    bin_dir.mkdir()
    for name in ("a.yaml", "b.yaml"):
        (workspace / "policies" / name).write_text("rules: []\n")
    fake = bin_dir / "auditor"  # records its arguments, one per line
    fake.write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$ARGS_FILE"\n')
    fake.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "GITHUB_OUTPUT": str(tmp_path / "github-output"),
        "ARGS_FILE": str(tmp_path / "args"),
        "COMMAND": "run",
        "PROPOSED": "",
        "AGAINST": "live",
        "AUTHOR": "",
        "POLICIES": given,
        "WAIVERS": "",
        "FAIL_ON": "low",
        "OUT": "reports",
        "OUTPUT": "md",
        "SARIF_CATEGORY": "",
    }
    shell = [bash, "--noprofile", "--norc", "-eo", "pipefail", "-c"]  # GitHub's `shell: bash`
    subprocess.run([*shell, run["run"]], cwd=workspace, env=env, check=True)
    args = (tmp_path / "args").read_text().splitlines()
    assert [args[i + 1] for i, a in enumerate(args) if a == "--policy"] == passed


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_a_re_run_can_keep_its_reports(path: Path) -> None:
    """upload-artifact v4+ refuses a second artifact of one name in a workflow run (409
    Conflict), and a re-run ("Re-run failed jobs") is the same run: the nightly's artifact was
    named by the run id alone, so the re-run of a failed night kept none of its reports. Each
    attempt's artifact has a name of its own."""
    for step in steps(load(path)):
        if uses(step) == "actions/upload-artifact":
            name = step["with"]["name"]
            assert "github.run_attempt" in name or step["with"].get("overwrite") is True, name


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_step_that_opens_the_state_file_takes_the_fingerprint_key_from_a_secret(
    path: Path,
) -> None:
    """`AUDITOR_FINGERPRINT_KEY` keeps the key out of the cached state file (which pull
    requests can restore): every step running `auditor` on the state file gets it, from a
    repository secret (empty when it is not set, which auditor reads as not set), with a
    comment saying what it protects."""
    text = path.read_text(encoding="utf-8")
    audits = [s for s in steps(load(path)) if "run" in s and AUDIT.search(s["run"])]
    assert audits
    for step in audits:
        env = step.get("env", {})
        assert env.get("AUDITOR_FINGERPRINT_KEY") == "${{ secrets.AUDITOR_FINGERPRINT_KEY }}"
        if "--offline" not in step["run"]:  # the nightly's drift report asks no service
            assert env.get("AUDITOR_TOKEN") == "${{ secrets.AUDITOR_TOKEN }}"
    comment = text[: text.index("AUDITOR_FINGERPRINT_KEY: ${{")].rsplit("\n\n", 1)[-1]
    assert "Optional" in comment and "never stored in the" in comment and "markers" in comment


# --- tester T21: a cut comment's pointer, a pull request deleting the settings file ---------

PR_REVIEW = REPO / "examples" / "github" / "pr-review.yml"


def test_the_pr_review_keeps_the_reports_its_cut_comment_points_to() -> None:
    """A comment cut at GitHub's limit says "see report.html or findings.json", and the
    review kept neither: they were lost when the runner ended. They are an artifact of the
    run, uploaded whatever the outcome, before the comment that points to them."""
    job = _job(PR_REVIEW)
    names = [uses(s) or s.get("name", "") for s in job["steps"]]
    (upload,) = [s for s in job["steps"] if uses(s) == "actions/upload-artifact"]
    assert upload["if"] == "always()"
    assert upload["with"]["path"] == "reports/review/"
    assert upload["with"]["name"] == "auditor-review-${{ github.run_id }}-${{ github.run_attempt }}"
    assert 1 <= int(upload["with"]["retention-days"]) <= 90
    assert upload["with"]["if-no-files-found"] == "ignore"
    assert names.index("actions/upload-artifact") < names.index("actions/github-script")
    review = next(s for s in job["steps"] if AUDIT.search(s.get("run", "")))
    assert "--out reports/review " in review["run"]


def _cut_report(size: int) -> str:
    """A report.md cut at the comment limit, with auditor's own pointer to the rest."""
    from auditor.report import markdown

    source = Path(markdown.__file__).read_text(encoding="utf-8")
    for part in ("more not shown** (the comment limit is ", "characters): see report.html or"):
        assert part in source, "the workflow's comment step finds auditor's notice by its text"
    tail = (
        "**580 more not shown** (the comment limit is 65536 characters): see report.html or "
        "findings.json.\n\n"
    )
    head = f"{REVIEW_MARKER}\n# the review\n"
    return head + "x" * (size - len(head) - len(tail) - 2) + "\n\n" + tail


def test_a_cut_comment_names_the_artifact_that_holds_the_rest(tmp_path: Path) -> None:
    # the same words in a value shown earlier (a pull request's own text) are left alone
    value = "<code>see report.html or findings.json.</code>\n"
    ((kind, args),) = _comment_step(tmp_path / "v", "1", f"{REVIEW_MARKER}\n{value}")
    assert args["body"] == f"{REVIEW_MARKER}\n{value}"
    ((kind, args),) = _comment_step(tmp_path / "a", "1", _cut_report(60_000))
    assert kind == "update"
    run = "https://github.com/acme/settings/actions/runs/42"
    assert (
        "see report.html or findings.json in the artifact `auditor-review-42-1` of "
        f"[the workflow run]({run})." in args["body"]
    )
    assert len(args["body"]) <= 65536
    # no room left under GitHub's limit: the report as auditor wrote it
    full = _cut_report(65536)
    ((kind, args),) = _comment_step(tmp_path / "b", "1", full)
    assert args["body"] == full


def _take_step_script() -> str:
    job = _job(PR_REVIEW)
    (take,) = [s for s in job["steps"] if s.get("id") == "take"]
    return str(take["run"])


def _pr_clone(tmp_path: Path, content: str | None, base: str | None = None) -> Path:
    """A workspace with the base branch's settings file and `.pr`, a repository whose HEAD
    holds the pull request's settings file (`content`), or has deleted it (None). With
    `base`, the workspace is the base commit's checkout (a repository), its file `base`."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    workspace = tmp_path / "work"
    (workspace / "settings").mkdir(parents=True)
    (workspace / "settings" / "enterprise-controls.yaml").write_text(base or "base: 1\n")
    pr = workspace / ".pr"
    (pr / "settings").mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]

    def run(*argv: str, cwd: Path = pr) -> None:
        subprocess.run([git, *ident, *argv], cwd=cwd, env=env, check=True, capture_output=True)

    if base is not None:
        run("init", "-q", cwd=workspace)
        run("add", "settings/enterprise-controls.yaml", cwd=workspace)
        run("commit", "-qm", "the base commit", cwd=workspace)

    run("init", "-q")
    (pr / "settings" / "enterprise-controls.yaml").write_text("proposed: 1\n")
    (pr / "README.md").write_text("x\n")
    run("add", "-A")
    run("commit", "-qm", "base")
    if content is None:
        run("rm", "-q", "settings/enterprise-controls.yaml")
    else:
        (pr / "settings" / "enterprise-controls.yaml").write_text(content)
        run("add", "-A")
    run("commit", "-qm", "the pull request")
    return workspace


def _run_take_step(workspace: Path) -> tuple[int, str, str]:
    bash = shutil.which("bash")
    assert bash is not None
    outputs = workspace.parent / "github-output"
    outputs.touch()
    shell = _github_shell(PR_REVIEW, _step_with_id(PR_REVIEW, "take"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workspace.parent), "GITHUB_OUTPUT": str(outputs)}
    done = subprocess.run(
        [*shell, _take_step_script()], cwd=workspace, env=env, capture_output=True, text=True
    )
    return done.returncode, done.stdout + done.stderr, outputs.read_text()


def test_the_proposed_settings_file_is_taken_from_the_pull_request(tmp_path: Path) -> None:
    workspace = _pr_clone(tmp_path, "proposed: 2\n")
    code, log, outputs = _run_take_step(workspace)
    assert (code, outputs) == (0, ""), log
    assert (workspace / "settings" / "enterprise-controls.yaml").read_text() == "proposed: 2\n"


def test_a_pull_request_that_deletes_the_settings_file_is_told_so(tmp_path: Path) -> None:
    """`git show` of the deleted file exited 128 after `>` had emptied the base file, the
    review was skipped, and the comment said "exit none … the reason is the last line of the
    review step's log", a step that never ran. The step now names the deletion (an
    annotation on the file), the review step fails the job (after the empty analysis,
    tests below), and the comment repeats it."""
    workspace = _pr_clone(tmp_path, None)
    code, log, outputs = _run_take_step(workspace)
    assert code == 0, "the review step fails the job, after the empty analysis"
    assert outputs == "deleted=true\n"
    assert (
        "::error file=settings/enterprise-controls.yaml::this pull request deletes "
        "settings/enterprise-controls.yaml: there is no proposed settings file to review"
    ) in log
    assert (workspace / "settings" / "enterprise-controls.yaml").read_text() == "base: 1\n"
    ((kind, args),) = _comment_step(tmp_path / "comment", "", None, AUDITOR_DELETED="true")
    assert kind == "update" and args["comment_id"] == 5
    body = args["body"]
    assert body.startswith(REVIEW_MARKER + "\n")
    assert "could not review this push**: it deletes `settings/enterprise-controls.yaml`" in body
    assert "exit none" not in body and "review step" not in body


def test_a_step_failing_before_the_review_is_not_blamed_on_the_review(tmp_path: Path) -> None:
    """No exit code and no cancel: the review never ran (a step before it failed)."""
    ((_kind, args),) = _comment_step(tmp_path, "", None)
    assert "(exit none)" in args["body"]
    assert "The reason is in the log of the step that failed" in args["body"]
    assert "review step's log" not in args["body"]


# --- tester T63: a pull request that leaves the settings file as it is ----------------------


def test_a_pull_request_that_does_not_change_the_settings_file_is_not_reviewed(
    tmp_path: Path,
) -> None:
    """The review compares the file with the LIVE settings: while the committed file and the
    live settings differed (drift), every pull request failed the review, a docs-only one too,
    though the README promised "an unchanged settings file introduces nothing: exit 0". The
    take step now compares the file with the base commit's (git's blob ids) and says
    `unchanged=true`; the review step then exits 0 saying so, without a review against the
    live settings: auditor only writes the empty SARIF, offline, the file against itself, and
    its failing does not fail the step (a warning says the earlier alerts stay)."""
    same = "maxAutonomyLevel: high\n"
    workspace = _pr_clone(tmp_path / "same", same, base=same)
    code, log, outputs = _run_take_step(workspace)
    assert (code, outputs) == (0, "unchanged=true\n"), log
    changed = _pr_clone(tmp_path / "changed", "maxAutonomyLevel: low\n", base=same)
    code, log, outputs = _run_take_step(changed)
    assert (code, outputs) == (0, ""), log
    assert (changed / "settings" / "enterprise-controls.yaml").read_text() == (
        "maxAutonomyLevel: low\n"
    )

    job = _job(PR_REVIEW)
    review = next(s for s in job["steps"] if AUDIT.search(s.get("run", "")))
    assert review["env"]["UNCHANGED"] == "${{ steps.take.outputs.unchanged }}"
    bash = shutil.which("bash")
    assert bash is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "auditor"  # a review that fails on drift, as the real one did
    fake.write_text(
        '#!/bin/bash\necho "summary=${GITHUB_STEP_SUMMARY-unset} $*" >> "$RAN"\nexit 1\n'
    )
    fake.chmod(0o755)
    shell = _github_shell(PR_REVIEW, review)
    for unchanged, want in (("true", 0), ("", 1)):
        out, summary, ran = (tmp_path / f"{n}-{unchanged}" for n in ("out", "summary", "ran"))
        env = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "GITHUB_OUTPUT": str(out),
            "GITHUB_STEP_SUMMARY": str(summary),
            "RAN": str(ran),
            "UNCHANGED": unchanged,
        }
        done = subprocess.run(
            [*shell, review["run"]], cwd=workspace, env=env, capture_output=True, text=True
        )
        assert done.returncode == want, done.stderr
        assert out.read_text() == f"exit-code={want}\n"
        (args,) = ran.read_text().splitlines()
        if unchanged:
            assert args.startswith("summary=unset review settings/enterprise-controls.yaml ")
            assert " --against settings/enterprise-controls.yaml --offline " in args
            said = "does not change settings/enterprise-controls.yaml"
            assert said in done.stdout and said in summary.read_text()
            assert "drift" in summary.read_text()
            assert (
                "::warning::auditor could not write the empty SARIF (exit 1): alerts an earlier "
                "push of this pull request filed stay open in code scanning"
            ) in done.stdout
        else:
            assert args.startswith(f"summary={summary} review settings/enterprise-controls.yaml ")
            assert "--against" not in args and "--offline" not in args


def test_the_steps_an_unchanged_file_does_not_need_are_skipped() -> None:
    """Restoring the state is skipped when the take step says `unchanged=true`, and runs when
    it said nothing (a missing output is null, which is not 'true' under GitHub's rules
    either); Python and auditor are set up either way (auditor writes the unchanged file's
    empty SARIF), and the review step itself always runs."""
    job = _job(PR_REVIEW)
    ids = [s.get("id") for s in job["steps"]]
    take, review = ids.index("take"), ids.index("review")
    between = job["steps"][take + 1 : review]
    assert [uses(s) or s["run"].split()[0] for s in between] == [
        "actions/setup-python",
        "pip",
        "actions/cache/restore",
    ]
    setup, install, restore = between
    assert "if" not in setup and "if" not in install
    for outputs, runs in (({"unchanged": "true"}, False), ({"deleted": "true"}, False), ({}, True)):
        context = {"steps": {"take": {"outputs": outputs}}}
        assert truthy(evaluate(restore["if"], context)) is runs, outputs
    assert "if" not in job["steps"][review]


def test_an_unchanged_settings_file_replaces_an_earlier_comment_and_adds_none(
    tmp_path: Path,
) -> None:
    """A push that reverts the file leaves an earlier push's findings standing unless the
    comment is replaced; a pull request that never changed it gets no comment at all."""
    ((kind, args),) = _comment_step(tmp_path / "a", "0", None, AUDITOR_UNCHANGED="true")
    assert kind == "update" and args["comment_id"] == 5
    body = args["body"]
    assert body.startswith(REVIEW_MARKER + "\n")
    assert "nothing to review in this push" in body and "could not review" not in body
    ((kind, text),) = _comment_step(
        tmp_path / "b", "0", None, AUDITOR_UNCHANGED="true", COMMENTS="[]"
    )
    assert kind == "notice" and "nothing to review" in text


# --- an unchanged file's empty SARIF closes an earlier push's alerts ---------------------------


def _review_step_run(
    tmp_path: Path, unchanged: str, env: dict[str, str]
) -> tuple[int, str, Path, Path]:
    """The review step's script, run as GitHub runs it in a workspace holding the base
    branch's policies and waivers and the proposed settings file, with the real auditor (this
    checkout's) on PATH: (exit code, log, the step's outputs file, the workspace)."""
    import os
    import sys

    bash = shutil.which("bash")
    assert bash is not None
    workspace, bin_dir = tmp_path / "work", tmp_path / "bin"
    (workspace / "settings").mkdir(parents=True)
    bin_dir.mkdir()
    shutil.copytree(REPO / "policies", workspace / "policies")
    shutil.copyfile(REPO / "examples" / "waivers.yaml", workspace / "waivers.yaml")
    shutil.copyfile(
        REPO / "examples" / "proposed-settings.yaml",
        workspace / "settings" / "enterprise-controls.yaml",
    )
    auditor = bin_dir / "auditor"  # what `pip install` puts on PATH, from this checkout
    auditor.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m auditor "$@"\n')
    auditor.chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)  # what setup-python puts on PATH
    (step,) = [s for s in _job(PR_REVIEW)["steps"] if s.get("id") == "review"]
    outputs = tmp_path / "github-output"
    summary = tmp_path / "summary"
    full = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTOR": "someone",
        **{k: str(v) for k, v in _job(PR_REVIEW)["env"].items()},
        # GitHub gives an unset variable or secret as an empty string
        **{k: "" for k, v in step["env"].items() if "${{" in str(v)},
        "UNCHANGED": unchanged,
        **env,
    }
    shell = _github_shell(PR_REVIEW, step)
    done = subprocess.run(
        [*shell, step["run"]],
        cwd=workspace,
        env={**full, "LANG": os.environ.get("LANG", "C.UTF-8")},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one log, in order, as GitHub shows it
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout, outputs, workspace


def test_an_unchanged_settings_file_uploads_an_empty_analysis_of_the_reviews_category(
    tmp_path: Path, emu: Any
) -> None:
    """A push that reverted the settings file uploaded nothing, so code scanning kept showing
    the alerts an earlier push of the pull request filed (the latest analysis of the ref and
    category was still that push's). The unchanged path now has auditor write findings.sarif
    with no results under the same category and tool as the changed path's review: offline,
    without a token (a fork has none), and without adding the review to the job summary."""
    from tests.conftest import OWNER_TOKEN

    online = {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": OWNER_TOKEN,
    }
    code, log, outputs, changed = _review_step_run(tmp_path / "changed", "", online)
    assert code in (0, 1), log
    assert outputs.read_text() == f"exit-code={code}\n"
    reviewed = json.loads((changed / "reports" / "review" / "findings.sarif").read_text())
    (reviewed_run,) = reviewed["runs"]
    assert reviewed_run["results"], "the changed path's review files alerts"

    code, log, outputs, same = _review_step_run(tmp_path / "same", "true", {})
    assert code == 0, log
    assert outputs.read_text() == "exit-code=0\n"
    assert "::warning::" not in log and "auditor: error" not in log, log
    assert sorted(p.name for p in (same / "reports" / "review").iterdir()) == ["findings.sarif"]
    empty = json.loads((same / "reports" / "review" / "findings.sarif").read_text())
    (empty_run,) = empty["runs"]
    assert empty["version"] == reviewed["version"] == "2.1.0"
    assert empty_run["results"] == []
    assert empty_run["tool"]["driver"]["name"] == reviewed_run["tool"]["driver"]["name"]

    def category(run: dict[str, Any]) -> str:  # GitHub: everything before the last `/`
        return str(run["automationDetails"]["id"]).rsplit("/", 1)[0]

    assert category(empty_run) == category(reviewed_run)
    assert category(empty_run) == "auditor/pr-review/settings/enterprise-controls.yaml"
    summary = (tmp_path / "same" / "summary").read_text()
    assert "nothing to review" in summary and REVIEW_MARKER not in summary
    assert not (same / ".auditor").exists(), "no state file opened or made"

    # the upload runs on it, and a refused one does not fail a pull request that changes nothing
    (upload,) = [s for s in _job(PR_REVIEW)["steps"] if uses(s) == UPLOAD]
    assert _upload_runs(upload, "review", "0")
    condition = upload["continue-on-error"].removeprefix("${{").removesuffix("}}")
    for said, goes_on in (({"unchanged": "true"}, True), ({}, False)):
        context = {"steps": {"take": {"outputs": said}}}
        assert truthy(evaluate(condition, context)) is goes_on, said


def test_both_review_command_lines_give_the_same_sarif_category() -> None:
    """Without `--sarif-category` the category names the service's host
    (`auditor/<host>/review/<file>`), and a review against a file has none
    (`auditor/offline/review/<file>`): the empty analysis would not have replaced the alerts."""
    (step,) = [s for s in _job(PR_REVIEW)["steps"] if s.get("id") == "review"]
    parser = build_parser()
    lines = [
        shlex.split(line.strip().removesuffix(" &"))[1:]
        for line in step["run"].replace("\\\n", " ").splitlines()
        if AUDIT.search(line)
    ]
    assert len(lines) == 2
    categories = {parser.parse_args(argv).sarif_category for argv in lines}
    assert categories == {"auditor/pr-review/settings/enterprise-controls.yaml"}


# --- tester T63: the state file where the cache looks for it --------------------------------


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_state_file_is_pinned_where_the_cache_holds_it(tmp_path: Path, path: Path) -> None:
    """The cache steps hold `.auditor/state.db`; a `[tool.auditor] state = "var/auditor.db"` in
    the repository's pyproject.toml moved the state elsewhere, the save was skipped without a
    word and every night was a full sync with nothing to compare with. The job's environment
    pins it: AUDITOR_STATE comes before the config files in auditor's precedence."""
    from auditor.config import load_config

    job = _job(path)
    assert job["env"]["AUDITOR_STATE"] == STATE
    caches = [s for s in job["steps"] if uses(s).startswith("actions/cache/")]
    assert caches
    for step in caches:
        assert step["with"]["path"].split() == STATE_PATHS
        assert "hashFiles" not in step.get("if", "") or f"hashFiles('{STATE}')" in step["if"]
    (tmp_path / "pyproject.toml").write_text('[tool.auditor]\nstate = "var/auditor.db"\n')
    (tmp_path / "auditor.toml").write_text('state = "var/other.db"\n')
    env = {k: str(v) for k, v in job["env"].items()}
    config = load_config(flags={}, env=env, cwd=tmp_path, config_file=tmp_path / "auditor.toml")
    assert config.state_path == tmp_path / STATE


# --- the nightly reports drift: the committed settings file against the live settings -------

NIGHTLY = REPO / "examples" / "github" / "nightly.yml"


def _drift_step() -> dict[str, Any]:
    (step,) = [s for s in _job(NIGHTLY)["steps"] if "--offline" in s.get("run", "")]
    return step


@pytest.mark.parametrize(
    ("exit_code", "settings", "cancelled", "runs"),
    [
        ("0", True, False, True),
        ("1", True, False, True),  # findings: the audit step failed, the drift is still told
        (None, True, False, False),  # no exit code (killed): the state may be being written
        ("2", True, False, False),
        ("130", True, False, False),
        ("1", False, False, False),  # no settings file kept in the repository
        ("1", True, True, False),
    ],
)
def test_the_nightly_reports_drift_after_an_audit_that_finished(
    exit_code: str | None, settings: bool, cancelled: bool, runs: bool
) -> None:
    outputs = {} if exit_code is None else {"exit-code": exit_code}
    context = {"steps": {"audit": {"outputs": outputs}}}
    functions = {
        "cancelled": lambda: cancelled,
        "hashFiles": lambda pattern: "3f2a" if settings and "settings/" in pattern else "",
    }
    assert truthy(evaluate(_drift_step()["if"], context, functions)) is runs


def test_the_drift_step_reviews_the_committed_file_offline_not_as_github_actor(
    tmp_path: Path,
) -> None:
    """It reads what the night synced (`--offline`), fails the night on no finding (`--fail-on
    none`), is not run as GITHUB_ACTOR (whoever last edited the schedule) and leaves the
    job summary to the summary step, which adds it after the night's report. It passes the
    runner's signals on to auditor as the audit step does."""
    step, audit = _drift_step(), next(s for s in _job(NIGHTLY)["steps"] if s.get("id") == "audit")
    script = step["run"]
    signals = audit["run"][audit["run"].index("pid=$!") : audit["run"].index("done") + 4]
    assert signals in script
    bash = shutil.which("bash")
    assert bash is not None
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    fake = bin_dir / "auditor"  # records its arguments and environment, writes a report
    fake.write_text(
        '#!/bin/bash\nprintf "%s\\n" "$@" > "$ARGS_FILE"\n'
        'echo "actor=${GITHUB_ACTOR-unset} summary=${GITHUB_STEP_SUMMARY-unset}" > "$ENV_FILE"\n'
        "mkdir -p reports/nightly/drift\n"
        'echo "<!-- auditor-review -->" > reports/nightly/drift/report.md\nexit 0\n'
    )
    fake.chmod(0o755)
    summary = tmp_path / "summary"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "ARGS_FILE": str(tmp_path / "args"),
        "ENV_FILE": str(tmp_path / "env"),
        "GITHUB_ACTOR": "someone",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    shell = _github_shell(NIGHTLY, step)
    done = subprocess.run([*shell, script], cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:2] == ["review", "settings/enterprise-controls.yaml"]
    assert "--offline" in args and args[args.index("--fail-on") + 1] == "none"
    assert args[args.index("--out") + 1] == "reports/nightly/drift"
    assert (tmp_path / "env").read_text() == "actor=unset summary=unset\n"
    assert not summary.exists()
    (summary_step,) = [s for s in _job(NIGHTLY)["steps"] if s.get("name") == "Job summary"]
    (work / "reports" / "nightly" / "report.md").write_text("# the night\n")
    subprocess.run([*shell, summary_step["run"]], cwd=work, env=env, check=True)
    text = summary.read_text()
    assert text.index("# the night") < text.index("## Drift") < text.index("auditor-review")


def test_the_drift_report_is_the_review_of_the_committed_file_against_what_the_night_synced(
    tmp_path: Path, emu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nightly's two command lines, run in a repository folder against the emulator: the
    drift review reads the state the audit left, offline, and exits 0 on findings."""
    from tests.conftest import OWNER_TOKEN, run_cli

    audit = next(s for s in _job(NIGHTLY)["steps"] if s.get("id") == "audit")["run"]
    drift = _drift_step()["run"]

    def command(script: str) -> list[str]:
        line = next(x for x in script.replace("\\\n", " ").splitlines() if AUDIT.search(x))
        return shlex.split(line.strip().removesuffix(" &"))[1:]

    shutil.copytree(REPO / "policies", tmp_path / "policies")
    shutil.copyfile(REPO / "examples" / "waivers.yaml", tmp_path / "waivers.yaml")
    (tmp_path / "settings").mkdir()
    shutil.copyfile(
        REPO / "examples" / "proposed-settings.yaml",
        tmp_path / "settings" / "enterprise-controls.yaml",
    )
    env = {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": OWNER_TOKEN,
        **{k: str(v) for k, v in _job(NIGHTLY)["env"].items()},
    }
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(command(audit), env, tmp_path)
    assert code in (0, 1), err
    offline = {k: v for k, v in env.items() if k == "AUDITOR_STATE"}  # no service, no token
    code, out, err = run_cli(command(drift), offline, tmp_path)
    assert code == 0, err
    report = (tmp_path / "reports" / "nightly" / "drift" / "report.md").read_text()
    assert report.startswith(REVIEW_MARKER)
    assert "the change would introduce" in out + err


# --- tester T83: a failed restore must not start a new state chain --------------------------


def _check_step() -> dict[str, Any]:
    """The nightly's step between the restore and the audit that runs `gh cache list`."""
    (step,) = [s for s in _job(NIGHTLY)["steps"] if "gh cache list" in s.get("run", "")]
    return step


# What `gh cache list --help` and `gh --version` print: gh 2.45.0 added `--ref` (cli/cli#8711).
GH_HELP = "  -k, --key string   Filter by cache key prefix\n  -r, --ref string   Filter by ref"
GH_VERSION = "gh version 2.83.0 (2025-11-04)\nhttps://github.com/cli/cli/releases/tag/v2.83.0"


def _run_check(
    tmp_path: Path, gh: str | None, script: str | None = None, gh_help: str = GH_HELP
) -> tuple[int, str]:
    """The check step's script (or `script`), run as GitHub runs it, with a stand-in `gh` on
    PATH whose body is `gh` for the listing (None: no gh at all) and which prints `gh_help` for
    `--help`: (exit code, log in order)."""
    bash = shutil.which("bash")
    assert bash is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    if gh is not None:
        fake = bin_dir / "gh"
        fake.write_text(
            "#!/bin/bash\n"
            f'case "$*" in\n'
            f"  --version) printf '%s\\n' {shlex.quote(GH_VERSION)} ;;\n"
            f"  *--help*) printf '%s\\n' {shlex.quote(gh_help)} ;;\n"
            f'  *) printf "%s\\n" "$@" > "$ARGS_FILE"\n{gh}\n ;;\n'
            "esac\n"
        )
        fake.chmod(0o755)
    step = _check_step()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "ARGS_FILE": str(tmp_path / "args"),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/settings",
        "GITHUB_REF": "refs/heads/main",
        **{k: "ghs_fake" for k in step["env"]},
    }
    done = subprocess.run(
        [*_github_shell(NIGHTLY, step), script or step["run"]],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout


def _github_shell(path: Path, step: dict[str, Any]) -> list[str]:
    """The command line GitHub runs a `run:` step's script with (`-c` in place of the file):
    `shell: bash` is `bash --noprofile --norc -eo pipefail {0}`; no shell at all (neither the
    step's nor the workflow's `defaults.run.shell`) is `bash -e {0}`, without pipefail."""
    (job,) = load(path)["jobs"].values()
    shell = step.get("shell") or job.get("defaults", {}).get("run", {}).get("shell")
    shell = shell or load(path).get("defaults", {}).get("run", {}).get("shell")
    bash = shutil.which("bash")
    assert bash is not None
    if shell == "bash":
        return [bash, "--noprofile", "--norc", "-eo", "pipefail", "-c"]
    assert shell is None, shell
    return [bash, "-e", "-c"]


def _saves(audit_outputs: dict[str, str]) -> bool:
    """Whether GitHub runs the nightly's save step after the audit step wrote these outputs."""
    (save,) = [s for s in _job(NIGHTLY)["steps"] if uses(s) == "actions/cache/save"]
    context = {"steps": {"audit": {"outputs": audit_outputs}}}
    functions = {"always": lambda: True, "hashFiles": lambda *_: "e3b0c44298fc1c14"}
    return bool(truthy(evaluate(save["if"], context, functions)))


def test_a_failed_restore_fails_the_night_when_a_state_was_saved_before(tmp_path: Path) -> None:
    """actions/cache turns a failed or timed-out download into a warning and a miss: the night
    ran on an empty state file, saved it as the newest cache, and every later night went on
    from it (the run history, and without AUDITOR_FINGERPRINT_KEY the fingerprint key, lost).
    When nothing was restored and this branch saved a state before, the night now fails
    before the audit, saying so: the audit is skipped, writes no exit code, and the save,
    which needs one, is skipped too; a re-run restores the newest save."""
    job = _job(NIGHTLY)
    names = [uses(s) or s.get("name", "") for s in job["steps"]]
    restore = job["steps"][names.index("actions/cache/restore")]
    check = _check_step()
    audit = next(s for s in job["steps"] if s.get("id") == "audit")
    assert names.index("actions/cache/restore") < job["steps"].index(check)
    assert job["steps"].index(check) < job["steps"].index(audit)
    assert "if" not in audit, "skipped after the check failed (an implied success())"
    assert check["env"] == dict.fromkeys(["GH_TOKEN", "GH_ENTERPRISE_TOKEN"], "${{ github.token }}")
    assert "actions" in load(NIGHTLY)["permissions"], "gh cache list needs actions: read"
    # the check runs on a miss (no output: null, or '') and not after a restore
    condition = check["if"]
    for outputs, runs in (({}, True), ({"cache-matched-key": ""}, True)):
        assert truthy(evaluate(condition, {"steps": {restore["id"]: {"outputs": outputs}}})) is runs
    hit = {"cache-matched-key": "auditor-state-41-1"}
    assert not truthy(evaluate(condition, {"steps": {restore["id"]: {"outputs": hit}}}))

    code, log = _run_check(tmp_path / "saved", "echo auditor-state-902-1")  # the newest save
    assert code != 0
    (error,) = [line for line in log.splitlines() if line.startswith("::error::")]
    assert error.startswith(
        "::error::no state file was restored, but this branch saved one before (the newest: "
        "auditor-state-902-1)"
    )
    assert "Re-run the job" in error and "saves nothing" in error
    # review R48: a save that can never be restored is deleted alone, by its key, so the one
    # before it (and the run history) is restored; not every auditor-state-… cache
    assert (
        "delete it alone (gh cache delete auditor-state-902-1 --repo github.com/acme/settings"
        in (error)
    )
    assert "Delete every auditor-state-… cache only when none of them can be restored" in error
    args = (tmp_path / "saved" / "args").read_text().splitlines()
    assert args[:2] == ["cache", "list"]
    assert args[args.index("--key") + 1] == restore["with"]["restore-keys"]
    assert args[args.index("--ref") + 1] == "refs/heads/main"  # what this branch can restore
    assert args[args.index("--repo") + 1] == "github.com/acme/settings"  # gh's HOST/OWNER/REPO
    # the restore picks the newest created of the prefix's caches
    assert (
        args[args.index("--sort") + 1] == "created_at" and args[args.index("--order") + 1] == "desc"
    )
    assert args[args.index("--limit") + 1] == "1"
    assert args[args.index("--json") + 1] == "key" and args[args.index("--jq") + 1] == ".[].key"
    assert not _saves({}), "the audit step was skipped: no exit code, no save"
    assert _saves({"exit-code": "1"})
    # the reports step runs after the failed check (always()) and finds no reports: no warning
    (keep,) = [s for s in job["steps"] if uses(s) == "actions/upload-artifact"]
    assert keep["if"] == "always()" and keep["with"]["if-no-files-found"] == "ignore"


@pytest.mark.parametrize(
    "gh",
    ["echo", "exit 0"],  # `--jq '.[].key'` of `[]`: an empty line or nothing at all
    ids=["empty-list", "no-results"],
)
def test_a_first_night_with_no_earlier_save_goes_on(tmp_path: Path, gh: str) -> None:
    code, log = _run_check(tmp_path, gh)
    assert code == 0, log
    assert "::error::" not in log
    assert "no state saved before on refs/heads/main: the first night makes a new state file" in log


@pytest.mark.parametrize(
    ("gh", "why"),
    [
        (
            'echo "HTTP 403: Resource not accessible by integration" >&2; exit 1',
            "gh cache list exited 1 (its message is above): the job needs the actions: read "
            "permission",
        ),
        (  # authentication required
            "exit 4",
            "gh cache list exited 4 (its message is above): the job needs the actions: read",
        ),
        (None, "gh is not installed on this runner: install gh 2.45.0 or later"),
        (  # review R48 (nit): an unreadable answer at exit 0 is no permission problem
            "echo 'not a number'",
            "gh cache list printed something other than a cache key (above)",
        ),
    ],
    ids=["forbidden", "no-auth", "no-gh", "odd-output"],
)
def test_a_check_that_cannot_tell_fails_safe(tmp_path: Path, gh: str | None, why: str) -> None:
    """gh failing (no `actions: read`, no token, not installed, an answer it cannot read) is
    no proof of a first night: the night fails rather than start a new state file, and says
    why."""
    code, log = _run_check(tmp_path, gh)
    assert code != 0
    (error,) = [line for line in log.splitlines() if line.startswith("::error::")]
    assert error.startswith(
        "::error::no state file was restored, and whether this branch saved one before could "
        f"not be told: {why}"
    ), error
    assert "re-run the job" in error
    if gh and gh.startswith("echo 'not"):
        assert "actions: read" not in error and "not a number" in log


# Debian 12's gh 2.23.0: no `gh cache` at all (cobra's error, exit 1, for --help too)
OLD_GH = 'echo \'unknown command "cache" for "gh"\' >&2; exit 1'


@pytest.mark.parametrize(
    ("gh", "gh_help"),
    [
        (OLD_GH, 'unknown command "cache" for "gh"'),
        ('echo "unknown flag: --ref" >&2; exit 1', "  -k, --key string   Filter by cache key"),
    ],
    ids=["no-gh-cache", "no-ref"],
)
def test_a_runner_whose_gh_is_too_old_is_told_the_version_it_needs(
    tmp_path: Path, gh: str, gh_help: str
) -> None:
    """Review R48: a self-hosted runner with a distribution's gh (Debian 12's 2.23.0 has no
    `gh cache`; `--ref` came in 2.45.0) stopped every night, the first one too, with an error
    that named only the `actions: read` permission. It now names gh's version and the one
    needed."""
    code, log = _run_check(tmp_path, gh, gh_help=gh_help)
    assert code != 0
    (error,) = [line for line in log.splitlines() if line.startswith("::error::")]
    assert (
        "could not be told: this runner's gh (gh version 2.83.0 (2025-11-04)) has no `gh cache "
        "list --ref`: install gh 2.45.0 or later (https://cli.github.com; a distribution's "
        "package may be older)"
    ) in error
    assert "actions: read" not in error
    assert log.index("unknown ") < log.index("::error::"), "gh's own message comes first"


def test_the_readmes_action_with_cache_layout_has_the_nightlys_check(tmp_path: Path) -> None:
    """Review R48: the README's layout wrapping the Action in the cache steps had the check
    only as a comment, so a copy of it started a new state file after a failed restore. It
    now holds the nightly's step, which stops a night whose restore missed a save."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    (block,) = [b for b in blocks if "- uses: your-org/auditor@" in b and "cache/restore" in b]
    layout = YAML(typ="safe").load(block)
    names = [uses(s) or s.get("name", "") for s in layout]
    assert names[:3] == [
        "actions/cache/restore",
        "Check that no saved state was missed",
        "your-org/auditor",
    ]
    check, nightly = layout[1], _check_step()
    assert {k: check[k] for k in ("if", "env", "run")} == {
        k: nightly[k] for k in ("if", "env", "run")
    }
    assert check["if"] == f"steps.{layout[0]['id']}.outputs.cache-matched-key == ''"
    code, log = _run_check(tmp_path, "echo auditor-state-902-1", script=check["run"])
    assert code != 0 and "::error::no state file was restored, but this branch saved" in log


def _step_with_id(path: Path, step_id: str) -> dict[str, Any]:
    (step,) = [s for s in _job(path)["steps"] if s.get("id") == step_id]
    return step


# --- tester T83: the workflows' scripts run with pipefail, as the README and the tests say ----

PIPEFAIL = ["--noprofile", "--norc", "-eo", "pipefail", "-c"]


@pytest.mark.parametrize("path", [*WORKFLOWS, REPO / "action.yml"], ids=lambda p: p.name)
def test_every_script_runs_with_pipefail(path: Path) -> None:
    """A `run:` step that names no shell (every step of both workflows did, and neither set
    `defaults.run.shell`) runs as `bash -e {0}`, without pipefail: a failing command piped into
    `tee` would end the step with tee's 0. The README ("Cancel and timeout") and the tests ran
    the scripts as `shell: bash` does, `bash --noprofile --norc -eo pipefail`; now GitHub does
    too (the Action names `shell: bash` on each step)."""
    if path.name == "action.yml":
        run_steps = [s for s in load(path)["runs"]["steps"] if "run" in s]
        assert all(s["shell"] == "bash" for s in run_steps)
        return
    run_steps = [s for s in steps(load(path)) if "run" in s]
    assert run_steps
    for step in run_steps:
        shell = _github_shell(path, step)
        assert shell[1:] == PIPEFAIL, (step.get("name"), shell)
        done = subprocess.run([*shell, "false | cat; echo went on"], capture_output=True, text=True)
        assert done.returncode == 1 and "went on" not in done.stdout


# --- tester T83: the Action's secrets reach the step that runs auditor alone ------------------

SECRETS = ("AUDITOR_TOKEN", "AUDITOR_FINGERPRINT_KEY", "AUDITOR_PROXY")


def _composite_env(caller: dict[str, str], step: dict[str, Any]) -> dict[str, str]:
    """The environment actions/runner gives a composite action's step: the caller step's
    `env:` first, then the step's own `env:` over it (CompositeActionHandler.RunStepsAsync
    merges the action's env block last), each `${{ inputs.x }}` at its default."""
    action = load(REPO / "action.yml")
    defaults = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    own = {}
    for key, value in step.get("env", {}).items():
        value = str(value)
        if value.startswith("${{ inputs."):
            value = defaults[value.removeprefix("${{ inputs.").removesuffix(" }}")]
        own[key] = "" if value.startswith("${{") else value
    return {**caller, **own}


def test_the_actions_secrets_reach_only_the_step_that_runs_auditor(tmp_path: Path) -> None:
    """The README puts AUDITOR_TOKEN (and the fingerprint key) in the `env:` of the step that
    uses the Action, and the runner gives that env to every step of a composite action:
    setup-python, `pip install` (which resolves auditor's dependencies and may run their build
    code), upload-sarif and the summary all had the token. Each of them now sets it empty."""
    action = load(REPO / "action.yml")
    all_steps = action["runs"]["steps"]
    run = next(s for s in all_steps if 'auditor "${args[@]}"' in s.get("run", ""))
    for step in all_steps:
        if step is run:
            assert not set(SECRETS) & set(step["env"]), "the caller's values reach auditor"
        else:
            assert {k: step.get("env", {}).get(k) for k in SECRETS} == dict.fromkeys(SECRETS, ""), (
                step.get("name")
            )
    bash = shutil.which("bash")
    assert bash is not None
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    for tool in ("python", "auditor"):  # each records the secrets it was given
        fake = bin_dir / tool
        fake.write_text(
            '#!/bin/bash\necho "$0 token=${AUDITOR_TOKEN-unset}'
            ' key=${AUDITOR_FINGERPRINT_KEY-unset} proxy=${AUDITOR_PROXY-unset}" >> "$SEEN"\n'
        )
        fake.chmod(0o755)
    caller = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SEEN": str(tmp_path / "seen"),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_ACTION_PATH": str(REPO),
        "AUDITOR_TOKEN": "tok-0123456789",
        "AUDITOR_FINGERPRINT_KEY": "key-0123456789abcdef",
        "AUDITOR_PROXY": "http://user:pw@proxy:3128",
    }
    install = next(s for s in all_steps if "pip install" in s.get("run", ""))
    for step in (install, run):
        env = _composite_env(caller, step)
        subprocess.run([bash, *PIPEFAIL, step["run"]], cwd=work, env=env, check=True)
    pip, auditor = (tmp_path / "seen").read_text().splitlines()
    assert pip == f"{bin_dir}/python token= key= proxy="
    assert auditor == (
        f"{bin_dir}/auditor token=tok-0123456789 key=key-0123456789abcdef "
        "proxy=http://user:pw@proxy:3128"
    )


# --- tester T83: a push that deletes the settings file closes an earlier push's alerts --------


def test_a_pull_request_that_deletes_the_settings_file_uploads_an_empty_analysis(
    tmp_path: Path,
) -> None:
    """A push that deleted the file ended the job at the take step: the review never wrote an
    exit code, the upload was skipped, and the alerts an earlier push filed stayed open on the
    pull request, though an unchanged file's empty analysis closes them. The review step now
    writes the same empty analysis (of the base branch's file, offline, no token) for a
    deleted file, keeps the analysis's exit code for the upload, and fails the job."""
    code, log, outputs, work = _review_step_run(tmp_path / "deleted", "", {"DELETED": "true"})
    assert code == 1, log
    assert outputs.read_text() == "exit-code=0\n"
    assert "auditor: this pull request deletes settings/enterprise-controls.yaml" in log
    # review R48: the failed step's last line was the analysis's "exit 0: … no findings
    # introduced by the change fail the run", then exit 1 without a reason
    last = log.splitlines()[-1]
    assert last.startswith(
        "::error::this pull request deletes settings/enterprise-controls.yaml: there is no "
        "proposed settings file, so nothing was reviewed and the check fails; the analysis "
        "above, of the base branch's file with its results emptied, only closes the alerts an "
        "earlier push filed (the Upload SARIF step uploads it)."
    ), log
    assert "::warning::" not in log and "auditor: error" not in log, log
    sarif = json.loads((work / "reports" / "review" / "findings.sarif").read_text())
    (run,) = sarif["runs"]
    assert run["results"] == []
    assert run["automationDetails"]["id"].rsplit("/", 1)[0] == (
        "auditor/pr-review/settings/enterprise-controls.yaml"
    )
    summary = (tmp_path / "deleted" / "summary").read_text()
    assert "deletes settings/enterprise-controls.yaml" in summary and "drift" not in summary
    assert not (work / ".auditor").exists(), "no state file opened or made"
    (upload,) = [s for s in _job(PR_REVIEW)["steps"] if uses(s) == UPLOAD]
    assert _upload_runs(upload, "review", "0")
    condition = upload["continue-on-error"].removeprefix("${{").removesuffix("}}")
    context = {"steps": {"take": {"outputs": {"deleted": "true"}}}}
    assert truthy(evaluate(condition, context)), "a fork's refused upload changes nothing"
