"""MCP ``search`` against the same search through the REST API, on a running server (``make demo``), and
the Python client's retries under the server's throttle.

    python -m bench.mcp_bench --url http://127.0.0.1:8000 --token <admin API token> [--rounds 200]

Latency: one MCP session (the SDK's client, Streamable HTTP) and one REST client (httpx), each with a
token of its own (the throttle counts per token) of the same member, created here through the API and
revoked at the end; the same search body, interleaved (MCP, REST, MCP, ...) over the example queries,
after a warm-up; wall time per call at the client. Retries: the Python client (``bulkhead_client``)
sends cheap calls with a fresh token until the server's throttle answers 429, and goes on through it:
each wait is the server's ``Retry-After``, slept for real. Prints a JSON report (``--json`` writes it).
Needs no Django: it talks HTTP only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import httpx

QUERIES = [
    "who do I page when a security alert fires?",
    "how long must passwords be?",
    "how do I store embeddings with Django?",
    "what is the release process?",
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values: list[float]) -> dict:
    return {"n": len(values), "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(_percentile(values, 0.95), 2), "mean_ms": round(statistics.fmean(values), 2)}


async def latency(url: str, token_mcp: str, token_rest: str, rounds: int, body: dict) -> dict:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    mcp_ms, rest_ms = [], []
    headers = {"Authorization": f"Bearer {token_mcp}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as mcp_client, \
            httpx.AsyncClient(base_url=url, headers={"Authorization": f"Token {token_rest}"}, timeout=60) as rest:
        arguments = {k: v for k, v in body.items() if k != "context_token_budget"}
        arguments["budget"] = body["context_token_budget"]
        for i in range(rounds + 10):
            query = QUERIES[i % len(QUERIES)]
            started = time.perf_counter()
            result = await mcp_client.call_tool("search", {**arguments, "query": query})
            took_mcp = (time.perf_counter() - started) * 1000
            assert not result.is_error, result.content
            started = time.perf_counter()
            response = await rest.post("/api/v1/search/", json={**body, "query": query})
            took_rest = (time.perf_counter() - started) * 1000
            assert response.status_code == 200, response.text
            if i >= 10:  # the first ten rounds warm both paths up
                mcp_ms.append(took_mcp)
                rest_ms.append(took_rest)
    mcp, rest = _summary(mcp_ms), _summary(rest_ms)
    goal = {q: round(rest[f"{q}_ms"] * 1.2 + 2, 2) for q in ("p50", "p95")}
    return {"mcp": mcp, "rest": rest, "goal_ms (1.2 x REST + 2 ms)": goal,
            "within_goal": mcp["p50_ms"] <= goal["p50"] and mcp["p95_ms"] <= goal["p95"],
            "mcp_over_rest_p50_ms": round(mcp["p50_ms"] - rest["p50_ms"], 2)}


def retries(url: str, token: str, calls: int) -> dict:
    from bulkhead_client import Client, RetryPolicy

    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    started = time.perf_counter()
    with Client(url, token, retry=RetryPolicy(max_retries=3, max_wait=70, sleep=sleep)) as client:
        for _ in range(calls):
            client.documents_page(limit=1)
    return {"calls": calls, "all_answered": True, "throttled_then_retried": len(waits),
            "waits_s (Retry-After)": waits, "seconds": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True, help="an admin's API token (makes and revokes its own)")
    parser.add_argument("--rounds", type=int, default=200, help="0: skip the latency run")
    parser.add_argument("--retry-calls", type=int, default=700, help="0: skip the retry run")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    url = options.url.rstrip("/")
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Token {options.token}"}, timeout=60)
    made = [admin.post("/api/v1/tokens/", json={"name": f"mcp-bench-{n}"}).json() for n in range(3)]
    try:
        body = {"mode": "hybrid", "top_k": 5, "expand": "parent", "context_token_budget": 2000}
        report = {"url": url, "rounds": options.rounds, "search": body}
        if options.rounds:
            report["latency"] = asyncio.run(latency(url, made[0]["key"], made[1]["key"], options.rounds, body))
        if options.retry_calls:
            report["retries"] = retries(url, made[2]["key"], options.retry_calls)
    finally:
        for token in made:
            admin.post(f"/api/v1/tokens/{token['id']}/revoke/")
    text = json.dumps(report, indent=2)
    print(text)
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(text)


if __name__ == "__main__":
    main()
