"""Secrets pasted anywhere never stay plain in the state file, whichever revision reveals them.

Generated histories are synced (several syncs, revisions newest first over several pages, some
repeated within a page) through the real `sync`. A secret is revealed by its place in one
revision (an `apiKey`, an `env` or `extraHeaders` value, a hook command's `-p`, a URL's
`?token=`) and pasted as free text (a note, an object key, the author's id, e-mail or name, a
readiness report) into newer and older revisions, the revealing one, or revisions of an
earlier or a later sync; a sync may fail once midway and be run again. After each sync (and
each failed try) the raw bytes of the state file and its journal hold no learned secret in
any encoded form, and the scrub index is exactly the stored rows split.
"""

from __future__ import annotations

import base64
import contextlib
import json
import random
import re
import string
import tempfile
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_sync import NOW, TOKEN, FakeService

from auditor.errors import AuditorError
from auditor.fetch import PlatformClient
from auditor.store import scrubindex
from auditor.store.database import Store
from auditor.workflows.sync import sync

# Secrets no detector sees (low entropy, no known format): only the memory of a revealed one
# catches them. Some hold the scrub index's separators, a quote, `+` and `/`, so that their
# JSON-escaped and URL-encoded forms differ from the raw one.
_PLAIN = ("orangebattery1x", "tidalmaple7w")
_ODD = ('zz},"hidden77', 'qu"ote+sec/ret4', "horse,staple9zz")
_SECRETS = _PLAIN + _ODD

# Where a secret is revealed: a top-level key each, so one revision can reveal several.
_REVEAL: dict[str, Callable[[str], Any]] = {
    "customModels": lambda s: [{"id": "c", "apiKey": s}],
    "env": lambda s: {"MY_VAR": s},
    "extraHeaders": lambda s: {"X-Org": s},
    "hooks": lambda s: {
        "PreToolUse": [{"hooks": [{"type": "command", "command": f"docker login -u bob -p {s}"}]}]
    },
    "proxyUrl": lambda s: f"https://proxy.example/v1?token={s}",
}
_ANYWHERE = ("customModels", "env", "extraHeaders")  # places that reveal any string whole

# How a secret is pasted into free text (with the index's separators around it, too).
_WRAPS = ("*", "x*", "see * here", 'a},"*', '*,"b', "*@corp.example")
_PLACES = ("note", "key", "id", "email", "name", "report")


@dataclass
class _Revision:
    reveal: dict[str, str] = field(default_factory=dict)  # top-level key → secret
    pastes: list[tuple[str, str]] = field(default_factory=list)  # place, pasted text
    repeated: bool = False  # sent twice in a row on its history page


@dataclass
class _Sync:
    revisions: list[_Revision]  # oldest first (the service sends them newest first)
    page_size: int
    reopen: bool  # a new `Store.open` (a new night), else the same store as the previous sync
    fail_at: int | None = None  # a first try fails at this request (then the sync is run again)


_secret = st.sampled_from(_PLAIN + _ODD)
_paste = st.tuples(st.sampled_from(_PLACES), st.sampled_from(_WRAPS), _secret).map(
    lambda t: (t[0], t[1].replace("*", t[2]))
)


@st.composite
def _revision(draw: st.DrawFn) -> _Revision:
    revision = _Revision(pastes=draw(st.lists(_paste, max_size=2)), repeated=draw(st.booleans()))
    if draw(st.integers(0, 2)) == 0:
        secret = draw(_secret)
        key = draw(st.sampled_from(sorted(_REVEAL) if secret in _PLAIN else _ANYWHERE))
        revision.reveal[key] = secret
        if draw(st.booleans()):  # the revealing revision holds the pasted text too
            revision.pastes.append((draw(st.sampled_from(_PLACES)), "x" + secret))
    return revision


_syncs = st.lists(
    st.builds(
        _Sync,
        revisions=st.lists(_revision(), max_size=7),
        page_size=st.integers(2, 4),
        reopen=st.booleans(),
        fail_at=st.none() | st.integers(0, 3),
    ),
    min_size=1,
    max_size=3,
)


