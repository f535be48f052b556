"""The price of a PDF's text extraction (:mod:`ingestion.costs`), read from its structure before any page is.

pypdf extracts a page by interpreting its content streams operator by operator (about 180 KB a
second on the reference machine), the form XObjects they draw each time they draw them, with
the fonts' ToUnicode maps. So a page costs the decompressed bytes of all three, and the
document the sum over the page tree's *references*: a page tree may name one page object many
times, and pypdf reads it again each time (a 30 KB file naming one page of 2,000 lines 4,999
times was 4,999 pages to extract, where its bytes said "small").

Each distinct stream is decompressed once (memoised by object number) and only while the
running total is within the document's budget; repeated references cost nothing more to price.
Form invocations per page are counted up to pypdf's own cap (``xform_maximum_invocations_per_extraction``).
"""

from __future__ import annotations

import re
from collections import Counter

from ingestion import costs
from ingestion.structure import ParseError

# "/Name Do": a form (or image) XObject drawn by a content stream.
_DO_RE = re.compile(rb"/([^\s/\[\]()<>{}%]+)\s*Do(?=[\s/\[\]()<>{}%]|$)")
MAX_FORM_DEPTH = 64
# pypdf stops drawing forms after this many invocations in one page's extraction.
DEFAULT_MAX_INVOCATIONS = 5_000


def _key(obj) -> tuple:
    ref = getattr(obj, "indirect_reference", None)
    if ref is not None:
        return (ref.idnum, ref.generation)
    return ("direct", id(obj))


def _resolve(value):
    return value.get_object() if value is not None and hasattr(value, "get_object") else value


def _max_invocations() -> int:
    try:
        from pypdf._configuration import get_configuration

        return int(get_configuration().xform_maximum_invocations_per_extraction)
    except Exception:  # noqa: BLE001 - an older or newer pypdf: its documented default
        return DEFAULT_MAX_INVOCATIONS


class _Pricer:
    def __init__(self) -> None:
        self.streams: dict[tuple, tuple[int, Counter]] = {}  # key -> (decoded bytes, names drawn with Do)
        self.forms: dict[tuple, int] = {}
        self.fonts: dict[tuple, int] = {}
        self.max_invocations = _max_invocations()

    def stream(self, obj) -> tuple[int, Counter]:
        key = _key(obj)
        known = self.streams.get(key)
        if known is None:
            data = obj.get_data() if hasattr(obj, "get_data") else b""
            if isinstance(data, str):
                data = data.encode("latin-1", "replace")
            known = (len(data), Counter(m.group(1) for m in _DO_RE.finditer(data)))
            self.streams[key] = known
        return known

    def page(self, page) -> int:
        contents = _resolve(page.get("/Contents"))
        streams = [_resolve(s) for s in contents] if isinstance(contents, list) else [contents]
        cost, drawn = 0, Counter()
        for stream in streams:
            if stream is None:
                continue
            size, names = self.stream(stream)
            cost += size
            drawn.update(names)
        resources = _resolve(page.get("/Resources"))
        budget = [self.max_invocations]
        return cost + self.font_maps(resources) + self.drawn(resources, drawn, budget, 0, frozenset())

    def drawn(self, resources, names: Counter, budget: list[int], depth: int, stack: frozenset) -> int:
        if not names or not hasattr(resources, "get"):
            return 0
        if depth > MAX_FORM_DEPTH:
            raise ParseError(f"this PDF nests form XObjects more than {MAX_FORM_DEPTH} deep")
        xobjects = _resolve(resources.get("/XObject"))
        if not hasattr(xobjects, "get"):
            return 0
        total = 0
        for name, count in names.items():
            form = _resolve(xobjects.get("/" + name.decode("latin-1")))
            if not hasattr(form, "get") or form.get("/Subtype") != "/Form":
                continue
            key = _key(form)
            if key in stack:  # pypdf skips a form that draws itself
                continue
            times = min(count, budget[0])
            if times <= 0:
                break
            budget[0] -= times
            total += times * self.form(form, resources, budget, depth + 1, stack | {key})
        return total

    def form(self, form, outer, budget: list[int], depth: int, stack: frozenset) -> int:
        key = _key(form)
        known = self.forms.get(key)
        if known is None:
            size, names = self.stream(form)
            resources = _resolve(form.get("/Resources")) or outer
            known = size + self.font_maps(resources) + self.drawn(resources, names, budget, depth, stack)
            self.forms[key] = known
        return known

    def font_maps(self, resources) -> int:
        if not hasattr(resources, "get"):
            return 0
        fonts = _resolve(resources.get("/Font"))
        if not hasattr(fonts, "values"):
            return 0
        total = 0
        for font in fonts.values():
            font = _resolve(font)
            if not hasattr(font, "get"):
                continue
            cmap = _resolve(font.get("/ToUnicode"))
            if cmap is None or not hasattr(cmap, "get_data"):
                continue
            key = _key(cmap)
            if key not in self.fonts:
                self.fonts[key] = self.stream(cmap)[0]
            total += self.fonts[key]
        return total


def price_pages(reader) -> int:
    """Charge ``pdf_content_bytes`` for the pages of ``reader`` (raises :class:`ingestion.costs.TooCostly`
    or :class:`~ingestion.costs.OverLaneBudget`); returns the bytes counted."""
    pages = reader.pages
    keys = [_key(pages[index]) for index in range(len(pages))]
    distinct = len(set(keys))
    document_limit = costs.active().document.pdf_content_bytes
    pricer = _Pricer()
    known: dict[tuple, int] = {}
    total, counted = 0, 0
    for index, key in enumerate(keys):
        cost = known.get(key)
        if cost is None:
            if total > document_limit:
                break  # over already: decompress nothing more
            cost = known[key] = pricer.page(pages[index])
        total += cost
        counted = index + 1
    references = f"{len(keys):,} page reference{'s' if len(keys) != 1 else ''}"
    objects = f"{distinct:,} page object{'s' if distinct != 1 else ''}"
    if counted < len(keys):
        detail = f"in the first {counted:,} of its {references} (to {objects}), and more after them"
    else:
        detail = f"({references} to {objects}; each reference is read)"
    costs.charge("pdf_content_bytes", total, subject="this PDF", detail=detail)
    return total
