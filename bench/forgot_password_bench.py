""""Forgot password" answer time for a known address against an unknown one (account enumeration by timing).

Not a test: it prints the median, p95 and mean answer time of each kind and their difference, and
asserts nothing (docs/benchmarks.md, "Forgot password: known and unknown addresses")::

    BULKHEAD_DATA_DIR=.data/forgot-bench .venv/bin/python manage.py migrate
    BULKHEAD_DATA_DIR=.data/forgot-bench .venv/bin/python -m bench.forgot_password_bench --rounds 300

It makes a throwaway tenant with one active member (``--tenants`` tenants of that one account), then
posts the form through Django's test client in this process (no server, no network: what the answer
does, not what a network adds), the known and the unknown address alternately, after a warm-up of
20 of each. The rate limits are lifted for the run (its own environment). The e-mails go where the
data folder's settings send them (a file under ``BULKHEAD_EMAIL_DIR`` unless an SMTP host is set).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid

WARM_UP = 20


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    os.environ["BULKHEAD_MAIL_PER_ADDRESS_PER_HOUR"] = os.environ["BULKHEAD_MAIL_PER_CLIENT_PER_HOUR"] = "1000000"
    from bulkhead import embedded_services

    embedded_services.ensure_started()
    import django

    django.setup()


def _stats(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"median": statistics.median(ordered), "p95": ordered[int(round(0.95 * (len(ordered) - 1)))],
            "mean": statistics.fmean(ordered)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300, help="timed posts of each address")
    parser.add_argument("--tenants", type=int, default=1, help="tenants the known address is a member of")
    args = parser.parse_args(argv)
    _setup()
    from django.test import Client

    from accounts.models import Tenant
    from accounts.services import membership_create, tenant_create
    from accounts.tenancy import tenant_activate

    run = uuid.uuid4().hex[:8]
    known = f"known-{run}@forgot-bench.invalid"
    unknown = f"unknown-{run}@forgot-bench.invalid"
    tenants = []
    for i in range(args.tenants):
        tenant = tenant_create(slug=f"forgot-bench-{run}-{i}", name="Forgot bench")
        tenant_activate(tenant.pk)
        membership_create(tenant=tenant, email=known, role="viewer", clearance="public")
        tenants.append(tenant.pk)
    tenant_activate(None)
    client = Client(raise_request_exception=True)
    times: dict[str, list[float]] = {"known": [], "unknown": []}
    try:
        for i in range(WARM_UP + args.rounds):
            for kind, email in (("known", known), ("unknown", unknown)) if i % 2 else (
                    ("unknown", unknown), ("known", known)):
                started = time.perf_counter()
                response = client.post("/password/forgot/", {"email": email})
                elapsed = (time.perf_counter() - started) * 1000
                assert response.status_code == 200, response.status_code
                if i >= WARM_UP:
                    times[kind].append(elapsed)
    finally:
        from accounts.tenancy import owner_alias

        Tenant.objects.using(owner_alias()).filter(pk__in=tenants).delete()
    stats = {kind: _stats(samples) for kind, samples in times.items()}
    print(f"{'address':<8} {'median ms':>10} {'p95 ms':>8} {'mean ms':>8}   ({args.rounds} posts each, "
          f"{args.tenants} tenant(s))")
    for kind, row in stats.items():
        print(f"{kind:<8} {row['median']:>10.2f} {row['p95']:>8.2f} {row['mean']:>8.2f}")
    print(f"known - unknown: median {stats['known']['median'] - stats['unknown']['median']:+.2f} ms, "
          f"mean {stats['known']['mean'] - stats['unknown']['mean']:+.2f} ms")


if __name__ == "__main__":
    main()