class _Service(FakeService):
    """FakeService with the revisions and reports a plan gives, a revision marked `repeated`
    sent twice in a row on its page."""

    def __init__(self) -> None:
        super().__init__(0)
        self.repeated: set[int] = set()

    def add(self, plan: _Revision) -> None:
        number = len(self.revisions) + 1
        settings_: dict[str, Any] = {"n": number, "note": "steady"}
        for key, secret in plan.reveal.items():
            settings_[key] = _REVEAL[key](secret)
        user = {"id": "u", "email": "a@corp.example", "name": "Ann"}
        for place, text in plan.pastes:
            if place == "note":
                settings_["note"] = text
            elif place == "key":
                settings_.setdefault("aliases", {})[text] = number
            elif place in user:
                user[place] = text
            else:  # a readiness report, newest first as the service lists them
                self.reports.insert(0, _report(number, len(self.reports), text))
        self.revisions[number] = {
            "revision": number,
            "settings": settings_,
            "user": user,
            "updatedAt": f"2026-10-{1 + number % 28:02d}T08:00:00Z",
        }
        if plan.repeated:
            self.repeated.add(number)

    def _history(self, limit: int, start: int) -> httpx.Response:
        body = json.loads(super()._history(limit, start).content)
        changes = []
        for item in body["changes"]:
            changes.append(item)
            if item["revision"] in self.repeated:
                changes.append(item)
        body["changes"] = changes
        return httpx.Response(200, json=body)


def _report(number: int, n: int, text: str) -> dict[str, Any]:
    return {
        "reportId": f"r{number:03d}-{n}",
        "createdAt": 1_790_000_000_000 + n,
        "repoUrl": f"https://git.example/{text}",
        "report": {"lint": {"numerator": 1, "denominator": 2, "rationale": f"found {text}"}},
    }


def _failure() -> httpx.Response:
    return httpx.Response(400, json={"title": "Bad Request", "detail": "try again"})


def _forms(secret: str) -> set[bytes]:
    """The secret raw, JSON-escaped, URL-encoded (either case of hex digits) and in base64."""
    raw = secret.encode()
    quoted = urllib.parse.quote(secret, safe="")
    return {
        form.encode()
        for form in (
            secret,
            json.dumps(secret)[1:-1],
            quoted,
            urllib.parse.quote_plus(secret),
            re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), quoted),
            base64.b64encode(raw).decode().rstrip("="),
            base64.urlsafe_b64encode(raw).decode().rstrip("="),
        )
    }


def _bounded(secret: str, text: str) -> bool:
    """Whether every time `secret` is in `text` it starts and ends at a word boundary: only
    there is a secret an earlier process learned found by its fingerprint (the state file
    keeps no value: `auditor.redact.memory`). `x<secret>` pasted after the store that learned
    the secret closed stays plain, unless the secret is revealed again in the same process."""
    for m in re.finditer(re.escape(secret), text):
        a, b = m.start(), m.end()
        if (a and text[a - 1].isalnum() and secret[0].isalnum()) or (
            b < len(text) and text[b].isalnum() and secret[-1].isalnum()
        ):
            return False
    return True


def _state_bytes(path: Path) -> bytes:
    """The state file and its -journal / -wal files, as they are on disk."""
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def _sync(store: Store, service: _Service, page_size: int) -> None:
    client = PlatformClient(
        base_url="https://svc.test",
        app_url="https://app.test",
        token=TOKEN,
        page_size=page_size,
        transport=httpx.MockTransport(service),
        sleep=lambda _s: None,
    )
    with client:
        sync(store, client, clock=lambda: NOW)


def _check(path: Path, store: Store, learned: set[str]) -> None:
    assert set(scrubindex.stored(store._db)) == scrubindex.row_pieces(store._db)
    data = _state_bytes(path)
    plain = sorted(s for s in learned if any(form in data for form in _forms(s)))
    assert not plain, f"learned secrets in the state file: {plain}"


