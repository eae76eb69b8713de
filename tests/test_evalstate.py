"""The evaluation state in the state file (issue 13): filed by rule key under the revision and
the stored history it was computed over, so a nightly can tell whether it still applies."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import printed_by_a_fresh_interpreter

from auditor.evaluate.change import Tally
from auditor.evaluate.incremental import StateDumps, dump_tally, load_tally
from auditor.evaluate.model import RuleResult
from auditor.models import Attribution, Evidence, Subject, make_attribution, make_subject
from auditor.policy.model import Rule
from auditor.store.database import Store
from auditor.store.evalstate import history_digests


def test_history_digests_change_with_any_earlier_revision() -> None:
    pairs = [(1, "a"), (2, "b"), (3, "c")]
    digests = history_digests(pairs, {2, 3, 9})
    assert set(digests) == {2, 3}  # 9 is not stored: no digest, so no state fits it
    assert history_digests(pairs[:2], {2}) == {2: digests[2]}  # a prefix keeps its digest
    assert history_digests([(1, "x"), *pairs[1:]], {3})[3] != digests[3]
    assert history_digests([(1, "a"), (3, "c")], {3})[3] != digests[3]  # a gap differs too


def test_saving_keeps_other_policies_state_and_drops_stale_rows(state_path: Path) -> None:
    with Store.open(state_path) as store:
        assert store.eval_state() == []
        store.save_eval_state(10, "h10", {"rule-a": b"A10", "rule-b": b"B10"})
        store.save_eval_state(10, "h10", {"rule-c": b"C10"})  # another policy, same view
        rows = {r.rule_key: (r.revision, r.history, r.state) for r in store.eval_state()}
        assert rows == {
            "rule-a": (10, "h10", b"A10"),
            "rule-b": (10, "h10", b"B10"),
            "rule-c": (10, "h10", b"C10"),
        }
        store.save_eval_state(12, "h12", {"rule-a": b"A12"})  # the next nightly
        rows = {r.rule_key: (r.revision, r.state) for r in store.eval_state()}
        assert rows == {"rule-a": (12, b"A12")}  # rows of an older view are gone
    with Store.open(state_path) as store:  # and it lasts
        assert [(r.rule_key, r.state) for r in store.eval_state()] == [("rule-a", b"A12")]


def test_a_state_is_stored_compressed_and_an_older_uncompressed_row_still_reads(
    state_path: Path,
) -> None:
    """At 100,000 revisions a change rule's state is megabytes of JSON, copied by the database
    as it is stored and handed back with every row at once: it is kept compressed (a tenth of
    the size here) and unpacked a rule at a time. A row a version before this one stored as
    plain JSON is read as it is, so upgrading does not throw the nightly's state away."""
    state = orjson.dumps({"steps": 100000, "open": [{"message": "step failed"}] * 5000})
    with Store.open(state_path) as store:
        store.save_eval_state(10, "h10", {"rule-a": state})
        (row,) = store.eval_state()
        assert len(row.data) * 10 < len(state) and row.state == state
        store._db.execute("UPDATE eval_state SET data = ? WHERE rule_key = ?", (state, "rule-a"))
        (row,) = store.eval_state()
        assert row.data == state and row.state == state


def test_states_dumped_as_stored_skip_those_that_cannot_be_stored(state_path: Path) -> None:
    """A run hands the store its rules' states to dump one at a time; a state that cannot be
    stored (its dump gives None) is left out, and the rule is simply evaluated afresh."""
    dumped: list[str] = []

    def dump(key: str, data: bytes | None) -> Callable[[], bytes | None]:
        def made() -> bytes | None:
            dumped.append(key)
            return data

        return made

    states = StateDumps()
    states.add("rule-a", dump("rule-a", b"A"))
    states.add("rule-b", dump("rule-b", None))
    states.add("rule-c", dump("rule-c", b"C"))
    assert len(states) == 3 and dumped == []  # nothing dumped before it is stored
    with Store.open(state_path) as store:
        store.save_eval_state(5, "h5", states)
        rows = {r.rule_key: r.state for r in store.eval_state()}
    assert rows == {"rule-a": b"A", "rule-c": b"C"}
    assert dumped == ["rule-a", "rule-b", "rule-c"]  # each dumped once


