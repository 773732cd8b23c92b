"""Real policy servers on 127.0.0.1 for adapter tests.

:class:`OpenPIStandIn` speaks openpi's websocket protocol with openpi-client's own
msgpack-numpy codec (so the wire format is checked against the reference library) and
answers with a scripted chunk; it records every request so a test can check what reached
the policy.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from tests.support import require_module


class OpenPIStandIn:
    """``behaviour(request_index, request) -> reply`` where reply is a dict (sent as
    msgpack), ``str`` (sent as a text error frame), ``bytes`` (sent raw), or ``"close"``."""

    def __init__(self, behaviour: Callable[[int, dict[str, Any]], Any], metadata: dict[str, Any] | None = None) -> None:
        self.codec = require_module("openpi_client.msgpack_numpy", "pip install --no-deps openpi-client==0.1.2")
        from websockets.sync.server import serve

        self.behaviour = behaviour
        self.metadata = metadata or {"revision": "stand-in-1"}
        self.requests: list[dict[str, Any]] = []
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None, max_size=None)
        self.port = self._server.socket.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _handle(self, ws: Any) -> None:
        ws.send(self.codec.packb(self.metadata))
        for frame in ws:
            request = self.codec.unpackb(frame)
            self.requests.append(request)
            reply = self.behaviour(len(self.requests) - 1, request)
            if reply == "close":
                ws.close()
                return
            if isinstance(reply, (str, bytes)):
                ws.send(reply)
            else:
                ws.send(self.codec.packb(reply))

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)


def chunk(rows: int, dim: int, value: float = 0.0) -> dict[str, Any]:
    return {"actions": np.full((rows, dim), value, dtype=np.float32), "server_timing": {"infer_ms": 1.0}}


class HttpAgentStandIn:
    """An HTTP agent on 127.0.0.1: ``behaviour(index, request_json) -> (status, body bytes)``
    or ``"hang"`` (never answers within the client's timeout)."""

    def __init__(self, behaviour: Callable[[int, dict[str, Any]], Any]) -> None:
        import json
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stand_in = self
        self.behaviour = behaviour
        self.requests: list[dict[str, Any]] = []
        self._release = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = json.loads(body)
                stand_in.requests.append(request)
                reply = stand_in.behaviour(len(stand_in.requests) - 1, request)
                if reply == "hang":
                    stand_in._release.wait(10)
                    return
                status, payload = reply
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/act"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
