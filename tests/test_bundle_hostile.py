"""The evidence bundle against hostile input: a token or a secret typed as `export --out` or as
`verify`'s folder is shown as `[token]` / not shown in every line naming the folder; a bundle
whose run parameters hold a usage window out of range is named as altered (and its signature
as failing) with the window's error at its JSON path, never `unexpected OverflowError`."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from auditor.common.dates import usage_window
from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli, secret_forms

pytestmark = pytest.mark.e2e

GHP = "ghp_" + "Zq8xW3vB7nM2kL9pR4tY6uI1oA5sD0fG3hJ7"
NOT_SHOWN = "<not shown: looks like a secret>"


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One sync from the emulator into a state file, a signing key pair, a signed bundle."""
    work = tmp_path_factory.mktemp("hostile")
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=20, repos=3) as e:
        env = {**emulator_env(e, work / "state.db"), "AUDITOR_ORG": "acme"}
        assert run_cli(["sync"], env, work)[0] == 0
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (work / "signing.pem").write_bytes(private)
    (work / "public.pem").write_bytes(public)
    code, _, err = run_cli(["export", "--out", "signed", "--sign-key", "signing.pem"], env, work)
    assert code == 0, err
    yield {"work": work, "env": env}


@pytest.mark.parametrize(
    ("name", "secret", "shown"),
    [
        (f"ev9-{OWNER_TOKEN}", OWNER_TOKEN, "ev9-[token]"),
        (f"evg-{GHP}", GHP, NOT_SHOWN),
    ],
)
def test_a_token_typed_as_the_bundle_folder_is_never_printed(
    synced: dict[str, Any], name: str, secret: str, shown: str
) -> None:
    """`export --out "ev9-$AUDITOR_TOKEN"` printed the token twice (`Wrote evidence bundle to
    …; Check it with: auditor verify …`), and `verify` printed a ghp_ token in `Verified …`."""
    work, env = synced["work"], synced["env"]
    code, out, err = run_cli(["export", "--out", name], env, work)
    assert code == 0, err
    assert out.count(shown) == 2, out
    assert f"Check it with: auditor verify {work}/{shown}\n" in out
    code, v_out, v_err = run_cli(["verify", name], env, work)
    assert code == 0, v_err
    assert v_out.startswith(f"Verified {work}/{shown}: "), v_out
    # and where it does not verify: every problem and the exit line
    (work / name / "changes.csv").write_text("tampered\n")
    code, f_out, f_err = run_cli(["verify", name], env, work)
    assert code == 2 and f"the bundle {work}/{shown} does not verify" in f_err, f_err
    for text in (out, err, v_out, v_err, f_out, f_err):
        for form in secret_forms(secret):
            assert form not in text


def _tampered(bundle: Path, change: dict[str, Any], *, rehash: bool) -> None:
    """run-parameters.json changed; its manifest entry left alone, or rewritten to match
    (then the signature, over the manifest, no longer matches)."""
    path = bundle / "run-parameters.json"
    params = json.loads(path.read_text())
    params.update(change)
    path.write_text(json.dumps(params, indent=2) + "\n")
    if rehash:
        manifest = json.loads((bundle / "manifest.json").read_text())
        entry = manifest["files"]["run-parameters.json"]
        entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        entry["bytes"] = path.stat().st_size
        (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


@pytest.mark.parametrize("rehash", [False, True])
@pytest.mark.parametrize(
    ("change", "said"),
    [
        # was only `auditor: error: unexpected OverflowError: date value out of range`
        ({"usageDays": 1000000}, "expected a whole number of days from 1 to 3660, or null; got"),
        ({"usageDays": 1e23}, "expected a whole number of days from 1 to 3660, or null; got"),
        ({"usageDays": 3660, "at": "1975-01-01T00:00:00+00:00"}, "would start before 1970-01-01"),
        ({"usageDays": 30, "at": "0001-01-02T00:00:00+00:00"}, "would start before 1970-01-01"),
    ],
)
def test_a_usage_window_out_of_range_is_named_among_the_bundles_problems(
    synced: dict[str, Any], tmp_path: Path, change: dict[str, Any], said: str, rehash: bool
) -> None:
    work = synced["work"]
    bundle = Path(shutil.copytree(work / "signed", tmp_path / "bundle"))
    _tampered(bundle, change, rehash=rehash)
    code, out, err = run_cli(
        ["verify", str(bundle), "--key", str(work / "public.pem")], {}, tmp_path
    )
    assert code == 2, out + err
    lines = err.splitlines()
    if rehash:  # the manifest matches the file, and no longer its signature
        assert any(line.startswith("auditor: verify: signature: manifest.sig does not match")
                   for line in lines), err  # fmt: skip
    else:
        assert any(line.startswith("auditor: verify: altered: run-parameters.json (")
                   for line in lines), err  # fmt: skip
    # altered, it is not re-run (T97 #3), and its values are checked as --no-rerun does
    lead = "re-run: the bundle cannot be evaluated: " if rehash else ""
    where = f"auditor: verify: {lead}{bundle}/run-parameters.json"
    assert any(line.startswith(f"{where}: $.usageDays: ") and said in line for line in lines), err
    assert "unexpected" not in err and "Traceback" not in err
    assert lines[-1].startswith(f"auditor: exit 2: the bundle {bundle} does not verify: ")


@pytest.mark.parametrize(
    ("today", "days"), [(date(1, 1, 5), 30), (date(2026, 11, 1), 10**6), (date(2026, 1, 1), 10**10)]
)
def test_a_usage_window_out_of_range_is_a_value_error_never_an_overflow(
    today: date, days: int
) -> None:
    """What `run`, `export` and the re-run compute the window with: a ValueError (which each
    names as its input's problem), not `OverflowError: date value out of range`."""
    with pytest.raises(ValueError, match="usage window"):
        usage_window(today, days)
    assert usage_window(date(2026, 11, 1), 3660)[1] == date(2026, 10, 31)


@pytest.mark.parametrize("fault", ["no-room", "no-folder"])
def test_a_scratch_store_that_cannot_be_used_names_tmpdir_not_the_state_file(
    synced: dict[str, Any], monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """The bundle is evaluated in a scratch state file in TMPDIR: with no room there, or no
    file descriptor left, the error named `/tmp/auditor-bundle-…/state.db` as "the state file"
    (tester T18), sending the user to the `--state` they gave, which was fine."""
    from auditor.errors import StoreWriteError
    from auditor.workflows import export

    real_open, real_mkdtemp = export.Store.open, export.tempfile.mkdtemp

    def refuse(path: Any = None, *args: Any, **kwargs: Any) -> Any:
        if fault == "no-folder":
            if kwargs.get("prefix") != "auditor-bundle-":
                return real_mkdtemp(*args, **kwargs)
            raise OSError(24, "Too many open files")
        if not Path(path).parent.name.startswith("auditor-bundle-"):  # the user's own
            return real_open(path, *args, **kwargs)
        raise StoreWriteError(
            f"state file {path}: cannot write, nothing was changed: database or disk is full "
            "(SQLITE_FULL: the disk is full)"
        )

    if fault == "no-folder":
        monkeypatch.setattr(export.tempfile, "mkdtemp", refuse)
    else:
        monkeypatch.setattr(export.Store, "open", refuse)
    code, _, err = run_cli(["export", "--out", f"b-{fault}"], synced["env"], synced["work"])
    assert code == 2, err
    assert "the scratch state file the bundle is evaluated in (in TMPDIR)" in err, err
    assert err.rstrip().endswith("set TMPDIR to a folder with room"), err
    assert not (synced["work"] / f"b-{fault}").exists()  # no half bundle