def test_a_save_cut_short_while_dumping_leaves_the_state_as_it_was(state_path: Path) -> None:
    """Each rule's state is dumped inside the store's write (issue 13): a dump that fails, or
    Ctrl-C during it, must leave the previous run's state whole, never half of the new one,
    which the next run would trust (it is filed under the new revision's history)."""

    def broken() -> bytes | None:
        raise KeyboardInterrupt

    with Store.open(state_path) as store:
        store.save_eval_state(10, "h10", {"rule-a": b"A10", "rule-b": b"B10"})
        states = StateDumps()
        states.add("rule-a", lambda: b"A12")
        states.add("rule-b", broken)
        with pytest.raises(KeyboardInterrupt):
            store.save_eval_state(12, "h12", states)
        rows = {r.rule_key: (r.revision, r.history, r.state) for r in store.eval_state()}
    assert rows == {"rule-a": (10, "h10", b"A10"), "rule-b": (10, "h10", b"B10")}


def test_states_none_of_which_can_be_stored_leave_the_stored_state_alone(
    state_path: Path,
) -> None:
    """States are dumped only as they are stored: when every dump gives None there is nothing
    new, and the rows already stored (which the next nightly can resume from, as it could
    before the dumps were deferred) are kept."""
    states = StateDumps()
    states.add("rule-a", lambda: None)
    with Store.open(state_path) as store:
        store.save_eval_state(10, "h10", {"rule-a": b"A10", "rule-b": b"B10"})
        store.save_eval_state(12, "h12", states)
        rows = {r.rule_key: (r.revision, r.state) for r in store.eval_state()}
    assert rows == {"rule-a": (10, b"A10"), "rule-b": (10, b"B10")}


def _step_results(rule: Rule, steps: int) -> list[RuleResult]:
    """Failing change-step results as a long history gives them: per step a subject and an
    author, a few evidence lists over and over, values of every JSON type."""
    when = datetime(2026, 9, 3, 10, 15, tzinfo=UTC)
    evidence = [
        (Evidence("$.sandbox.enabled", False, True, "not to change from", note="before: true"),),
        (Evidence("$.a", [1, "x", None], {"k": 1.5}, "in"), Evidence("$.b", 1, True, "==")),
        (),
    ]
    out = []
    for n in range(1, steps + 1):
        subject = Subject("change", f"change:{n}..{n + 1}", f"revision {n} -> {n + 1}", n + 1)
        who = Attribution(n + 1, when, f"user{n % 3}@acme.example", "Tomás Novak")
        message = f"sandbox.enabled went true -> false by user{n % 3}@acme.example"
        out.append(RuleResult(rule, subject, "fail", message, evidence[n % 3], since=who))
    return out


def test_a_change_rules_tally_is_stored_as_one_json_document_and_read_back_equal() -> None:
    """The tally is dumped one result at a time (issue 13: no second copy of 10,000s of
    results), but stored exactly as one JSON document of it, so a state file written before
    reads back; what is read back equals what was dumped, down to 1 vs 1.0 vs true."""
    rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
    results = _step_results(rule, 7)
    tally = Tally(7, Counter({"pass": 0, "fail": 7}), 1, 8, results, 7)
    data = dump_tally(tally, rule)
    whole = {"steps": 7, "counts": {"fail": 7, "pass": 0}, "first": 1, "last": 8}
    assert data is not None and data.count(b"\n") == 7  # a result a line
    assert data.replace(b"\n", b"") == orjson.dumps(
        {**whole, "open": [_stored(r) for r in results]}
    )
    back = load_tally(data, rule)
    assert (back.steps, back.counts, back.first, back.last) == (7, tally.counts, 1, 8)
    assert back.open == results
    assert [type(e.expected) for r in back.open for e in r.evidence] == [
        type(e.expected) for r in results for e in r.evidence
    ]
    empty = Tally(3, Counter({"pass": 3}), 1, 4, [], 0)
    assert dump_tally(empty, rule) == orjson.dumps(
        {"steps": 3, "counts": {"pass": 3}, "first": 1, "last": 4, "open": []}
    )


