"""Hostile files in every input a user names: /dev/zero, a symlink to it, a FIFO, a directory,
an oversized file and a number too long to read. Each ends with one clear line naming the file,
exit 2, no traceback, no hang, and the state file byte-for-byte as it was."""

from __future__ import annotations

import hashlib
import io
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import pytest

from auditor.cli import Context, main
from auditor.common.files import UnreadableFile, input_lines, read_input
from auditor.store.database import Store
from tests.conftest import FIXED_NOW

REPO = Path(__file__).resolve().parents[1]
SAMPLE_POLICY = REPO / "tests" / "policies" / "valid" / "sample.yaml"
PROPOSED = REPO / "examples" / "proposed-settings.yaml"
BOUND_SECONDS = 20  # a FIFO that blocks would otherwise hang the suite


class _Hung(Exception):
    pass


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise _Hung


def run_bounded(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """Run the CLI in process; fail the test (rather than hang) after BOUND_SECONDS."""
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(BOUND_SECONDS)
    try:
        code = main(argv, ctx)
    except _Hung:
        pytest.fail(f"auditor {' '.join(argv)} did not finish in {BOUND_SECONDS} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def _dev_zero(path: Path) -> Path:
    return Path("/dev/zero")


def _symlink_to_dev_zero(path: Path) -> Path:
    path.symlink_to("/dev/zero")
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _directory(path: Path) -> Path:
    path.mkdir()
    return path


def _oversized(path: Path) -> Path:
    with path.open("wb") as fh:  # sparse: 20 MB on paper, nothing on disk
        fh.truncate(20_000_000)
    return path


HOSTILE: dict[str, tuple[Callable[[Path], Path], str]] = {
    "dev-zero": (_dev_zero, "a character device, not a regular file"),
    "symlink-to-dev-zero": (_symlink_to_dev_zero, "a character device, not a regular file"),
    "fifo": (_fifo, "a named pipe (FIFO), not a regular file"),
    "directory": (_directory, "a directory, not a regular file"),
    "oversized": (_oversized, "file is 20000000 bytes; the limit is"),
}

# Each input a user can name, as the argv that reads it (no network: every case fails first).
INPUTS: dict[str, Callable[[Path, Path], list[str]]] = {
    "policy-file": lambda bad, tmp: ["run", "--offline", "--policy", str(bad)],
    "file-in-policy-folder": lambda bad, tmp: ["policy", "lint", str(bad.parent)],
    "waivers": lambda bad, tmp: ["run", "--offline", "--waivers", str(bad)],
    "readiness-model": lambda bad, tmp: ["run", "--offline", "--readiness-model", str(bad)],
    "proposed-settings-file": lambda bad, tmp: ["review", "--offline", str(bad)],
    "live-settings-file": lambda bad, tmp: ["review", "--against", str(bad), str(PROPOSED)],
    "config": lambda bad, tmp: ["run", "--offline", "--config", str(bad)],
    "token-file": lambda bad, tmp: [
        "sync",
        "--base-url",
        "http://127.0.0.1:9",
        "--token-file",
        str(bad),
    ],
}


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    """A real (empty) auditor state file; tests compare its bytes before and after."""
    path = tmp_path / "state.db"
    Store.open(path, create=True).close()
    yield path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _hostile_path(tmp_path: Path, kind: str) -> Path:
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "good.yaml").write_bytes(SAMPLE_POLICY.read_bytes())
    make, _ = HOSTILE[kind]
    return make(folder / "bad.yaml")


# Three pairs make no case: /dev/zero itself cannot be put inside a folder (the symlink to it
# covers that place), and --policy takes a folder, so a folder is not hostile there, nor inside
# a policy folder, which is walked into whatever its name (`bad.yaml/` too: test_policy_loader).
_NO_CASE = {
    ("file-in-policy-folder", "dev-zero"),
    ("policy-file", "directory"),
    ("file-in-policy-folder", "directory"),
}


@pytest.mark.parametrize(
    ("where", "kind"),
    [(where, kind) for where in INPUTS for kind in HOSTILE if (where, kind) not in _NO_CASE],
)
def test_a_hostile_file_is_one_clear_error_and_exit_2(
    tmp_path: Path, state: Path, where: str, kind: str
) -> None:
    bad = _hostile_path(tmp_path, kind)
    before = digest(state)
    env = {"AUDITOR_STATE": str(state)}
    code, stdout, stderr = run_bounded(INPUTS[where](bad, tmp_path), tmp_path, env)
    _, reason = HOSTILE[kind]
    assert code == 2, stderr
    assert "Traceback" not in stderr
    shown = stdout + stderr  # `policy lint` lists problems on stdout
    assert str(bad) in shown and reason in shown, shown
    assert digest(state) == before


def test_policy_lint_lists_a_hostile_file_beside_the_good_ones(tmp_path: Path) -> None:
    bad = _hostile_path(tmp_path, "fifo")
    code, stdout, stderr = run_bounded(["policy", "lint", str(bad.parent)], tmp_path, {})
    assert code == 2
    assert stdout.splitlines() == [f"{bad}:1:1: error: a named pipe (FIFO), not a regular file"]
    assert stderr.splitlines()[-1] == "auditor: exit 2: 1 error(s) in policy files (listed above)"


def test_a_5000_digit_number_says_what_it_is(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(SAMPLE_POLICY.read_text() + "x_big: " + "7" * 5000 + "\n")
    code, stdout, _ = run_bounded(["policy", "lint", str(policy)], tmp_path, {})
    assert code == 2
    line = next(x for x in stdout.splitlines() if "digits" in x)
    assert line.startswith(f"{policy}:")
    assert "a number of 5000 digits is too long (at most 4300 digits)" in line
    assert "date/time" not in stdout


def test_a_token_file_error_never_shows_its_content(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_bytes(b"secret-token-value\xff\n")
    code, stdout, stderr = run_bounded(
        ["sync", "--base-url", "http://127.0.0.1:9", "--token-file", str(token)], tmp_path, {}
    )
    assert code == 2
    assert "token file is not UTF-8" in stderr
    assert "secret-token-value" not in stdout + stderr


@pytest.mark.parametrize(
    ("where", "text"),
    [
        pytest.param("policy-file", "a: " + "[" * 400_000 + "]" * 400_000 + "\n", id="policy"),
        pytest.param("proposed-settings-file", "[" * 100_000 + "]" * 100_000, id="proposed"),
    ],
)
def test_deep_nesting_under_the_size_limit_is_refused_at_once(
    tmp_path: Path, state: Path, where: str, text: str
) -> None:
    """An 800 KB policy of `[[[…` (under the 1 MB limit) kept the parser busy for minutes."""
    bad = tmp_path / "deep.yaml"
    bad.write_text(text)
    env = {"AUDITOR_STATE": str(state)}
    code, stdout, stderr = run_bounded(INPUTS[where](bad, tmp_path), tmp_path, env)
    assert code == 2
    problems = [line for line in (stdout + stderr).splitlines() if "error: nesting" in line]
    assert len(problems) == 1 and problems[0].startswith(f"{bad}:1:")
    assert problems[0].endswith("error: nesting deeper than 64 levels")


@pytest.mark.parametrize(
    ("where", "text"),
    [
        pytest.param("policy-file", "a: [" + "0," * 490_000 + "0]\n", id="policy"),
        pytest.param("proposed-settings-file", "[" + "0," * 1_000_000 + "0]", id="proposed"),
    ],
)
def test_a_file_of_too_many_values_is_refused_before_they_are_built(
    tmp_path: Path, state: Path, where: str, text: str
) -> None:
    """A 16 MB proposed settings file of 7.9 million zeros (under its size limit) took 261 s
    and 5.9 GB; a million of them, minutes."""
    bad = tmp_path / "wide.yaml"
    bad.write_text(text)
    env = {"AUDITOR_STATE": str(state)}
    code, stdout, stderr = run_bounded(INPUTS[where](bad, tmp_path), tmp_path, env)
    assert code == 2
    problems = [line for line in (stdout + stderr).splitlines() if "values" in line]
    assert problems == [
        f"{bad}:1:{199_999 if where == 'policy-file' else 200_000}: error: more than 100000 "
        "values (keys, scalars, lists and mappings), the limit for one file"
    ]


def _read_whole(path: Path, max_bytes: int) -> bytes:
    return read_input(path, max_bytes=max_bytes)


def _read_lines(path: Path, max_bytes: int) -> bytes:
    with input_lines(path, max_bytes=max_bytes) as lines:
        return b"".join(lines)


#: The two readers of `auditor.common.files`: the whole file, or a line at a time (`export`
#: and `verify`, for a bundle's GBs of JSON lines): the same checks, the same words.
READERS = {"read_input": _read_whole, "input_lines": _read_lines}


def _bounded(read: Callable[[], bytes]) -> bytes:
    def hung(signum: int, frame: FrameType | None) -> None:
        raise _Hung

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(BOUND_SECONDS)
    try:
        return read()
    except _Hung:
        pytest.fail(f"the read did not finish in {BOUND_SECONDS} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_both_file_readers_refuse_a_hostile_file_in_the_same_words(
    tmp_path: Path, reader: str, kind: str
) -> None:
    """A FIFO refused at once (not waited on), /dev/zero and a symlink to it by the target's
    type, a directory, a file over the cap by its size: before a byte is read, and with no
    descriptor left open."""
    make, reason = HOSTILE[kind]
    bad = make(tmp_path / "bad.jsonl")
    opened = len(os.listdir("/proc/self/fd"))
    with pytest.raises(UnreadableFile) as caught:
        _bounded(lambda: READERS[reader](bad, 1_000_000))
    assert caught.value.reason.startswith(reason), caught.value.reason
    if kind == "oversized":
        assert caught.value.reason == "file is 20000000 bytes; the limit is 1000000"
    assert len(os.listdir("/proc/self/fd")) == opened


@pytest.mark.parametrize("reader", sorted(READERS))
def test_both_file_readers_hold_the_cap_while_reading(reader: str) -> None:
    """/proc files say they are 0 bytes: the cap is held on what is read, not on the size."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("needs /proc")
    with pytest.raises(UnreadableFile) as caught:
        READERS[reader](status, 100)
    assert caught.value.reason == "file is larger than the limit of 100 bytes"


@pytest.mark.parametrize("reader", sorted(READERS))
def test_both_file_readers_give_the_file_s_bytes(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "lines.jsonl"
    raw = b'{"a": 1}\n\n{"b": "\xc3\xa9"}\r\nno newline at the end'
    path.write_bytes(raw)
    assert READERS[reader](path, len(raw)) == raw
    with pytest.raises(UnreadableFile) as caught:
        READERS[reader](path, len(raw) - 1)
    assert caught.value.reason == f"file is {len(raw)} bytes; the limit is {len(raw) - 1}"
    with input_lines(path, max_bytes=len(raw)) as lines:
        assert list(lines) == raw.splitlines(keepends=True)
    with pytest.raises(UnreadableFile) as caught:
        READERS[reader](tmp_path / "missing", 10)
    assert caught.value.reason == "No such file or directory"
