"""A request's read records (its searches, content reads, sign-ins) are written after its answer.

The record of a search is one INSERT into an append-only table with a GIN index: about 1.5 ms at
the median and more at the tail (docs/benchmarks.md, "The tenant wall"), which the member would
wait for if it were written before the answer. ``ReadRecordsAfterResponseMiddleware`` keeps them
(``audit.services.audit_reads_defer``) and the ``request_finished`` signal -- sent when the server
closes the response, after the last byte went out, also when the view raised -- writes them
(``audit_reads_flush``), each still best effort (never an error for the member). What a request
records is what it did, so a record written a moment later says the same. Administrative acts are
not affected: they are written in the act's own transaction (``audit.services.audit_record``).
"""

from __future__ import annotations

from django.core.signals import request_finished

from audit.services import audit_reads_defer, audit_reads_flush


class ReadRecordsAfterResponseMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        audit_reads_defer()
        return self.get_response(request)


def _write_after_the_answer(**kwargs) -> None:
    audit_reads_flush()


request_finished.connect(_write_after_the_answer, dispatch_uid="bulkhead-audit-reads-after-response")