def test_a_resumed_tally_writes_the_earlier_results_back_as_they_were_stored() -> None:
    """A nightly's change rule has 1,000s of open results read back from the state and a few
    new ones: the stored text of the earlier ones is written back as it is (given again by
    `again`), and the whole reads back as the tally the run holds, byte for byte what dumping
    every result again gives."""
    rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
    results = _step_results(rule, 9)
    earlier = dump_tally(Tally(6, Counter({"fail": 6}), 1, 7, results[:6], 6), rule)
    assert earlier is not None
    asked: list[int] = []

    def again() -> bytes:
        asked.append(1)
        return earlier

    back = load_tally(earlier, rule, again=again)
    assert back.stored is not None and asked == []  # not held: had again when stored
    for n, result in enumerate(results[6:], start=7):
        back.add("fail", n, n + 1, result)
    data = dump_tally(back, rule)
    assert asked == [1]
    fresh = Tally(9, Counter({"fail": 9}), 1, 10, results, 9)
    assert data == dump_tally(fresh, rule)
    assert load_tally(data, rule).open == results
    # no new result: the stored text alone; a tally of none: an empty list
    nothing_new = load_tally(earlier, rule, again=lambda: earlier)
    assert dump_tally(nothing_new, rule) == earlier
    empty = dump_tally(Tally(3, Counter({"pass": 3}), 1, 4, [], 0), rule)
    assert empty is not None
    resumed = load_tally(empty, rule, again=lambda: empty)
    resumed.add("fail", 4, 5, results[0])
    assert dump_tally(resumed, rule) == dump_tally(
        Tally(4, Counter({"pass": 3, "fail": 1}), 1, 5, results[:1], 1), rule
    )
    # a state not written as `dump_tally` writes it (keys in another order) is dumped anew
    other = orjson.dumps({**orjson.loads(earlier), "steps": 6})
    reordered = orjson.dumps({"open": orjson.loads(earlier)["open"], **orjson.loads(other)})
    assert load_tally(reordered, rule, again=lambda: reordered).stored is None


def test_a_tally_whose_values_do_not_read_back_exactly_is_not_stored() -> None:
    rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
    results = _step_results(rule, 4)
    odd = replace(results[2], evidence=(Evidence("$.a", (1, 2)),))  # a tuple reads back a list
    found = [*results[:2], odd, results[3]]
    assert dump_tally(Tally(4, Counter({"fail": 4}), 1, 5, found, new_open=4), rule) is None
    # a time without its offset is refused when read back (a damaged row): not stored either
    naive = replace(results[1], since=Attribution(2, datetime(2026, 9, 3), "a@b.c", "A"))
    assert dump_tally(Tally(1, Counter({"fail": 1}), 1, 2, [naive], new_open=1), rule) is None
    # Only what this run found is checked: results read back from an earlier run's state
    # (`new_open` counts the others) read back exactly again, so a nightly does not redo it.
    assert dump_tally(Tally(4, Counter({"fail": 4}), 1, 5, found, new_open=1), rule) is not None
    assert dump_tally(Tally(4, Counter({"fail": 4}), 1, 5, found, new_open=2), rule) is None


