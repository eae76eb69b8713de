"""Switchable faults for the emulator, per endpoint and per page, from Python or the command line.

`FaultController.add(endpoint, kind, page=…, times=…, **params)` arms a fault; the server asks
`take(endpoint, page)` on each request and applies what it gets. A request gets at most one
fault that replaces the response (an error status, truncated JSON, a wrong content type), any
delays, and at most one of each paging fault. `parse_fault` reads the command-line form
`ENDPOINT:KIND[:page=N][:times=N][:param=value]`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

ENDPOINTS = ("history", "reports", "computers", "analytics")
STATUS_KINDS = ("429", "500", "502", "503")
REPLACING_KINDS = (*STATUS_KINDS, "truncated_json", "wrong_content_type")
PAGING_KINDS = ("repeat_cursor", "empty_has_more")
HISTORY_KINDS = ("duplicate_revision", "conflicting_revision", "settings_not_object")
USERS_KINDS = ("duplicate_row",)  # the analytics' /users: the page's first row sent twice
KINDS = (*REPLACING_KINDS, "delay", *PAGING_KINDS, *HISTORY_KINDS, *USERS_KINDS)
PARAMS: dict[str, frozenset[str]] = {
    "429": frozenset({"retry_after", "retry_after_date"}),
    "503": frozenset({"retry_after", "retry_after_date"}),
    "delay": frozenset({"seconds"}),
    "settings_not_object": frozenset({"value"}),
}


def supported_kinds(endpoint: str) -> tuple[str, ...]:
    """The fault kinds that mean something on `endpoint`."""
    if endpoint == "history":
        return KINDS
    if endpoint == "analytics":
        return (*REPLACING_KINDS, "delay", *PAGING_KINDS, *USERS_KINDS)
    if endpoint == "reports":
        return (*REPLACING_KINDS, "delay", *PAGING_KINDS)
    return (*REPLACING_KINDS, "delay")


@dataclass
class Fault:
    """One armed fault; `times == 0` means it never runs out."""

    endpoint: str
    kind: str
    page: int | None = None
    times: int = 1
    params: dict[str, Any] = field(default_factory=dict)
    hits: int = 0

    @property
    def exhausted(self) -> bool:
        """True once the fault has hit as many requests as it was armed for."""
        return self.times > 0 and self.hits >= self.times

    def matches(self, endpoint: str, page: int) -> bool:
        """True when this fault applies to a request for `page` of `endpoint`."""
        return (
            not self.exhausted
            and self.endpoint == endpoint
            and (self.page is None or self.page == page)
        )


def _validate(
    endpoint: str, kind: str, page: int | None, times: int, params: dict[str, Any]
) -> None:
    if endpoint not in ENDPOINTS:
        raise ValueError(
            f"unknown fault endpoint {endpoint!r} (choose from {', '.join(ENDPOINTS)})"
        )
    if kind not in supported_kinds(endpoint):
        choices = ", ".join(supported_kinds(endpoint))
        raise ValueError(
            f"fault kind {kind!r} does not apply to {endpoint} (choose from {choices})"
        )
    if page is not None and page < 1:
        raise ValueError(f"fault page must be >= 1, got {page}")
    if times < 0:
        raise ValueError(f"fault times must be >= 0 (0 = forever), got {times}")
    unknown = sorted(set(params) - PARAMS.get(kind, frozenset()))
    if unknown:
        raise ValueError(f"fault {kind!r} takes no parameter {', '.join(unknown)}")
    for name, limit, kinds in (("seconds", 3600, (int, float)), ("retry_after", 86400, (int,))):
        value = params.get(name)
        if value is None:
            continue
        # `1e999` reads as inf and `nan` as nan: neither is a time (the server would sleep
        # forever or fail the request with a traceback)
        if isinstance(value, bool) or not isinstance(value, kinds) or not 0 <= value <= limit:
            kind_word = "a number" if float in kinds else "a whole number"
            raise ValueError(
                f"fault {kind!r}: {name} must be {kind_word} of seconds from 0 to {limit}, "
                f"got {value!r}"
            )


class FaultController:
    """The armed faults of one emulator; thread-safe."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self.fired: list[tuple[str, str, int]] = []

    def add(
        self, endpoint: str, kind: str, *, page: int | None = None, times: int = 1, **params: Any
    ) -> None:
        """Arm `kind` on `endpoint` (optionally only on 1-based `page`) for `times` requests."""
        _validate(endpoint, kind, page, times, params)
        with self._lock:
            self._faults.append(Fault(endpoint, kind, page, times, dict(params)))

    def clear(self) -> None:
        """Disarm every fault."""
        with self._lock:
            self._faults.clear()

    @property
    def armed(self) -> list[Fault]:
        """The faults that can still hit a request."""
        with self._lock:
            return [f for f in self._faults if not f.exhausted]

    def take(self, endpoint: str, page: int) -> list[Fault]:
        """Consume and return the faults that hit this request."""
        taken: list[Fault] = []
        with self._lock:
            for fault in self._faults:
                if fault.matches(endpoint, page) and not _conflicts(fault, taken):
                    fault.hits += 1
                    taken.append(fault)
                    self.fired.append((endpoint, fault.kind, page))
        return taken


def _conflicts(fault: Fault, taken: list[Fault]) -> bool:
    if fault.kind in REPLACING_KINDS:
        return any(t.kind in REPLACING_KINDS for t in taken)
    return fault.kind != "delay" and any(t.kind == fault.kind for t in taken)


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_fault(spec: str) -> tuple[str, str, dict[str, Any]]:
    """`history:429:page=2:times=3:retry_after=5` -> ("history", "429", {page: 2, ...})."""
    parts = spec.split(":")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise ValueError(f"fault {spec!r}: expected ENDPOINT:KIND[:key=value]...")
    options: dict[str, Any] = {}
    for part in parts[2:]:
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"fault {spec!r}: {part!r} is not key=value")
        options[key] = _parse_value(value)
    for key in ("page", "times"):
        if key in options and not isinstance(options[key], int):
            raise ValueError(f"fault {spec!r}: {key} must be an integer")
    return parts[0], parts[1], options
