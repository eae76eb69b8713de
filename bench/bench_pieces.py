"""History pages read in pieces (`auditor/fetch/pieces.py`) against the same pages read whole,
in this process, alternating, on page shapes the pieces are made for and on shapes they cannot
pay for (which the reader gives up on early, then reads whole). CPU time (`process_time`) of
`Requester.decode` over the pages; prints the range over the rounds and the ratio of the
medians (pieces / whole), and whether each page was read in pieces. Figures only; not in
`bench/run`.

    python bench/bench_pieces.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from auditor.fetch.pieces import Pieces
from auditor.fetch.retry import Budget, Fetched, Requester, RetryPolicy
from auditor.redact import Redactor


def _settings(i: int, keys: int = 200) -> dict[str, Any]:
    s: dict[str, Any] = {
        f"k{j}": {"allowed": [f"m{j}-{x}" for x in range(5)], "n": j, "on": True}
        for j in range(keys)
    }
    s[f"k{i % keys}"] = {"allowed": ["changed", i], "n": i, "on": False}
    return s


def _page(settings: list[dict[str, Any]], first: int = 10**6) -> bytes:
    items = [
        {"revision": first - i, "settings": s, "user": {"id": "u"}, "updatedAt": "2026-01-01"}
        for i, s in enumerate(settings)
    ]
    return orjson.dumps({"changes": items, "pagination": {"hasMore": False, "nextCursor": None}})


def _rotated(i: int, keys: int = 5000) -> dict[str, Any]:
    names = [f"key{j}" for j in range(keys)]
    k = i % keys
    return dict.fromkeys(names[k:] + names[:k], 1)


SHAPES: dict[str, Callable[[], list[bytes]]] = {
    "compact: 5 pages x 100 items x 200 keys": lambda: [
        _page([_settings(p * 100 + i) for i in range(100)], 10**6 - 100 * p) for p in range(5)
    ],
    "one settings of 400,000 keys": lambda: [_page([{f"key{j}": j for j in range(400_000)}])],
    "100 items, 5,000 keys in rotating order": lambda: [_page([_rotated(i) for i in range(100)])],
    "100 items x 3,000 distinct keys": lambda: [
        _page([{f"k{i}-{j}": j for j in range(3000)} for i in range(100)])
    ],
    "100 items x 500 distinct keys": lambda: [
        _page([{f"k{i}-{j}": j for j in range(500)} for i in range(100)])
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    policy = RetryPolicy()
    requester = Requester(httpx.Client(), policy, Redactor(b"k" * 32), Budget(60.0, policy.clock))

    def decode(body: bytes, reader: Pieces | None) -> None:
        request = httpx.Request("GET", "http://svc.test/h")
        headers = {"content-type": "application/json"}
        response = httpx.Response(200, headers=headers, content=body, request=request)
        requester.decode(Fetched(response, body, request, "GET /h", "bench"), reader)

    for name, make in SHAPES.items():
        bodies = make()
        times: dict[str, list[float]] = {"whole": [], "pieces": []}
        read = 0
        for _ in range(args.rounds):
            for how in ("whole", "pieces"):
                reader = Pieces("changes", "settings") if how == "pieces" else None
                start = time.process_time()
                for body in bodies:
                    decode(body, reader)
                times[how].append(time.process_time() - start)
                if reader is not None:
                    read = reader.pages_read
        whole, pieces = times["whole"], times["pieces"]
        ratio = statistics.median(pieces) / statistics.median(whole)
        print(
            f"{name:42s} whole {min(whole) * 1e3:5.0f}-{max(whole) * 1e3:<5.0f} ms"
            f"  pieces {min(pieces) * 1e3:5.0f}-{max(pieces) * 1e3:<5.0f} ms"
            f"  {ratio:4.2f}x  in pieces {read}/{len(bodies)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