def _stored(result: RuleResult) -> list[object]:
    s, who = result.subject, result.since
    assert who is not None
    return [
        [s.kind, s.key, s.label, s.revision, s.repo_url],
        result.status,
        result.message,
        [
            [e.path, e.actual, e.expected, e.operator, e.present, e.note, e.shows_expected]
            for e in result.evidence
        ],
        [who.revision, who.updated_at.isoformat(), who.author_email, who.author_name],
    ]


def test_subjects_and_attributions_read_back_are_the_records_the_constructors_make() -> None:
    """The state's subjects and attributions are made with their slots filled directly
    (`make_subject`, `make_attribution`: 1,000s a nightly): equal, hashed and shown as the
    dataclasses' own constructors make them."""
    when = datetime(2026, 9, 3, 10, 15, tzinfo=UTC)
    for made, plain in (
        (
            make_subject("change", "change:1..2", "revision 1 -> 2", 2),
            Subject("change", "change:1..2", "revision 1 -> 2", 2),
        ),
        (make_subject("readiness", "u", "u", None, "u"), Subject("readiness", "u", "u", None, "u")),
        (make_attribution(2, when, "a@b.c"), Attribution(2, when, "a@b.c")),
        (make_attribution(2, when, "", "n", "p"), Attribution(2, when, "", "n", "p")),
    ):
        assert made == plain and hash(made) == hash(plain) and repr(made) == repr(plain)
        assert type(made) is type(plain)


def test_a_tally_read_a_result_at_a_time_equals_one_read_whole() -> None:
    """A tally as `dump_tally` writes it is read a result at a time (at 100,000 revisions one
    rule's results parsed at once were 26 MB); any other layout of the same JSON is read whole.
    Both give the same results, with text that JSON escapes, non-ASCII and every value type."""
    rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
    results = _step_results(rule, 9)
    odd = Evidence("$['a\"]', \\\\ ,]']", 'tab\t \u2028 \U0001f600 "]"', [None, -0.5, 1e300])
    results[4] = replace(results[4], message='"],[ x', evidence=(odd,))
    data = dump_tally(Tally(9, Counter({"fail": 9}), 1, 10, results, 9), rule)
    assert data is not None
    spaced = json.dumps(orjson.loads(data), indent=1).encode()  # read whole
    for text in (data, spaced):
        back = load_tally(text, rule, again=lambda text=text: text)
        assert back.open == results and (back.steps, back.first, back.last) == (9, 1, 10)
        assert (back.stored is not None) is (text is data)
    assert load_tally(data, rule, again=lambda: data).stored is not None


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d[:-2] + b",]}",  # a trailing comma
        lambda d: d[:-2] + b",NaN]}",  # orjson refuses NaN
        lambda d: d[:-2] + b",Infinity]}",
        lambda d: d[:-3] + b"]}",  # the last result cut
        lambda d: d.replace(b"],[", b"] [", 1),
        lambda d: d[:-2] + b",\n" + b"[" * 2000 + b"]" * 2000 + b"]}",  # deeper than orjson reads
        lambda d: d.replace(b"[4,", b"[1e400,", 1),  # a revision out of range, in a `since`
        lambda d: d.replace(b"revision 2 ", b"revision 2 \\ud800", 1),  # a lone surrogate
        lambda d: d.replace(b"sandbox", b"sand\nbox", 1),  # a line break inside a result
    ],
)
def test_a_damaged_tally_is_refused_as_a_damaged_row(damage: Callable[[bytes], bytes]) -> None:
    """Each is a ValueError (or a KeyError or TypeError from a result's parts), which the
    engine takes for a damaged row: the rule is evaluated afresh, never read half."""
    rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
    data = dump_tally(Tally(3, Counter({"fail": 3}), 1, 4, _step_results(rule, 3), 3), rule)
    assert data is not None
    with pytest.raises((ValueError, KeyError, TypeError)):
        load_tally(damage(data), rule)


