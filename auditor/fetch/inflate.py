"""Content-Encoding, decoded under the response size cap: a compression bomb stops at the cap.

httpx decodes a compressed body a network read at a time with no bound on what one read
expands to (1.6 KB of brotli became 2.1 GB in memory before the size guard saw it). Here the
body is read raw and each layer is inflated with zlib's `max_length`, so no call makes more
than the bytes still allowed. Takes the `Content-Encoding` header and the cap, gives a decoder
fed raw chunks; only `gzip` and `deflate` are accepted (what the client asks for), any other
coding is refused by name rather than read as if it were JSON.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from auditor.common.escape import shorten

#: What the client sends as `Accept-Encoding`: the codings `Inflater` decodes.
ACCEPT_ENCODING = "gzip, deflate"

_GZIP = zlib.MAX_WBITS | 16
_ZLIB = zlib.MAX_WBITS
_RAW_DEFLATE = -zlib.MAX_WBITS
_GZIP_MAGIC = b"\x1f\x8b"
_PIECE = 1 << 16
#: Gzip members one body may hold (each costs a new decoder): a server that compresses each
#: write separately sends a few; 3 million empty ones fit in 64 MiB.
MAX_MEMBERS = 1000


class NotDecodable(Exception):
    """The body cannot be decoded: an unsupported coding or corrupt compressed data."""


class TooLarge(Exception):
    """The decoded body grew past the cap."""


class _Layer:
    """One coding, inflated with its output bounded by the cap (in total, over all calls).

    The stream must end (a gzip member's CRC and length, a zlib stream's Adler-32, a raw
    deflate stream's final block are then checked), and nothing may follow it but another gzip
    member (RFC 1952: a gzip body may be several, its data their concatenation)."""

    def __init__(self, name: str, cap: int) -> None:
        self.name = name
        self._cap = cap
        self._out = 0
        self._deflate = name == "deflate"  # zlib-wrapped, or raw as some servers send it
        self._inflater = zlib.decompressobj(_ZLIB if self._deflate else _GZIP)
        self._started = False  # deflate: zlib-wrapped or raw is decided (2 bytes were read)
        self._head = b""  # the bytes read before it was decided, for raw deflate to read again
        self._fed = False
        self._members = 1

    def feed(self, data: bytes) -> bytes:
        view, at, outs = memoryview(data), 0, []
        while at < len(view):  # a piece at a time: what follows a member's end is copied
            self._fed = True  # (`unused_data`), so a piece bounds that copy per member
            if self._inflater.eof:  # the stream ended: only another gzip member may follow
                self._inflater = self._next_member(bytes(view[at : at + 2]))
            piece = view[at : at + _PIECE]
            outs.append(self._count(self._decompress(piece)))
            at += len(piece) - len(self._inflater.unused_data)
        return b"".join(outs)

    def _decompress(self, data: memoryview) -> bytes:
        try:
            out = self._inflater.decompress(data, self._cap - self._out + 1)
        except zlib.error as exc:
            if self._deflate and not self._started:  # not zlib-wrapped: try raw deflate
                self._inflater = zlib.decompressobj(_RAW_DEFLATE)
                self._deflate = False
                return self._decompress(memoryview(self._head + bytes(data)))
            raise NotDecodable(f"the body is not valid {self.name} data ({exc})") from None
        if not self._started:  # zlib's header is 2 bytes: a 1-byte first chunk decides nothing
            self._head += bytes(data[:2])
            self._started = len(self._head) >= 2
        return out

    def _next_member(self, start: bytes) -> zlib._Decompress:
        if self.name != "gzip" or not _GZIP_MAGIC.startswith(start):
            raise NotDecodable(f"the body has data after the end of the {self.name} data")
        self._members += 1
        if self._members > MAX_MEMBERS:
            raise NotDecodable(f"the body is more than {MAX_MEMBERS:,} gzip members")
        return zlib.decompressobj(_GZIP)

    def finish(self) -> bytes:
        try:
            out = self._count(self._inflater.flush())
        except zlib.error as exc:
            raise NotDecodable(f"the body is not valid {self.name} data ({exc})") from None
        if self._fed and not self._inflater.eof:
            raise NotDecodable(f"the {self.name} data is cut off before its end")
        return out

    def _count(self, out: bytes) -> bytes:
        self._out += len(out)
        if self._out > self._cap or self._inflater.unconsumed_tail:
            raise TooLarge
        return out


class Inflater:
    """Decodes a body sent with `content_encoding` (the header's value, possibly empty)."""

    def __init__(self, content_encoding: str, cap: int, redact: Callable[[str], str] = str) -> None:
        """`redact`: what an error shows of the header, applied before it is cut short (a
        token echoed there, cut first, would no longer be the token the redaction knows)."""
        names = [n.strip() for n in content_encoding.split(",") if n.strip()]
        layers: list[_Layer] = []
        for written in reversed(names):  # the header lists codings in the order they were applied
            name = written.lower()
            if name == "identity":
                continue
            if name not in ("gzip", "x-gzip", "deflate"):
                raise NotDecodable(
                    f"Content-Encoding {shorten(redact(written), 40)!r} is not one auditor "
                    f"accepts (it asks for {ACCEPT_ENCODING}, or none)"
                )
            layers.append(_Layer("gzip" if name == "x-gzip" else name, cap))
        self._layers = layers

    def feed(self, chunk: bytes) -> bytes:
        """The decoded bytes of one raw chunk (raises `TooLarge` past the cap)."""
        for layer in self._layers:
            chunk = layer.feed(chunk)
        return chunk

    def finish(self) -> bytes:
        """What the decoders still held at the end of the body."""
        out = b""
        for layer in self._layers:
            out = layer.feed(out) + layer.finish()
        return out
