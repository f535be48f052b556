"""What a document costs to read, priced by the work it makes a parser do rather than by its bytes.

A 30 KB PDF whose page tree names one page object 4,999 times is 4,999 pages of text to
extract (an hour of a worker); 30 KB of Markdown is a few milliseconds. So each parser
charges the *measures* of its input that its work grows with, as soon as it knows them and
before it does that work:

========================  ===================================================================
``input_bytes``           the bytes, for the formats whose work is linear in them (text,
                          Markdown, HTML, CSV/TSV, code, transcripts, e-mail)
``pdf_content_bytes``     a PDF's page content to interpret: the decompressed content streams,
                          the form XObjects they draw (each time they draw them) and the fonts'
                          ToUnicode maps, summed over the page *references* of the page tree
                          (a page named twice is read twice)
``docx_xml_bytes``        a DOCX's XML parts, uncompressed
``text_chars``            the extracted text (a PDF charges it page by page as it extracts)
``sections``              the sections the document makes (rows to store and heading paths)
========================  ===================================================================

against two :class:`Budget` s: the one of **every document** (over it the document fails with
:class:`TooCostly`, naming the numbers) and, where a small-upload lane or the upload preview
reads it, the **lane's** (over it :class:`OverLaneBudget`: the pipeline moves the job to the bulk
lane, the preview answers "too costly to preview"). The document's is checked first, so a
document that could never be read fails at once wherever it is.

The budgets of one parse are set with :func:`pricing` (the budgeted child of
:mod:`ingestion.limits` sets them from its caller's arguments); without it a parse is held to
:data:`DOCUMENT` alone. The values and what they cost on the reference machine are in
docs/security.md ("Budgets of one document").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace

from ingestion.structure import ParseError

MIB = 1024 * 1024

# The unit each measure is counted in, for messages.
UNITS = {
    "input_bytes": "bytes",
    "pdf_content_bytes": "bytes of page content to interpret",
    "docx_xml_bytes": "bytes of XML",
    "text_chars": "characters of text",
    "sections": "sections",
}


@dataclass(frozen=True)
class Budget:
    """The most of each measure one parse may cost (None: no limit of its own)."""

    name: str  # who it is the budget of, in messages: "a document", "the small-upload lane"
    input_bytes: int | None
    pdf_content_bytes: int
    docx_xml_bytes: int
    text_chars: int
    sections: int

    def limit(self, measure: str) -> int | None:
        return getattr(self, measure)


# Every document, on any lane. The bytes are bounded by the upload limit (BULKHEAD_MAX_UPLOAD_BYTES);
# the rest by what the parse time limit (BULKHEAD_PARSE_SECONDS, 120 s) reads on the reference machine:
# pypdf interprets ~180 KB of page content a second, python-docx ~1.4 MB of XML.
DOCUMENT = Budget(
    name="a document", input_bytes=None, pdf_content_bytes=24 * MIB, docx_xml_bytes=64 * MIB,
    text_chars=32_000_000, sections=100_000,
)
# The small-upload lane (and the upload preview): about ten seconds of parsing on the reference machine.
# ``input_bytes`` is BULKHEAD_BULK_DOCUMENT_BYTES, the size over which an upload takes the bulk lane anyway
# (the pipeline passes the setting: :func:`lane_budget`).
SMALL_LANE = Budget(
    name="the small-upload lane", input_bytes=1 * MIB, pdf_content_bytes=2 * MIB, docx_xml_bytes=8 * MIB,
    text_chars=2_000_000, sections=10_000,
)


def lane_budget(*, input_bytes: int) -> Budget:
    """:data:`SMALL_LANE` with the deployment's small-upload size."""
    return replace(SMALL_LANE, input_bytes=input_bytes)


class TooCostly(ParseError):
    """The document costs more than any document may: it fails, naming the numbers."""


class OverLaneBudget(ParseError):
    """The document costs more than the small-upload lane (or the preview) takes: the bulk lane reads it."""


@dataclass(frozen=True)
class Pricing:
    document: Budget = DOCUMENT
    lane: Budget | None = None


_ACTIVE = Pricing()


@contextlib.contextmanager
def pricing(document: Budget = DOCUMENT, lane: Budget | None = None) -> Iterator[Pricing]:
    """Hold the parses inside to ``document`` and, when given, ``lane``."""
    global _ACTIVE
    previous, _ACTIVE = _ACTIVE, Pricing(document, lane)
    try:
        yield _ACTIVE
    finally:
        _ACTIVE = previous


def active() -> Pricing:
    return _ACTIVE


def charge(measure: str, value: int, *, subject: str = "this document", detail: str = "") -> None:
    """Refuse ``value`` of ``measure`` when it passes a budget: :class:`TooCostly` over the document's,
    :class:`OverLaneBudget` over the lane's. ``detail`` (e.g. "(4,999 page references to 1 page
    object)") follows the number in the message."""
    unit = UNITS[measure]
    detail = f" {detail}" if detail else ""
    document_limit = _ACTIVE.document.limit(measure)
    if document_limit is not None and value > document_limit:
        raise TooCostly(
            f"{subject} has {value:,} {unit}{detail}; {_ACTIVE.document.name} may have at most "
            f"{document_limit:,}: split it into several documents"
        )
    lane = _ACTIVE.lane
    lane_limit = lane.limit(measure) if lane is not None else None
    if lane_limit is not None and value > lane_limit:
        raise OverLaneBudget(f"{subject} has {value:,} {unit}{detail}; {lane.name} takes at most {lane_limit:,}")