def test_reading_a_long_tally_holds_one_result_parsed_at_a_time() -> None:
    """Measured in a fresh interpreter (tracemalloc counts every thread and cache of a test
    worker): reading back 20,000 results held their parsed lists and strings all at once,
    79 MB more than the results read for 5.3 MB of text; now 8.5 MB, most of it the index
    that makes repeated values one object."""
    code = """
import sys, tracemalloc
from collections import Counter
sys.path.insert(0, ".")
from test_evalstate import _step_results
from auditor.evaluate.change import Tally
from auditor.evaluate.incremental import dump_tally, load_tally
from auditor.policy.model import Rule
rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
results = _step_results(rule, 20000)
data = dump_tally(Tally(20000, Counter({"fail": 20000}), 1, 20001, results, 20000), rule)
del results
load_tally(data, rule)  # the first reading's lasting allocations (caches) out of the count
tracemalloc.start()
kept = load_tally(data, rule)
current, peak = tracemalloc.get_traced_memory()
print(len(data), current, peak)
"""
    size, current, peak = map(int, printed_by_a_fresh_interpreter(code).split())
    assert peak - current < 2 * size, (size, current, peak)


def test_a_tally_an_earlier_version_appended_to_reads_back_whole() -> None:
    """A state file shared by two versions: the earlier one writes a tally it read back as it
    was, with its new results after a comma alone (review R73). Read line by line that
    failed, and the rule was evaluated afresh on every run; it is read whole, and written
    anew, a result a line."""
    rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
    results = _step_results(rule, 4)
    data = dump_tally(Tally(3, Counter({"fail": 3}), 1, 4, results[:3], 3), rule)
    assert data is not None
    appended = data[:-2] + b"," + orjson.dumps(_stored(results[3])) + b"]}"
    back = load_tally(appended, rule, again=lambda: appended)
    assert back.open == results and back.stored is None
    assert dump_tally(back, rule) == dump_tally(
        Tally(3, Counter({"fail": 3}), 1, 4, results, 4), rule
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: [["change", 1, "l", 2, None], *r[1:]],  # a subject's key not text
        lambda r: [["nope", "k", "l", 2, None], *r[1:]],  # not a kind of subject
        lambda r: [["change", "k", "l", "2", None], *r[1:]],  # its revision not a number
        lambda r: [r[0], r[1], 7, *r[3:]],  # a message not text
        lambda r: [*r[:4], ["2", "2026-09-03T10:15:00+00:00", "a@b.c", "A"]],
        lambda r: [*r[:4], [2, "2026-09-03T10:15:00", "a@b.c", "A"]],  # a time without offset
        lambda r: [*r[:4], [2, "2026-09-03T10:15:00+00:00", None, "A"]],
    ],
)
def test_a_result_of_the_wrong_types_is_a_damaged_row(damage: Callable[[Any], Any]) -> None:
    """Each was read back and failed a report writer later (`unexpected TypeError`, exit 2
    on every run, review R73); now it is refused where it is read: its rule is evaluated
    afresh."""
    rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
    (result,) = _step_results(rule, 1)
    raw = damage(_stored(result))
    data = orjson.dumps({"steps": 1, "counts": {"fail": 1}, "first": 1, "last": 2, "open": [raw]})
    with pytest.raises((ValueError, TypeError)):
        load_tally(data, rule)


def test_a_tally_written_whole_by_an_earlier_version_reads_back_and_is_written_anew() -> None:
    """Before its results were put a line each, a tally was one dump of the whole: read whole,
    the same results, and its text is not written back as it was (`stored`) but anew."""
    rule = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
    results = _step_results(rule, 5)
    data = dump_tally(Tally(5, Counter({"fail": 5}), 1, 6, results, 5), rule)
    assert data is not None
    earlier = data.replace(b"\n", b"")
    back = load_tally(earlier, rule, again=lambda: earlier)
    assert back.open == results and back.stored is None
    assert dump_tally(back, rule) == data
