"""The HTTP client: the only module that touches the network.

Takes the service addresses and a token, gives the validated pages of any `Listing`: the
enterprise-control history (newest first) and the readiness reports. The paging loop and its
guards live in `auditor.fetch.paging`, retries and size/type guards in `auditor.fetch.retry`,
validation in `auditor.fetch.schema`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType

import httpx

from auditor import __version__
from auditor.common.interrupts import pause
from auditor.fetch.deadline import DeadlineTransport, Network
from auditor.fetch.inflate import ACCEPT_ENCODING
from auditor.fetch.paging import HISTORY, READINESS, Item, Listing, Pages
from auditor.fetch.retry import Budget, Parsed, Requester, RetryPolicy, keep_location
from auditor.redact import Redactor
from auditor.redact.shown import markers_named, shown_address


class PlatformClient:
    """Reads the history and readiness reports; one `httpx.Client` per base address.

    `timeout` bounds each request in total (connect to last byte of the body), `deadline` the
    whole sync (every request and every wait between retries). `network`: the proxy every
    request goes through and the CA bundle trusted, if any; the proxy's password is kept out
    of every message and stored value as the token is (`[token]`)."""

    def __init__(
        self,
        *,
        base_url: str,
        app_url: str | None,
        token: str,
        redactor: Redactor | None = None,
        timeout: float = 30.0,
        deadline: float = 300.0,
        max_pages: int = 10000,
        page_size: int = 100,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = pause,  # (`time.sleep`, cut short by `run --orgs`' cancel)
        clock: Callable[[], float] = time.monotonic,
        max_retry_after: float = 60.0,
        max_response_bytes: int = 64 * 1024 * 1024,
        network: Network | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.app_url = app_url.rstrip("/") if app_url else None
        self.redactor = redactor or Redactor(b"auditor-client")
        self._network = network or Network()
        secrets = (token, *self._network.secrets)
        for secret in secrets:
            self.redactor.register(secret)
        # as the sync record and every line and report show it: never a secret in its path
        self._tokens = secrets
        self.shown_url = self.shown(self.base_url)
        self._max_pages = max_pages
        self._page_size = page_size
        policy = RetryPolicy(
            deadline=deadline,
            max_retry_after=max_retry_after,
            max_response_bytes=max_response_bytes,
            sleep=sleep,
            clock=clock,
            timeout=timeout,
            network=self._network,
        )
        budget = Budget(deadline, clock)  # one deadline for the whole sync, both addresses
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "Accept-Encoding": ACCEPT_ENCODING,  # what `Inflater` decodes under the size cap
            "User-Agent": f"auditor/{__version__}",
        }
        self._clients: list[httpx.Client] = []
        self._history = Requester(
            self._client(self.base_url, headers, timeout, transport),
            policy,
            self.redactor,
            budget,
            secrets,
        )
        self._reports: Requester | None = None
        if self.app_url:
            client = self._client(self.app_url, headers, timeout, transport)
            self._reports = Requester(client, policy, self.redactor, budget, secrets)

    def named(self, text: str, redactor: Redactor) -> str:
        """`text` (redacted by `redactor`) with the marker of this client's token (and its
        proxy's password) reading `[token]`, as an error names them: a fingerprint and
        length of the caller's own token tell nothing a reader needs."""
        return markers_named(text, redactor, self._tokens)

    def shown(self, url: str) -> str:
        """A service address as the sync records it (`shown_address`, this client's token
        `[token]`)."""
        return shown_address(url, self._tokens)

    def _client(
        self,
        base: str,
        headers: dict[str, str],
        timeout: float,
        transport: httpx.BaseTransport | None,
    ) -> httpx.Client:
        client = httpx.Client(
            base_url=base,
            headers=headers,
            timeout=timeout,
            transport=transport or DeadlineTransport(self._network),
            follow_redirects=False,
            trust_env=False,
            event_hooks={"response": [keep_location]},
        )
        self._clients.append(client)
        return client

    @property
    def has_reports(self) -> bool:
        """True when an app address is configured (readiness reports can be read)."""
        return self._reports is not None

    def _address(self, listing: Listing) -> tuple[Requester, str] | None:
        if not listing.on_app:
            return self._history, self.base_url
        if self._reports is None or self.app_url is None:
            return None
        return self._reports, self.app_url

    def pages(
        self,
        listing: Listing,
        *,
        start: str | None = None,
        first_number: int = 1,
        seen: Iterable[bytes] = (),
        page_size: int | None = None,
    ) -> Pages:
        """Each validated page of `listing`; nothing for readiness without an app address.
        `ahead()` on the result fetches the next page while the caller works on this one.
        `start`, `first_number`, `seen`, `page_size`: go on where an earlier sync stopped
        (`Pages`), at the page size it had come to."""
        requester, base = self._address(listing) or (None, "")
        return Pages(
            requester,
            base,
            listing,
            page_size=self._page_size if page_size is None else page_size,
            max_pages=self._max_pages,
            start=start,
            first_number=first_number,
            seen=seen,
        )

    @property
    def page_size(self) -> int:
        """The page size asked for (`limit`), as configured."""
        return self._page_size

    def get_json(self, path: str, params: dict[str, str], where: str) -> Parsed:
        """One GET on the base address under the sync's retries and deadline (analytics)."""
        return self._history.get_json(path, params, where)

    def iter_history_pages(self) -> Iterator[list[Item]]:
        """Yield each history page's raw change dicts (newest first), validated, to the end.

        The dicts are read-only: read in pieces, a change shares the parts it did not change
        (its settings' unchanged values, its user) with the changes before it, the same
        objects (`Pages`); copy one before changing it."""
        return (page.items for page in self.pages(HISTORY))

    def iter_reports_pages(self) -> Iterator[list[Item]]:
        """Yield each readiness-report page (newest first), validated, until a short page."""
        return (page.items for page in self.pages(READINESS))

    def close(self) -> None:
        """Close the underlying HTTP connections."""
        for client in self._clients:
            client.close()

    def __enter__(self) -> PlatformClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
