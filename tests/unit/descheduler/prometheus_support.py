"""Test support for Prometheus as a metrics source: an HTTP server in a thread that
serves fixed bodies (an exporter's ``/metrics``, or a stand-in for the query API that
records each request), and a real Prometheus (Debian's ``prometheus``) scraping it."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Served:
    """What the server answers (status, content type, body) and what it was asked."""

    status: int = 200
    content_type: str = "application/json"
    body: bytes = b""
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    """Each request's path and headers."""


@contextlib.contextmanager
def serving(served: Served) -> Iterator[str]:
    """An HTTP server on a free port answering every GET with ``served``; yields its
    base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.requests.append((self.path, dict(self.headers.items())))
            self.send_response(served.status)
            self.send_header("Content-Type", served.content_type)
            self.send_header("Content-Length", str(len(served.body)))
            self.end_headers()
            self.wfile.write(served.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def gauges(name: str, values: dict[str, float]) -> bytes:
    """An exporter's page: one gauge sample per node, labelled ``instance``."""
    lines = [f"# TYPE {name} gauge"]
    lines += [f'{name}{{instance="{node}"}} {value}' for node, value in values.items()]
    return ("\n".join(lines) + "\n").encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def poll(check: Callable[[], bool], within: float, every: float = 0.2) -> None:
    """Ask ``check`` until it says yes; AssertionError after ``within`` seconds."""
    deadline = time.monotonic() + within
    done = threading.Event()
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not ready within {within:g} s")
        done.wait(every)


@contextlib.contextmanager
def prometheus(binary: str, workdir: Path, target: str) -> Iterator[str]:
    """A real Prometheus on a free port scraping ``target`` (host:port) every second,
    keeping the scraped ``instance`` labels (``honor_labels``); yields its URL."""
    config = workdir / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"- job_name: nodes\n  honor_labels: true\n  static_configs: [{{targets: ['{target}']}}]\n"
    )
    port = free_port()
    with (workdir / "prometheus.log").open("w") as log:
        server = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def samples(url: str, query: str) -> int:
    """How many samples the instant ``query`` returns now (0 while not up)."""
    address = f"{url}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    try:
        with urllib.request.urlopen(address, timeout=5) as response:
            return len(json.loads(response.read())["data"]["result"])
    except OSError:
        return 0
