"""The judge's one HTTP request against hostile stand-in servers on 127.0.0.1: a total
deadline, a size cap, no redirects (the API key stays with the address given), a JSON
depth limit, and records that keep only the start of a long answer."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from labrecord.chemdata.judge_http import KEPT_ANSWER_CHARS, MAX_ANSWER_BYTES, EndpointError, kept, post

Handler = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def serve(handle: Handler) -> Iterator[tuple[str, dict[str, Any]]]:
    """A server on 127.0.0.1 whose every POST is answered by ``handle``; yields (base URL, seen)."""
    seen: dict[str, Any] = {"requests": 0, "authorization": [], "sent": 0}

    class One(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen["requests"] += 1
            seen["authorization"].append(self.headers.get("Authorization"))
            try:
                handle(self)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), One)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def chat(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


def answer(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Handler:
    def handle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(body)
    return handle


def drip(total: int, pause_s: float, seen_key: str = "sent") -> Callable[[dict[str, Any]], Handler]:
    def make(seen: dict[str, Any]) -> Handler:
        def handle(h: BaseHTTPRequestHandler) -> None:
            h.send_response(200)
            h.send_header("Content-Length", str(total))
            h.end_headers()
            for _ in range(total):
                h.wfile.write(b" ")
                h.wfile.flush()
                seen[seen_key] += 1
                time.sleep(pause_s)
        return handle
    return make


@contextmanager
def serve_made(make: Callable[[dict[str, Any]], Handler]) -> Iterator[tuple[str, dict[str, Any]]]:
    box: dict[str, Any] = {}
    with serve(lambda h: box["handle"](h)) as (url, seen):
        box["handle"] = make(seen)
        yield url, seen


def test_the_deadline_is_for_the_whole_request_not_each_byte() -> None:
    """A server sending one byte every 50 ms (each read well inside the limit) once kept a
    3 s request going for 41 s; the deadline now covers the whole answer."""
    with serve_made(drip(total=400, pause_s=0.05)) as (url, seen):
        with pytest.raises(EndpointError, match=r"no answer within 0\.5s") as caught:
            post(url + "/v1/chat/completions", b"{}", {}, timeout_s=0.5)
    assert caught.value.timeout
    assert seen["sent"] < 400  # cut off long before the server was done


def test_a_server_that_never_answers_times_out() -> None:
    def silent(h: BaseHTTPRequestHandler) -> None:
        time.sleep(3)

    with serve(silent) as (url, _):
        with pytest.raises(EndpointError, match="no answer within 0.3s"):
            post(url, b"{}", {}, timeout_s=0.3)


def test_an_announced_huge_answer_is_refused_unread() -> None:
    def claims(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(300 << 20))
        h.end_headers()
        h.wfile.write(b"x" * 1000)

    with serve(claims) as (url, _):
        with pytest.raises(EndpointError, match=f"answer of {300 << 20} bytes .* over the {MAX_ANSWER_BYTES}-byte limit"):
            post(url, b"{}", {}, timeout_s=5)


def test_an_endless_answer_is_cut_at_the_cap() -> None:
    chunk = b"x" * (1 << 16)

    def make(seen: dict[str, Any]) -> Handler:
        def endless(h: BaseHTTPRequestHandler) -> None:
            h.send_response(200)
            h.send_header("Connection", "close")
            h.end_headers()
            while seen["sent"] < (300 << 20):
                h.wfile.write(chunk)
                seen["sent"] += len(chunk)
        return endless

    with serve_made(make) as (url, seen):
        with pytest.raises(EndpointError, match="over the .*-byte limit") as caught:
            post(url, b"{}", {}, timeout_s=20, max_bytes=1 << 20)
    assert caught.value.raw is not None and len(caught.value.raw) <= KEPT_ANSWER_CHARS
    assert seen["sent"] < (300 << 20)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_key_goes_nowhere_else(status: int) -> None:
    with serve(answer(chat("{}"))) as (elsewhere, other):
        with serve(answer(b"", status, {"Location": elsewhere + "/steal"})) as (url, first):
            with pytest.raises(EndpointError, match=f"HTTP {status} redirect .* refused"):
                post(url + "/v1/chat/completions", b"{}", {"Authorization": "Bearer k3y"}, timeout_s=5)
    assert first["authorization"] == ["Bearer k3y"]
    assert other["requests"] == 0


def test_kept_cuts_long_text_and_says_so() -> None:
    """Hand check: 10 characters kept of 25, with the full length named."""
    assert kept("a" * 25, limit=10) == "a" * 10 + "… [cut: 25 characters in all]"
    assert kept(b"short") == "short" and kept(None) is None


def test_only_http_urls() -> None:
    with pytest.raises(EndpointError, match="not an http"):
        post("file:///etc/passwd", b"{}", {}, timeout_s=1)


# --------------------------------------------------------------------------- through the runner

def _run(tmp_path: Path, handle: Handler, **options: Any) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    from tests.support import require_module

    require_module("rdkit", 'pip install "labrecord[chem]"')
    from labrecord.chemdata.judge_runner import JudgeConfig, run_judging
    from tests.chemdata.judge_server import write_benchmark

    gold, pred = write_benchmark(tmp_path)
    out = tmp_path / "judgments"
    with serve(handle) as (url, seen):
        run_judging(str(gold), str(pred), out, JudgeConfig(endpoint=url + "/v1", model="m", retries=0, backoff_s=0.0,
                                                           timeout_s=options.pop("timeout_s", 5.0), **options))
    return {p.stem: json.loads(p.read_text()) for p in out.rglob("*.json")}, seen


@pytest.mark.parametrize("body, finding", [
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than"),
    (chat("[" * 100_000 + "]" * 100_000), "nested deeper than"),
    (chat("{" + '"a":{' * 50_000 + "}" * 50_001), "nested deeper than"),
])
def test_deeply_nested_answers_fail_their_figure_only(tmp_path: Path, body: bytes, finding: str) -> None:
    got, _ = _run(tmp_path, answer(body))
    assert len(got) == 4 and got["C"]["status"] == "valid"  # C is a run failure, never sent
    for figure in "ABD":
        assert got[figure]["status"] == "failed" and finding in got[figure]["attempts"][0]["error"]


def test_a_huge_answer_is_not_stored_in_the_record(tmp_path: Path) -> None:
    """A 300 MB answer was once stored whole in the judgment record."""
    got, _ = _run(tmp_path, answer(b"{" + b" " * (12 << 20) + b"}"))
    for figure in "ABD":
        attempt = got[figure]["attempts"][0]
        assert "over the" in attempt["error"] and "byte limit" in attempt["error"]
        assert attempt["response"] is None or len(attempt["response"]) <= KEPT_ANSWER_CHARS + 40


def test_a_long_answer_is_kept_cut(tmp_path: Path) -> None:
    got, _ = _run(tmp_path, answer(chat("x" * (1 << 20))))
    attempt = got["A"]["attempts"][0]
    assert attempt["error"].startswith("judgment is not JSON")
    assert attempt["response"].endswith("characters in all]") and len(attempt["response"]) <= KEPT_ANSWER_CHARS + 40


def test_the_runner_never_sends_the_key_across_a_redirect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", "k3y-never-elsewhere")
    with serve(answer(chat("{}"))) as (elsewhere, other):
        got, first = _run(tmp_path, answer(b"", 307, {"Location": elsewhere + "/v1/chat/completions"}),
                          api_key_env="JUDGE_KEY")
    assert other["requests"] == 0
    assert set(first["authorization"]) == {"Bearer k3y-never-elsewhere"}
    assert all("redirect" in got[f]["attempts"][0]["error"] for f in "ABD")


def test_the_runner_keeps_its_deadline_against_a_trickle(tmp_path: Path) -> None:
    counter: dict[str, Any] = {"sent": 0}
    got, _ = _run(tmp_path, drip(total=200, pause_s=0.05)(counter), timeout_s=0.5)
    for figure in "ABD":
        assert got[figure]["status"] == "failed"
        assert got[figure]["attempts"][0]["error"] == "no answer within 0.5s"
    assert counter["sent"] < 3 * 200


def test_headers_trickled_byte_by_byte_meet_the_deadline() -> None:
    """Each header byte arrives well inside any per-read timeout; the whole request still ends at the deadline."""
    sent = {"n": 0}

    def trickle(h: BaseHTTPRequestHandler) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 400:
            h.wfile.write(bytes([byte]))
            h.wfile.flush()
            sent["n"] += 1
            time.sleep(0.02)

    with serve(trickle) as (url, _):
        with pytest.raises(EndpointError, match=r"no answer within 0\.4s"):
            post(url, b"{}", {}, timeout_s=0.4)
    assert sent["n"] < 400
