"""What the partial indexes of title candidates and roots save a reader's title (``kb`` migration 0016;
docs/benchmarks.md, "Eighteenth session: the per-reader title's cost").

Not a test: it prints the median and p95 of each statement and asserts only that both states answer the same::

    BULKHEAD_DATA_DIR=.data/title-bench .venv/bin/python manage.py migrate
    BULKHEAD_DATA_DIR=.data/title-bench .venv/bin/python -m bench.title_index_bench --documents 5000 --sections 20

It builds the title bench's tenant (``bench.title_bench``: ``--documents`` documents of ``--sections`` sections, a
content title borne by an internal or a restricted section, a front matter's tag; an internal viewer), then times
on the same rows, in turns, the statements that ask each document's title or root as the reader is shown them --
the documents list sorted by title, filtered by a title word, by a tag, its first page, and the console's documents
page filtered and sorted by title (``?q=Content&sort=title``, through Django's test client) -- with the two indexes
dropped (the schema before 0016) and created again (after), ``--rounds`` times each, in the order off-on, on-off,
... so that a drift of the machine falls on both. The indexes are created again and the tenant deleted afterwards.
"""

from __future__ import annotations

import argparse

from bench.change_times_bench import _build, _setup
from bench.timing import p50_p95

INDEXES = ("section_title_candidate_idx", "section_root_idx")


def _indexes(on: bool) -> None:
    """Create (``on``) or drop the indexes, as the tables' owner, with fresh planner statistics."""
    from django.db import connections

    from accounts.tenancy import owner_alias
    from kb.models import Section

    connection = connections[owner_alias()]
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'kb_section'")
        present = {row[0] for row in cursor.fetchall()}
    with connection.schema_editor() as editor:
        for index in (i for i in Section._meta.indexes if i.name in INDEXES):
            if on and index.name not in present:
                editor.add_index(Section, index)
            elif not on and index.name in present:
                editor.remove_index(Section, index)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE kb_section")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    _setup()
    from django.test import Client

    from accounts.tenancy import acting_tenant
    from bench.title_bench import titled
    from console.membership import SESSION_KEY
    from kb import selectors

    tenant, reader = _build(args.documents, args.sections)
    try:
        titled(tenant)
        console = Client()
        console.force_login(reader.user)
        session = console.session
        session[SESSION_KEY] = reader.pk
        session.save()

        def page(url):
            response = console.get(url)
            assert response.status_code == 200, (url, response.status_code)
            return response

        def listed():
            return selectors.document_list(member=reader)

        cases = {
            "list, first 25 rows": lambda: list(listed()[:25]),
            "list sorted by title, first 25": lambda: list(listed().order_by("title_shown", "id")[:25]),
            "title filter 'content', first 25": lambda: list(listed().filter(title_shown__icontains="content")[:25]),
            "title filter 'untitled', first 25": lambda: list(
                listed().filter(title_shown__icontains="untitled")[:25]),
            "tag filter 'kestrel', first 25": lambda: list(selectors.document_list(member=reader, tag="kestrel")[:25]),
            "console /documents/?q=Content&sort=title": lambda: page("/documents/?q=Content&sort=title"),
        }
        answers = {}
        results: dict[tuple[str, bool], list[tuple[float, float]]] = {}
        print(f"{args.documents} documents x {args.sections} sections, internal reader, {args.repeat} runs each, "
              f"{args.rounds} rounds (p50 / p95 ms)")
        for round_ in range(args.rounds):
            for on in ((False, True) if round_ % 2 == 0 else (True, False)):
                _indexes(on)
                with acting_tenant(tenant.pk):
                    answers.setdefault(on, [(d.pk, d.title_shown) for d in listed().order_by("title_shown", "id")])
                for name, run in cases.items():
                    if name.startswith("console"):
                        results.setdefault((name, on), []).append(p50_p95(run, args.repeat))
                        continue
                    with acting_tenant(tenant.pk):
                        results.setdefault((name, on), []).append(p50_p95(run, args.repeat))
        assert answers[False] == answers[True]  # the same titles, in the same order: only the way to them differs
        for name in cases:
            row = []
            for on in (False, True):
                row.append(" ".join(f"{p50:.1f}/{p95:.1f}" for p50, p95 in results[(name, on)]))
            print(f"  {name}: without {row[0]} -- with {row[1]}")
    finally:
        _indexes(True)
        with acting_tenant(tenant.pk):
            tenant.delete()


if __name__ == "__main__":
    main()
