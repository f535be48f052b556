"""A small network for the tests that attack the server's outgoing requests: a JSON service on a loopback
address, and a host name that rebinds. The loopback network plays both parts of an SSRF test: 127.0.0.1 is
"the internet" (the only address the patched rule calls public), 127.0.0.2 the server's own network."""

from __future__ import annotations

import http.server
import json
import socket
import threading

PUBLIC, INTERNAL = "127.0.0.1", "127.0.0.2"


def json_server(
    host: str, port: int, body: dict, asked: list, *, record=lambda path, host: (path, host)
) -> http.server.ThreadingHTTPServer:
    """A service answering ``body`` to every GET, recording ``record(path, Host header)`` (by default the
    pair) in ``asked``; the caller shuts it down (``shutdown()``, ``server_close()``)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            asked.append(record(self.path, self.headers.get("Host")))
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    return server


def loopback_is_the_internet(monkeypatch) -> None:
    """The address rule (``sources.addresses.address_allowed``) calls :data:`PUBLIC` public and nothing else."""
    import sources.addresses

    monkeypatch.setattr(sources.addresses, "address_allowed", lambda address: address == PUBLIC)


def rebinding_name(monkeypatch, name: str, port: int) -> list[str]:
    """``name`` resolves to the addresses of the returned list in turn (the last one from then on): set it
    to ``[PUBLIC, INTERNAL]`` for a name that answers the check publicly and every later lookup internally.
    Other names resolve as before."""
    answers: list[str] = []
    original = socket.getaddrinfo

    def resolver(host, *args, **kwargs):
        if host != name:
            return original(host, *args, **kwargs)
        address = answers.pop(0) if len(answers) > 1 else answers[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return answers


def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> tuple[http.server.ThreadingHTTPServer, str]:
    """``handler`` served in the background by a threaded server on a free loopback port (its request threads
    daemons), and the server's base URL; the caller shuts it down (``shutdown()``, ``server_close()``)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