def _run(plans: list[_Sync]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.db"
        # learned: the secrets the state file's memory holds; values: those the open store
        # knows as values; beyond: those pasted where only a value finds them (`_bounded`)
        # while the store knew them by fingerprint only: they stay plain (README: `abcSECRET`).
        service, learned, values, beyond = _Service(), set[str](), set[str](), set[str]()
        store = Store.open(path)
        try:
            for plan in plans:
                if plan.reopen:
                    store.close()
                    store = Store.open(path)
                    values.clear()  # the new store knows the secrets by fingerprint only
                for revision in plan.revisions:
                    service.add(revision)
                values |= {s for r in plan.revisions for s in r.reveal.values()}
                pasted = {(s, t) for r in plan.revisions for _, t in r.pastes for s in _SECRETS}
                beyond |= {s for s, t in pasted if s in learned - values and not _bounded(s, t)}
                if plan.fail_at is not None:  # nothing saved: the file is as it was
                    service.fail_at = {len(service.requests) + plan.fail_at: _failure()}
                    with contextlib.suppress(AuditorError):
                        _sync(store, service, plan.page_size)
                    service.fail_at = {}
                    _check(path, store, learned - beyond)
                learned |= values
                _sync(store, service, plan.page_size)
                _check(path, store, learned - beyond)
        finally:
            store.close()
        with Store.open(path) as store:
            _check(path, store, learned - beyond)


_PASTED_TWICE = [  # fixed by 12648ca: the revealing revision holds the text the newer one does
    _Sync(
        revisions=[
            _Revision(reveal={"customModels": _PLAIN[0]}, pastes=[("email", "x" + _PLAIN[0])]),
            _Revision(pastes=[("email", "x" + _PLAIN[0])]),
        ],
        page_size=2,
        reopen=False,
    )
]


_GLUED_ON_THE_NEXT_NIGHT = [  # found by this test (review R11): the next night's sync re-read
    _Sync(  # revision 3, whose stored copy hid `x<secret>`, and showed it as a rewrite
        revisions=[
            _Revision(reveal={"customModels": _PLAIN[0]}),
            _Revision(),
            _Revision(pastes=[("key", "x" + _PLAIN[0])]),
        ],
        page_size=2,
        reopen=False,
    ),
    _Sync(revisions=[], page_size=2, reopen=True),
]


_KEPT_IN_A_SECOND_SYNC = [  # found by this test (fixer F1): a store's second sync kept its
    _Sync(revisions=[], page_size=2, reopen=False),  # page under the first sync's id, and the
    _Sync(  # secret its older revision taught stayed in clear in the newer one's kept row
        revisions=[
            _Revision(reveal={"customModels": _PLAIN[0]}),
            _Revision(pastes=[("note", _PLAIN[0])]),
        ],
        page_size=2,
        reopen=False,
    ),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_syncs)
@example(_PASTED_TWICE)
@example(_GLUED_ON_THE_NEXT_NIGHT)
@example(_KEPT_IN_A_SECOND_SYNC)
def test_no_learned_secret_is_stored_plain_and_the_index_splits_the_rows(
    plans: list[_Sync],
) -> None:
    _run(plans)


def test_a_glued_secret_re_read_the_next_night_is_no_integrity_issue() -> None:
    """A secret pasted glued to other text (`x<secret>`) in a revision newer than the one that
    revealed it is hidden in its stored copy once the older one is read; the next night, a new
    process knows the secret by fingerprint only, re-reads that revision and used to find it
    "changed after it was stored" (a critical integrity finding for nothing the service did),
    naming the changed key, the secret in it, in the state file. It is the same revision."""
    service = _Service()
    for revision in _GLUED_ON_THE_NEXT_NIGHT[0].revisions:
        service.add(revision)
    _two_nights_leave_no_issue(service, _PLAIN[0])


def _two_nights_leave_no_issue(service: _Service, glued: str) -> None:
    """Two nights' syncs of `service`, each in a new process's store: no integrity issue, and
    `glued` in no form in the state file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.db"
        for _night in range(2):
            with Store.open(path) as store:
                _sync(store, service, 2)
        with Store.open(path) as store:
            assert store.integrity_issues() == []
        assert not any(form in _state_bytes(path) for form in _forms(glued))


@pytest.mark.parametrize(("pad", "remembered"), [(700, 32), (2000, 32), (11_000, 0), (60_000, 0)])
def test_a_glued_secret_in_a_long_note_with_many_remembered_is_no_integrity_issue(
    pad: int, remembered: int
) -> None:
    """The same, in a long note (11 KB, 60 KB) or beside many remembered secrets of other
    lengths (32): the search for a glued secret used to give up after 20,000 stretches over
    every remembered length, and the false integrity issue was back (tester r11 #9). It now
    tries only the lengths of the markers the stored copy holds."""
    rng = random.Random(3)
    many = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(n - 2)) + "7q"
        for n in range(8, 8 + remembered)
    ]
    glued = many[-1] if many else _PLAIN[1]
    service = _Service()
    service.add(_Revision(reveal={"customModels": _PLAIN[0], "env": _PLAIN[1]}))
    service.revisions[1]["settings"]["env"] = {f"V{i}": s for i, s in enumerate(many)}
    service.revisions[1]["settings"]["env"]["K"] = _PLAIN[1]
    service.add(_Revision(pastes=[("note", "word " * (pad // 5) + "x" + glued)]))
    _two_nights_leave_no_issue(service, glued)
