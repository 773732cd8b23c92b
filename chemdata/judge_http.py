"""One bounded HTTP POST to a model endpoint: a total deadline, a size cap, no redirects.

:func:`post` is how the judge runner talks to its endpoint, and the way for any other
endpoint client.  Whatever the server does, a request ends within ``timeout_s`` seconds of
wall time (connecting, sending and every byte of the answer count: a server trickling one
byte at a time is cut off at the deadline, not after ``timeout_s`` per byte), reads at
most ``max_bytes`` of answer, and never follows a redirect, so the ``Authorization``
header goes to the address given and nowhere else.  The endpoint is contacted directly
(proxy variables are not used).
"""
from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping

#: answers longer than this are refused (a judge answer is a few kilobytes)
MAX_ANSWER_BYTES = 8 << 20
#: how much of an answer a record keeps
KEPT_ANSWER_CHARS = 64 << 10
_CHUNK = 64 << 10


class EndpointError(Exception):
    """A request that gave no usable answer; ``raw`` is the start of what came back, if anything."""

    def __init__(self, message: str, http_status: int | None = None, raw: bytes | None = None,
                 timeout: bool = False) -> None:
        super().__init__(message)
        self.http_status, self.raw, self.timeout = http_status, raw, timeout


def kept(raw: bytes | str | None, limit: int = KEPT_ANSWER_CHARS) -> str | None:
    """``raw`` as text for a record, cut to ``limit`` characters with a note of the full size."""
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [cut: {len(text)} characters in all]"


def post(url: str, data: bytes, headers: Mapping[str, str], *, timeout_s: float,
         max_bytes: int = MAX_ANSWER_BYTES) -> tuple[int, bytes]:
    """POST ``data`` to ``url``; ``(status, answer bytes)`` for a 2xx answer, else
    :class:`EndpointError` (an HTTP error status, a redirect, the deadline, an answer over
    ``max_bytes``, a transport error)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"{url}: not an http(s) URL")
    deadline = time.monotonic() + timeout_s
    late = EndpointError(f"no answer within {timeout_s:g}s", timeout=True)

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise late
        return left

    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=remaining(),
                                                 context=ssl.create_default_context())
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=remaining())
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    expired = threading.Event()

    def cut_off() -> None:
        # headers trickled byte by byte would pass every per-read timeout: at the deadline
        # the socket is shut, which ends whatever read or write is waiting on it
        expired.set()
        sock = connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog: threading.Timer | None = None
    try:
        connection.connect()
        watchdog = threading.Timer(remaining(), cut_off)
        watchdog.daemon = True
        watchdog.start()
        connection.sock.settimeout(remaining())
        connection.request("POST", path, body=data, headers=dict(headers))
        connection.sock.settimeout(remaining())
        response = connection.getresponse()
        status = response.status
        if 300 <= status < 400:
            raise EndpointError(f"HTTP {status} redirect from {url} to {response.getheader('Location')!r} refused "
                                "(an endpoint's answer is never fetched from elsewhere)", status)
        length = response.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > max_bytes:
            raise EndpointError(f"answer of {length} bytes from {url} is over the {max_bytes}-byte limit", status)
        chunks: list[bytes] = []
        size = 0
        while True:
            if connection.sock is not None:
                connection.sock.settimeout(remaining())
            chunk = response.read1(_CHUNK)
            if expired.is_set():
                raise late
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise EndpointError(f"answer from {url} is over the {max_bytes}-byte limit", status,
                                    b"".join(chunks)[:KEPT_ANSWER_CHARS])
            chunks.append(chunk)
            remaining()
        raw = b"".join(chunks)
        if not 200 <= status < 300:
            raise EndpointError(f"HTTP {status} from {url}", status, raw[:KEPT_ANSWER_CHARS])
        return status, raw
    except (socket.timeout, TimeoutError) as error:
        raise late from error
    except EndpointError:
        raise
    except (OSError, http.client.HTTPException) as error:
        if expired.is_set() or time.monotonic() >= deadline:
            raise late from error
        raise EndpointError(f"cannot reach {url}: {type(error).__name__}: {error}") from error
    finally:
        if watchdog is not None:
            watchdog.cancel()
        connection.close()
