"""The Python client reading an 8 MiB JSON answer from a local server: the median of 30 ``documents_page()`` calls
after 3 warm-ups -- the cost of streaming a body under ``max_response_bytes``. ``python -m bench.client_read``; the
copy of the client measured is the one imported (its path is printed first)."""

from __future__ import annotations

import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import bulkhead_client
from bulkhead_client import Client

BODY = json.dumps({"count": 1, "next": None, "results": [{"id": "d", "text": "a" * (8 << 20)}]}).encode()


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 -- the standard library's name
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    times = []
    with Client(f"http://127.0.0.1:{server.server_port}", "bkh_x") as kb:
        for _ in range(33):
            start = time.perf_counter()
            kb.documents_page()
            times.append(time.perf_counter() - start)
    server.shutdown()
    server.server_close()
    print(bulkhead_client.__file__, f"median {statistics.median(times[3:]) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
