"""Pages fetched ahead: the next page travels while the caller works on this one.

Takes the page iterator of a listing (`auditor.fetch.paging.iter_pages`), gives the same pages in
the same order, with one more thing: `ahead()` asks for the next page to be fetched now, in a
background thread, so the request, the server's work and the parsing overlap the caller's own
work on the page it holds. Nothing is fetched ahead unless asked (a caller that may stop after
this page does not ask, so it sends no request it would not have sent). A failure of the page
fetched ahead is raised where that page would have been fetched, never earlier; at most one
page is in flight, so memory holds at most two pages.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class _Fetch(Generic[T]):
    """One `next()` of the source, run in its own daemon thread."""

    def __init__(self, source: Iterator[T]) -> None:
        self._source = source
        self._done = threading.Event()
        self._item: T | None = None
        self._end = False
        self._error: BaseException | None = None
        context = contextvars.copy_context()  # the caller's context (e.g. its deadline)
        thread = threading.Thread(target=context.run, args=(self._run,), daemon=True)
        thread.start()

    def _run(self) -> None:
        try:
            self._item = next(self._source)
        except StopIteration:
            self._end = True
        except BaseException as exc:  # handed to the caller when it takes this page
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> T:
        """The page, or the exception fetching it raised (StopIteration at the end)."""
        self._done.wait()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if self._end:
            raise StopIteration
        item, self._item = self._item, None
        return item  # type: ignore[return-value]  # set unless error or end


class PagesAhead(Iterator[T]):
    """An iterator of pages that can fetch the next one in the background (`ahead()`)."""

    def __init__(self, source: Iterator[T]) -> None:
        self._source = source
        self._pending: _Fetch[T] | None = None

    def __iter__(self) -> PagesAhead[T]:
        return self

    def __next__(self) -> T:
        pending, self._pending = self._pending, None
        if pending is not None:
            return pending.result()
        return next(self._source)

    def ahead(self) -> None:
        """Start fetching the next page now (once; nothing if one is already on its way)."""
        if self._pending is None:
            self._pending = _Fetch(self._source)
