"""Which process of ``pytest -n N`` (pytest-xdist) this is: the db tier runs in two."""

from __future__ import annotations

import os


def xdist_worker_number() -> int | None:
    """0, 1, ... in a process of ``pytest -n N`` (pytest-xdist); None in a plain run."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ...
    return int(name[2:]) if name.startswith("gw") else None


def xdist_suffix() -> str:
    """A suffix for the names this process gives things that live beside another process's:
    worker logs, cluster-wide database roles ("" in a plain run)."""
    number = xdist_worker_number()
    return "" if number is None else f"_gw{number}"
