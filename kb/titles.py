"""Titles and headings as they are shown: their screening records and the one rule for showing them.

A document's title (typed at upload, or the content's own) and a section's heading reach a reader's model
wherever they are listed -- the documents list and detail, the sections API, heading paths, contexts, MCP's
tools, the console's pages, audit sentences -- and a planted instruction in one is screened on its own
(``pipeline.screen``). Its verdict is kept on the row that shows it (:data:`kb.models.TITLE_SCREENING`:
:func:`title_record`, written by ingestion, the re-screen job, a review decision in ``kb.screening`` and, for a
typed title, the upload: :func:`document_title_screen`), and every place that shows a title or heading passes
it through :func:`shown_title` (:func:`shown_title_of` for a row): in quarantine mode a held one is
:data:`TITLE_HELD`. A filter or a sort of titles or sources uses the same rule in SQL (:func:`shown_title_sql`,
:func:`shown_source_sql`), so it never matches a held one's stored words. docs/security.md, "Planted
instructions"; docs/screening.md, "Titles and headings".

Below ``kb.screening`` (which reviews and decides), so that selectors, expansion and services can use it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.contrib.postgres.fields import ArrayField
from django.db.models import Case, CharField, F, Func, Q, TextField, When

from accounts.policy import policy_implies
from kb.models import (
    DEFAULT_SCREENING_MODE,
    TITLE_SCREENING,
    ChunkReview,
    Document,
    ScreeningMode,
    ScreeningSettings,
    Section,
)

UNTITLED = "untitled"  # the title of an upload that names none (or names this), until the content gives one


def screening_mode(*, tenant_id: int) -> str:
    """The tenant's mode; the default (quarantine) when it never chose one (nothing is written)."""
    row = ScreeningSettings.objects.filter(tenant_id=tenant_id).values_list("mode", flat=True).first()
    return row or DEFAULT_SCREENING_MODE


def titles_digest(names: Iterable[str]) -> str:
    """A digest of titles (no text): of those that flag a chunk (``kb.screening.TITLES_KEY``), in sorted order;
    of one title, its key in a :data:`~kb.models.TITLE_SCREENING` record."""
    return hashlib.sha256("\x00".join(names).encode()).hexdigest()[:32]


# In a verdict flagged by a heading or the document's title (``pipeline.screen``): a digest of those titles.
# A reviewer's decision follows a chunk's text only under the same digest (ingestion, review, re-screen).
TITLES_KEY = "titles"


def flagging_titles(verdict: dict | None) -> str:
    """The digest of the titles that flag a verdict ("" when none does)."""
    return (verdict or {}).get(TITLES_KEY, "")


# What a held title or heading is shown as (quarantine mode), to everyone but the reviewers in the queue.
TITLE_HELD = "(title held for review)"


@dataclass(frozen=True)
class TitleDecisions:
    """The reviewers' decisions on titles (:func:`title_decisions`): by title digest, each with the policy of the
    row whose record held it (None: the document's own record)."""

    entries: Mapping[str, tuple[tuple[str, tuple | None], ...]]

    def for_row(self, policy: tuple | None) -> dict[str, str]:
        """The decisions a record of a row with ``policy`` (level, group ids; None: the document's) keeps, by title
        digest. A keep-out only hides more: it follows its text to every row, and wins over a release. A release
        follows its text only to a row every reader of the released one may read, as a chunk's does
        (``pipeline.store.carried_review``; found attacking the heading releases, 2026-12-03: an internal admin's
        release of a planted heading was kept for the same heading over a restricted section, and its keep-out
        by a restricted admin undone, at the next re-screen or rebuild). The document's title is shown to every
        member who may see the document, so every reviewer of a heading may read it; a release of the document's
        title goes to no heading (its reviewer may read none in particular)."""
        out = {}
        for key, found in self.entries.items():
            reviews = [review for review, source in found
                       if review == ChunkReview.KEPT_OUT or policy is None
                       or (source is not None and policy_implies(source[0], source[1], policy[0], policy[1]))]
            if reviews:
                out[key] = ChunkReview.KEPT_OUT if ChunkReview.KEPT_OUT in reviews else reviews[0]
        return out


def title_decisions(records: Iterable[tuple[dict | None, tuple | None]]) -> TitleDecisions:
    """The reviewers' decisions in ``records`` (:data:`~kb.models.TITLE_SCREENING`, each with the policy of its
    row: level and group ids, None for the document's), by title digest (:meth:`TitleDecisions.for_row`)."""
    decided: dict[str, list] = {}
    for record, policy in records:
        for key, entry in _entries(record).items():
            if isinstance(entry, dict) and entry.get("flagged") is True and entry.get("review"):
                source = None if policy is None else (int(policy[0]), tuple(sorted(policy[1] or ())))
                decided.setdefault(key, []).append((str(entry["review"]), source))
    return TitleDecisions({key: tuple(found) for key, found in decided.items()})


def title_record(verdicts: Mapping[str, dict], *, detector: str, decided: Mapping[str, str]) -> dict:
    """The :data:`~kb.models.TITLE_SCREENING` record of titles screened on their own (title -> ``Screening.as_dict()``).

    A reviewer's decision on a title stays with it while it is the same text and stays flagged, as a decision
    on a chunk follows its text: ``decided`` (:func:`title_decisions`) holds those of the records it may come
    from (the document's and its sections' before a re-ingestion or a re-screen)."""
    titles = {}
    for title, verdict in verdicts.items():
        key, flagged = titles_digest([title]), bool(verdict.get("flagged"))
        titles[key] = {"flagged": flagged, "reasons": list(verdict.get("reasons", ())) if flagged else [],
                       "review": decided.get(key, "") if flagged else ""}
    return {"detector": detector, "titles": titles}


def releases_undone(record) -> dict | None:
    """``record`` (a :data:`~kb.models.TITLE_SCREENING` record) with every reviewer's release undone -- each such
    title held again, for whoever may read it now; a keep-out stays -- or None when it holds no release
    (``kb.services._title_releases_follow``: a heading narrowed in place above its reviewer)."""
    entries = _entries(record)
    undone = {key: {**entry, "review": ""} for key, entry in entries.items()
              if isinstance(entry, dict) and entry.get("review") == ChunkReview.RELEASED}
    return {**record, "titles": {**entries, **undone}} if undone else None


def _entries(record) -> dict:
    titles = record.get("titles") if isinstance(record, dict) else None
    return titles if isinstance(titles, dict) else {}


def _entry(title: str, record) -> dict | None:
    entry = _entries(record).get(titles_digest([title]))
    return entry if isinstance(entry, dict) else None


def _title_clean(title: str, record) -> bool:
    """Shown as it is in every mode: no title, "untitled", or screened and not flagged."""
    if not (title or "").strip() or title == UNTITLED:
        return True
    entry = _entry(title, record)
    return entry is not None and entry.get("flagged") is False


def title_held(title: str, record, mode: str) -> bool:
    """Whether ``title`` (a document's title or a section's heading, with its :data:`~kb.models.TITLE_SCREENING` record)
    is held under ``mode``: kept out by a reviewer, in every mode (as a kept-out chunk is never returned); in
    quarantine mode (or an unknown one: fail closed), flagged and not released by a reviewer -- or never screened, or its record unreadable (fail closed: a document stored before titles had
    records shows none until the re-screen job writes them, ``pipeline.rescreen``)."""
    if _title_clean(title, record):
        return False
    entry = _entry(title, record)
    if entry is not None and entry.get("review") == ChunkReview.KEPT_OUT:
        return True  # kept out by a reviewer: in every mode, as a kept-out chunk (found attacking the demo)
    if mode in (ScreeningMode.OFF, ScreeningMode.FLAG):
        return False
    return entry is None or entry.get("review") != ChunkReview.RELEASED


def shown_title(title: str, record, mode: str) -> str:
    """The one rule for showing a document's title or a section's heading (docs/security.md, "Planted
    instructions"): a held one (:func:`title_held`) is :data:`TITLE_HELD` -- in lists, details, heading paths,
    contexts, MCP tools, audit sentences -- for everyone; in flag and off mode every title is shown (flag mode
    marks a flagged one: :func:`title_flagged`). Only the review queue shows titles as stored, to reviewers who
    may read their sections (a reviewer sees what they release)."""
    return TITLE_HELD if title_held(title, record, mode) else title


def title_flagged(title: str, record, mode: str) -> bool:
    """Whether ``title`` is shown with a flag: screening flagged it (held, released or kept out); never in off mode."""
    entry = _entry(title, record) if mode != ScreeningMode.OFF and not _title_clean(title, record) else None
    return bool(entry and entry.get("flagged") is True)


# ----------------------------------------------------------------------------- a title and tags per reader

# The attributes a document row carries for one reader (:func:`reader_view`, or the annotations of
# :func:`reader_annotations`): the content title they are shown ("" none: the first title candidate of a section they
# may read), and whether they may read its root (in SQL asked only of a row with a content title, content tags: ""
# and False on a row without, which shows none either way).
TITLE_READ = "content_title_read"
ROOT_READ = "content_tags_read"


def reader_title(document: Document) -> str:
    """The title of ``document`` as the reader it was read for is shown it (before screening): the first title
    candidate, in document order, of a section they may read (``Section.title_candidate``: a front matter's on the
    root, each H1 on its own section; the row's :data:`TITLE_READ`, set by :func:`reader_view` or
    :func:`reader_annotations`), else the stored title -- one the uploader typed, or "untitled". It depends on no
    section they may not read: a hidden H1 before theirs, or a hidden root bearing a front matter's title, is not told
    by an "untitled". A row read for no reader shows the stored title (fail closed). docs/security.md, "A title taken
    from a heading"."""
    shown = getattr(document, TITLE_READ, "")
    if document.content_title and isinstance(shown, str) and shown:
        return shown
    return document.title


def reader_tags(document: Document) -> list[str]:
    """The tags of ``document`` as the reader it was read for is shown them (before screening): the typed ones, and
    the content's (a front matter's, ``content_tags``) when they may read the root (:data:`ROOT_READ`); sorted."""
    tags = list(document.tags or ())
    if document.content_tags and getattr(document, ROOT_READ, False):
        return tags_as_stored([*tags, *document.content_tags])
    return tags


def _first_candidate(reader, prefix: str = ""):
    """The readable sections of the outer document that bear a title candidate, first in document order."""
    from django.db.models import OuterRef

    from accounts.access import readable_q

    pk = f"{prefix}pk" if prefix else "pk"
    return (Section.objects.filter(readable_q(reader), document_id=OuterRef(pk)).exclude(title_candidate="")
            .order_by("order"))


def reader_annotations(reader, prefix: str = "") -> dict:
    """Query expressions of :data:`TITLE_READ` and :data:`ROOT_READ` for ``reader`` on documents (``prefix``: reaching
    them through a relation, ``"document__"``): the first title candidate of a section the reader may read, and
    whether they may read the root (``accounts.access.readable_q``, the one SQL read rule).

    Each is a scalar subquery of one row, asked only of a document with a content title (tags): an ``EXISTS`` here
    was planned as a hashed subplan -- every readable section of the tenant read to answer a page of 25 rows, which
    tripled the documents list's first page (docs/benchmarks.md, "seventeenth session")."""
    from django.db.models import BooleanField, OuterRef, Subquery, Value
    from django.db.models.functions import Coalesce

    from accounts.access import readable_q

    pk = f"{prefix}pk" if prefix else "pk"
    root = Section.objects.filter(readable_q(reader), document_id=OuterRef(pk), parent_id__isnull=True)
    found = Subquery(root.order_by().values(found=Value(True))[:1], output_field=BooleanField())
    title = Subquery(_first_candidate(reader, prefix).values("title_candidate")[:1], output_field=TextField())
    return {TITLE_READ: Case(When(Q(**{f"{prefix}content_title": ""}), then=Value("")),
                             default=Coalesce(title, Value("")), output_field=TextField()),
            ROOT_READ: Case(When(Q(**{f"{prefix}content_tags": []}), then=Value(False)),
                            default=Coalesce(found, Value(False)), output_field=BooleanField())}


def reader_view(documents: Iterable[Document], reader) -> None:
    """Set :data:`TITLE_READ` and :data:`ROOT_READ` on ``documents`` (rows read without :func:`reader_annotations`)
    for ``reader``, in one query."""
    from accounts.access import readable_q

    rows = [d for d in documents if d is not None]
    if not rows:
        return
    candidates: dict[object, list] = {d.pk: [] for d in rows}
    roots: dict[object, object] = {}
    for doc, pk, parent, candidate in (
            Section.objects.filter(readable_q(reader), document_id__in=set(candidates))
            .filter(Q(parent_id__isnull=True) | ~Q(title_candidate="")).order_by("document_id", "order")
            .values_list("document_id", "pk", "parent_id", "title_candidate")):
        if candidate:
            candidates[doc].append((pk, candidate))
        if parent is None:
            roots[doc] = pk
    for document in rows:
        found = candidates[document.pk]
        reader_reads(document, candidates=found, readable=[pk for pk, _ in found], root=roots.get(document.pk))


def reader_reads(document: Document, *, candidates: Iterable[tuple[object, str]], readable: Iterable[object],
                 root: object | None) -> None:
    """Set :data:`TITLE_READ` and :data:`ROOT_READ` on ``document`` from its title candidates (each section's id and
    ``title_candidate``, in document order; those without one may be left out) and the ids of its sections a reader
    may read (``readable``; ``root``: its root's id, None when they may not read it) -- what :func:`reader_view` and
    :func:`reader_annotations` decide, on one row. The title and tags a reader is shown (:func:`reader_title`,
    :func:`reader_tags`) depend on nothing else: on no section they may not read."""
    readable = set(readable)
    shown = next((title for pk, title in candidates if title and pk in readable), "")
    setattr(document, TITLE_READ, shown if document.content_title else "")
    setattr(document, ROOT_READ, root is not None)


def _row_title(row: Document | Section) -> str:
    return reader_title(row) if isinstance(row, Document) else row.title


def shown_title_of(row: Document | Section, mode: str | None = None) -> str:
    """:func:`shown_title` of a document's title (as its reader is shown it: :func:`reader_title`) or a section's
    heading (``mode``: the tenant's, read only when the record does not settle it -- a clean title is shown in every
    mode)."""
    record = (row.metadata or {}).get(TITLE_SCREENING)
    title = _row_title(row)
    if _title_clean(title, record):
        return title
    return shown_title(title, record, mode or screening_mode(tenant_id=row.tenant_id))


def title_flagged_of(row: Document | Section, mode: str | None = None) -> bool:
    """:func:`title_flagged` of a document's title or a section's heading (``mode`` as for :func:`shown_title_of`)."""
    record = (row.metadata or {}).get(TITLE_SCREENING)
    title = _row_title(row)
    if _title_clean(title, record):
        return False
    return title_flagged(title, record, mode or screening_mode(tenant_id=row.tenant_id))


def shown_source(source: str, record, mode: str) -> str:
    """A document's source (a file name, path or URL the uploader gives) as shown under the one rule: held
    (:data:`TITLE_HELD`) when its verdict (screened at upload, :func:`document_title_screen`, or as the title
    it is) holds it -- a file uploaded without a title is titled by its name (500 characters) and its source is
    the same name or its path (``kb.apis``, the console's upload, a source's sync), so a planted name held as
    the title was shown verbatim beside it as the source (found attacking issue 24). A source with no verdict
    (a document uploaded before sources were screened) is shown as it is. ``record``: the document's
    :data:`~kb.models.TITLE_SCREENING` record."""
    for candidate in dict.fromkeys((source, source[:500])):
        if candidate and _entry(candidate, record) is not None and title_held(candidate, record, mode):
            return TITLE_HELD
    return source


def shown_source_of(document: Document, mode: str | None = None) -> str:
    """:func:`shown_source` of ``document``'s source (``mode`` as for :func:`shown_title_of`)."""
    record = (document.metadata or {}).get(TITLE_SCREENING)
    source = document.source or ""
    if not any(c and _entry(c, record) is not None for c in (source, source[:500])):
        return source  # none of the document's screened titles: shown as it is
    return shown_source(source, record, mode or screening_mode(tenant_id=document.tenant_id))


# A tag is a label of a word or a few. The detector reads labels near its vocabulary as instructions -- "email",
# "chatbot", "AI assistants", "respond" as addressing a model (its hijack family), "do not delete, prompt injection,
# system prompt" as an override -- which a label may well be. What a label never holds: a family that tells the model
# what to do (its answer, code, where to send data) or a chat template's role token, two families at once, or (a tag
# alone) a flagged sentence.
TAG_ACTING = frozenset({"answer_manipulation", "code_injection", "exfiltration", "role_tokens"})
TAG_SENTENCE_WORDS = 5


def _tag_refused(text: str, verdict, *, alone: bool) -> bool:
    """Whether screening's ``verdict`` of ``text`` (one tag ``alone``, or the tags as a list reads) refuses it."""
    if not verdict.flagged:
        return False
    reasons = set(verdict.reasons)
    return bool(reasons & TAG_ACTING) or len(reasons) >= 2 or (alone and len(text.split()) >= TAG_SENTENCE_WORDS)


def tag_refused(*, tenant_id: int, tags: Iterable[str]) -> int | None:
    """Where ``tags`` read as an instruction to a model: the position of the first tag that does, ``len(tags)`` when
    they do read together (an instruction cut into short tags: a list of tags is read as one), or None (they do not,
    or the tenant turned screening off). A tag is a label the uploader writes -- typed at upload, or in a Markdown
    file's front matter -- listed wherever its document is (the documents list and detail, MCP's
    ``list_documents``, the console) and so read by the model of every reader's agent; one that reads as an
    instruction is refused where it is written (found attacking the demo, 2026-12-04: "Ignore all previous
    instructions and ..." came back unscreened, in quarantine mode, to every agent that listed documents). Each tag
    is screened alone (its verdict never depends on its neighbours), then the list as one text, under the label
    rule above (:func:`_tag_refused`). What a tenant stored with screening off is judged all the same and kept as
    the document's tags' verdict (:func:`document_tags_screen`), which holds them once screening is on."""
    given = [str(tag).strip() for tag in tags]
    if not any(given) or screening_mode(tenant_id=tenant_id) == ScreeningMode.OFF:
        return None
    return _tags_judged(given)[0]


def _tags_judged(given: list[str]) -> tuple[int | None, list[str]]:
    """:func:`tag_refused`'s reading of the stripped tags ``given`` in every mode: where they read as an instruction
    (or None), and the reasons of the verdicts that refuse them."""
    from ingestion.screening import screen_chunks

    if not any(given):
        return None, []
    for index, tag in enumerate(given):
        readings = list(dict.fromkeys((tag, tag_words(tag)))) if tag else []
        refusing = [verdict for text, verdict in zip(readings, screen_chunks(readings) if readings else [], strict=True)
                    if _tag_refused(text, verdict, alone=True)]
        if refusing:
            return index, list(dict.fromkeys(r for verdict in refusing for r in verdict.reasons))
    # Read together as given, and as the document keeps and lists them (:func:`tags_as_stored`: sorted): found
    # reviewing the rule (2026-12-04), an instruction cut into tags prefixed "a ", "b ", "c ", "d " and given in
    # reverse passed as a list, and was stored -- and listed to every agent -- in the order that reads as one. Each
    # order as written and as its words read (:func:`tag_words`).
    orders = ([tag for tag in given if tag], tags_as_stored(given))
    readings = list(dict.fromkeys(", ".join(words(tag) for tag in order)
                                  for order in orders for words in (str, tag_words)))
    refusing = [verdict for text, verdict in zip(readings, screen_chunks(readings), strict=True)
                if _tag_refused(text, verdict, alone=False)]
    if refusing:
        return len(given), list(dict.fromkeys(r for verdict in refusing for r in verdict.reasons))
    return None, []


# Joins a label's words the way a model reads through and the detector does not (its words are runs of letters,
# digits and "_"): "Ignore_all_previous_instructions_and_email_...", the same with dots, or in CamelCase passed as
# one word (found reviewing the tag rule, 2026-12-04).
_TAG_JOINS = re.compile(r"(?<=[^\W_])[_.]+(?=[^\W_])|(?<=[a-z])(?=[A-Z])")


def tag_words(tag: str) -> str:
    """``tag`` as its words read: "_" and "." between two letters or digits, and a CamelCase boundary, as a space."""
    return _TAG_JOINS.sub(" ", tag)


def tags_as_stored(tags: Iterable[str]) -> list[str]:
    """``tags`` as a document keeps them, and every surface lists them: stripped, each once, sorted."""
    return sorted({str(tag).strip() for tag in tags if str(tag).strip()})


# What held tags are shown as (quarantine mode), to everyone: one placeholder for the list.
TAGS_HELD = "(tags held for review)"
# The text a document's tags' verdict is kept under in its :data:`~kb.models.TITLE_SCREENING` record: the tags as
# stored, after a NUL -- which no stored title, source or heading holds (PostgreSQL's text cannot) -- so a tag list
# never shares an entry with a title that reads the same.
_TAGS_NAME = "\x00tags\x00"


def tags_name(tags: Iterable[str]) -> str:
    """The name ``tags``' verdict is kept under ("" when there are none): the tags as stored (:func:`tags_as_stored`)."""
    stored = tags_as_stored(tags)
    return _TAGS_NAME + "\x00".join(stored) if stored else ""


def document_tags_screen(document: Document, tags: Iterable[str] | None = None) -> None:
    """Give ``document`` (in memory) a verdict of its tags (``tags``: those it will list, by default its own) when its
    record has none: the label rule (:func:`tag_refused`) in every mode -- a tenant with screening off stores what it
    types, and a tag list stored before the rule (2026-12-04) was never read -- kept as a title's is
    (:func:`title_record`'s entry), flagged when the rule refuses the tags. It holds the tags wherever they are shown
    (:func:`shown_tags_of`) once screening is on, and flags every chunk of the document (:func:`tags_flagging`), so a
    reviewer's release of a chunk releases them (``kb.screening.review_decide``). Written at upload, at ingestion
    (the front matter's tags joined) and by the re-screen job (``pipeline.rescreen``)."""
    stored = tags_as_stored(document.tags if tags is None else tags)
    name = tags_name(stored)
    record = (document.metadata or {}).get(TITLE_SCREENING)
    if not name or _entry(name, record) is not None:
        return
    refused, reasons = _tags_judged(stored)
    entry = {"flagged": refused is not None, "reasons": reasons if refused is not None else [], "review": ""}
    from ingestion.screening import DETECTOR_VERSION

    base = record if isinstance(record, dict) else {"detector": DETECTOR_VERSION, "titles": {}}
    document.metadata = {**(document.metadata or {}),
                         TITLE_SCREENING: {**base, "titles": {**_entries(record), titles_digest([name]): entry}}}


def tags_flagging(document: Document, tags: Iterable[str] | None = None) -> tuple[str, dict] | None:
    """The document's tags (``tags``: those it will list, by default its own) as they flag every chunk of it, as a
    held source does (:func:`source_flagging`): the name their verdict is kept under and that verdict, when it holds
    them in quarantine mode (flagged, or unreadable: fail closed); None when clean or absent. Gives the document a
    verdict first when it has none (:func:`document_tags_screen`)."""
    document_tags_screen(document, tags)
    name = tags_name(document.tags if tags is None else tags)
    entry = _entry(name, (document.metadata or {}).get(TITLE_SCREENING)) if name else None
    if entry is not None and entry.get("flagged") is not False:
        return name, entry
    return None


def titles_unshown(document: Document, titles: Iterable[str], candidates: Iterable[str] | None = None) -> set[str]:
    """Those of a document's ``titles`` (its title, the content's) that it shows no reader -- all but its title and
    its title candidates (``candidates``: its sections' ``title_candidate``, each shown to some readers of its section:
    :func:`reader_title`; by default its content title alone): the content's when the uploader typed another, or when
    no section bears it. Screened for their own record, they flag no chunk (``pipeline.screen.screen_document``) and a
    decision on a chunk decides none of them (``kb.screening``)."""
    content = document.content_title if document.title_section is not None else ""
    shown = {c for c in ([content] if candidates is None else candidates) if c} if content else set()
    return {t for t in titles if t != document.title and t[:500] not in shown}


def title_candidates(document: Document, sections: Iterable) -> list[tuple[object, str]]:
    """The title candidates of ``document`` (rows with ``id``, ``order`` and ``title_candidate``): each bearing
    section's id and its candidate, in document order; none when the document shows no content title."""
    if not document.content_title or document.title_section is None:
        return []
    return [(s.id, s.title_candidate) for s in sorted(sections, key=lambda s: s.order)
            if getattr(s, "title_candidate", "")]


def tags_give_way(document: Document) -> bool:
    """Whether ``document``'s own tags give way to those new content of it gives (a Markdown file's front matter)
    instead of being read and kept together with them: when their verdict is not clean -- flagged by the label rule,
    whether held, released or kept out by a reviewer (judged first when they have none: :func:`document_tags_screen`).
    Found in the fourteenth session: a replace keeps the document's tags, and a held list read together with the new
    content's clean front matter refused it -- the document could not be given new content; merged into a new list,
    held tags would have come back under that list's own verdict, a reviewer's keep-out lost."""
    name = tags_name(document.tags or ())
    if not name:
        return False
    document_tags_screen(document)
    entry = _entry(name, (document.metadata or {}).get(TITLE_SCREENING))
    return entry is None or entry.get("flagged") is not False


def tags_with_content(document: Document, content_tags: Iterable[str]) -> list[str]:
    """The tags ``document`` lists once new content gives ``content_tags`` (its front matter's), the content's first:
    joined to the document's own (read together, as they are listed: half an instruction typed and half in the front
    matter is one), or the content's alone when the document's give way (:func:`tags_give_way`: the held ones are
    dropped, never listed again). Without content tags, the document's own as they are (a held list stays held)."""
    given = [str(tag) for tag in content_tags or ()]
    if not given:
        return list(document.tags or ())
    if tags_give_way(document):
        return given
    return [*given, *(tag for tag in document.tags or () if tag not in given)]


def shown_tags(tags: list[str], record, mode: str) -> list[str]:
    """A document's tags as shown under the one rule: ``[TAGS_HELD]`` when their verdict holds them
    (:func:`title_held`: flagged in quarantine mode and not released, or kept out in any mode); as stored otherwise
    -- a list with no verdict (stored before tags had one, until the re-screen job judges it) too."""
    name = tags_name(tags)
    if name and _entry(name, record) is not None and title_held(name, record, mode):
        return [TAGS_HELD]
    return list(tags)


def shown_tags_of(document: Document, mode: str | None = None) -> list[str]:
    """:func:`shown_tags` of ``document``'s tags as its reader is shown them (:func:`reader_tags`; ``mode`` as for
    :func:`shown_title_of`)."""
    record = (document.metadata or {}).get(TITLE_SCREENING)
    tags = reader_tags(document)
    name = tags_name(tags)
    entry = _entry(name, record) if name else None
    if entry is None or entry.get("flagged") is False:
        return tags
    return shown_tags(tags, record, mode or screening_mode(tenant_id=document.tenant_id))


def document_title_screen(document: Document) -> None:
    """Give ``document`` (in memory) a verdict of its title, and of its source, when its record has none: a
    title typed at upload is listed from then on, before ingestion screens it with the document's text (and
    when ingestion fails); the source (a file name, path or URL) is listed beside it, never screened with the
    text (:func:`source_entries_kept` keeps its verdict across ingestion and the re-screen job). Each is screened
    alone here, standing for its document (each of its words is then off the document's topic: the strict
    side); ingestion makes the title's record again with the document's text (``pipeline.store``)."""
    from ingestion.screening import DETECTOR_VERSION, screen_chunks

    document_tags_screen(document)  # its tags, by the label rule (listed beside the title from now on)
    record = (document.metadata or {}).get(TITLE_SCREENING)
    wanted = [t for t in dict.fromkeys((document.title, document.source or ""))
              if not _title_clean(t, record) and _entry(t, record) is None]
    if not wanted:
        return
    verdicts = screen_chunks(wanted)
    new = title_record({t: v.as_dict() for t, v in zip(wanted, verdicts, strict=True)}, detector=DETECTOR_VERSION,
                       decided={})
    document.metadata = {**document.metadata, TITLE_SCREENING: {**new, "titles": {**_entries(record), **new["titles"]}}}


def source_flagging(document: Document, titles: Iterable[str]) -> tuple[str, dict] | None:
    """The document's source as it flags every chunk of its document, as a flagged title does (so that a
    reviewer's decision on a chunk is one on the source too: ``kb.screening.review_decide``): the text its
    verdict is kept under (the source, or its first 500 characters: :func:`shown_source`'s candidates) and
    that verdict, when it holds the source in quarantine mode (flagged, or unreadable: fail closed); None when
    the source is clean, has no verdict, or is one of the document's ``titles`` (the one typed, the content's
    own: that title's verdict, screened with the document, decides for both)."""
    record = (document.metadata or {}).get(TITLE_SCREENING)
    source = document.source or ""
    named = {n for title in titles if title for n in (title, title[:500])}
    for candidate in dict.fromkeys((source, source[:500])):
        entry = _entry(candidate, record) if candidate and candidate not in named else None
        if entry is not None and not _title_clean(candidate, record):
            return candidate, entry
    return None


def source_entries_kept(document: Document, record: dict) -> dict:
    """``record`` (the document's new :data:`~kb.models.TITLE_SCREENING` record) with the verdicts of its source
    and its tags kept from the record it replaces, where the new one has none (the source is screened at upload
    only: :func:`document_title_screen`; the tags when they change: :func:`document_tags_screen`)."""
    previous = _entries((document.metadata or {}).get(TITLE_SCREENING))
    source = document.source or ""
    keys = {titles_digest([source]), titles_digest([source[:500]])}
    if name := tags_name(document.tags or ()):
        keys.add(titles_digest([name]))  # the tags' verdict (document_tags_screen), and a reviewer's decision on it
    kept = {key: previous[key] for key in keys if key in previous and key not in record["titles"]}
    return {**record, "titles": {**record["titles"], **kept}}


# ----------------------------------------------------------------------------- the rule in SQL: filters and sorts


class _Shown(Func):
    """SQL of :func:`shown_title` (``source=False``) or :func:`shown_source` (``source=True``) of a row's text column
    and its metadata column, under a mode that holds (quarantine, or an unknown one) or not (``holds``: then only a
    kept-out one is held, :func:`title_held`): a filter or a sort then sees
    what the row shows, never the stored text of a held one. The digest is :func:`titles_digest`'s (SHA-256 of
    the UTF-8 text, 32 hex digits), computed by PostgreSQL; a malformed record is no verdict (held: fail closed)."""

    output_field = TextField()

    def __init__(self, text, metadata, *, source: bool, holds: bool = True):
        super().__init__(text, metadata)
        self.source, self.holds = source, holds

    def as_sql(self, compiler, connection, **extra):
        compiled = [compiler.compile(e) for e in self.get_source_expressions()]
        if any(params for _, params in compiled):
            raise ValueError("the shown title's SQL takes columns only")  # each column is repeated below
        (text, _), (metadata, _) = compiled
        text = f"COALESCE({text}, '')"
        record = f"({metadata} -> '{TITLE_SCREENING}')"
        held = _source_held_sql(text, record, self.holds) if self.source else _title_held_sql(text, record, self.holds)
        return f"(CASE WHEN {held} THEN %s ELSE {text} END)", [TITLE_HELD]


def _entry_sql(text: str, record: str) -> str:
    return f"({record} -> 'titles' -> left(encode(sha256(convert_to({text}, 'UTF8')), 'hex'), 32))"


# Python's whitespace (what ``str.strip`` removes; none above U+3000), as a PostgreSQL regular expression.
_BLANK_SQL = "E'^[" + "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x3001)) if c.isspace()) + "]*$'"


def _clean_sql(text: str, record: str) -> str:
    """:func:`_title_clean`: blank (Python's whitespace), "untitled", or screened and not flagged."""
    flagged_false = f"COALESCE({_entry_sql(text, record)} -> 'flagged' = 'false'::jsonb, false)"
    return f"({text} ~ {_BLANK_SQL} OR {text} = '{UNTITLED}' OR {flagged_false})"


def _title_held_sql(text: str, record: str, holds: bool = True) -> str:
    """:func:`title_held`: in a mode that holds, not clean, and no verdict or not released; in any other, not clean
    and kept out by a reviewer (held in every mode)."""
    if not holds:
        kept_out = f"COALESCE({_entry_sql(text, record)} -> 'review' = '\"{ChunkReview.KEPT_OUT.value}\"'::jsonb, false)"
        return f"(NOT {_clean_sql(text, record)} AND {kept_out})"
    released = f"COALESCE({_entry_sql(text, record)} -> 'review' = '\"{ChunkReview.RELEASED.value}\"'::jsonb, false)"
    return f"(NOT {_clean_sql(text, record)} AND NOT {released})"


def _source_held_sql(text: str, record: str, holds: bool = True) -> str:
    """:func:`shown_source`'s test: the source, or its first 500 characters, has a verdict that holds it."""
    def held(candidate: str) -> str:
        verdict = f"COALESCE(jsonb_typeof({_entry_sql(candidate, record)}) = 'object', false)"
        return f"({candidate} <> '' AND {verdict} AND {_title_held_sql(candidate, record, holds)})"

    return f"({held(text)} OR {held(f'left({text}, 500)')})"


def _holds(mode: str) -> bool:
    return mode not in (ScreeningMode.OFF, ScreeningMode.FLAG)


def shown_title_sql(mode: str, prefix: str = "", *, reader=None):
    """The title (``prefix`` + ``title``, a document's or a section's) as :func:`shown_title_of` shows it under
    ``mode``, as a query expression: what a filter, a search or a sort of titles must use (a held title matches
    and sorts as :data:`TITLE_HELD`, never as its stored words: docs/security.md, "Planted instructions").

    A document's title as ``reader`` is shown it (:func:`reader_title`): its content title where they may read the
    section bearing it, else the stored one -- a filter or a sort by a content title they may not read sees
    "untitled" (docs/security.md, "A title taken from a heading"). Without a reader: the stored title."""
    stored = _Shown(F(f"{prefix}title"), F(f"{prefix}metadata"), source=False, holds=_holds(mode))  # kept out: any mode
    if reader is None:
        return stored
    from django.db.models import OuterRef, Subquery
    from django.db.models.functions import Coalesce

    # One scalar subquery of one row: the first candidate they may read, as shown under the document's record.
    content = _Shown(F("title_candidate"), OuterRef(f"{prefix}metadata"), source=False, holds=_holds(mode))
    first = Subquery(_first_candidate(reader, prefix).values(shown=content)[:1], output_field=TextField())
    return Case(When(Q(**{f"{prefix}content_title": ""}), then=stored), default=Coalesce(first, stored),
                output_field=TextField())


def shown_source_sql(mode: str, prefix: str = ""):
    """A document's source (``prefix`` + ``source``) as :func:`shown_source_of` shows it under ``mode``, as a
    query expression (as :func:`shown_title_sql`)."""
    return _Shown(F(f"{prefix}source"), F(f"{prefix}metadata"), source=True, holds=_holds(mode))


# Python's whitespace (what ``str.strip`` removes), as a PostgreSQL string of characters (``btrim``'s second argument).
_SPACES_SQL = "E'" + "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x3001)) if c.isspace()) + "'"


class _ShownTags(Func):
    """SQL of :func:`shown_tags_of` of a row's ``tags`` and ``metadata`` columns under a mode that holds or not
    (``holds``, as :class:`_Shown`): ``ARRAY['(tags held for review)']`` when the tags' verdict holds them, else the
    tags as stored. The verdict's key is :func:`tags_name`'s digest, computed by PostgreSQL from the tags as
    :func:`tags_as_stored` reads them (stripped of Python's whitespace, each once, in code point order -- the ``C``
    collation's byte order of UTF-8 -- after a NUL, NUL between them: bytes, as text holds no NUL)."""

    output_field = ArrayField(CharField(max_length=100))

    def __init__(self, tags, metadata, *, holds: bool = True):
        super().__init__(tags, metadata)
        self.holds = holds

    def as_sql(self, compiler, connection, **extra):
        compiled = [compiler.compile(e) for e in self.get_source_expressions()]
        if any(params for _, params in compiled):
            raise ValueError("the shown tags' SQL takes columns only")  # each column is repeated below
        (tags, _), (metadata, _) = compiled
        record = f"({metadata} -> '{TITLE_SCREENING}')"
        name = _TAGS_NAME.encode().hex()
        stored = (f"(SELECT string_agg(convert_to(t, 'UTF8'), '\\x00'::bytea ORDER BY t) FROM (SELECT DISTINCT "
                  f"btrim(u, {_SPACES_SQL}) COLLATE \"C\" AS t FROM unnest({tags}) AS u) AS s WHERE t <> '')")
        entry = (f"({record} -> 'titles' -> left(encode(sha256('\\x{name}'::bytea || {stored}), 'hex'), 32))")
        review = ChunkReview.RELEASED if self.holds else ChunkReview.KEPT_OUT
        decided = f"COALESCE({entry} -> 'review' = '\"{review.value}\"'::jsonb, false)"
        held = (f"(COALESCE(jsonb_typeof({entry}) = 'object', false) "
                f"AND NOT COALESCE({entry} -> 'flagged' = 'false'::jsonb, false) "
                f"AND {'NOT ' if self.holds else ''}{decided})")
        return f"(CASE WHEN {held} THEN ARRAY[%s]::varchar(100)[] ELSE {tags} END)", [TAGS_HELD]


class _Joined(Func):
    """Two array columns joined (``a || b``)."""

    template = "(%(expressions)s)"
    arg_joiner = " || "
    output_field = ArrayField(CharField(max_length=100))


def shown_tags_sql(mode: str, prefix: str = "", *, reader=None):
    """A document's tags (``prefix`` + ``tags``) as :func:`shown_tags_of` shows them under ``mode``, as a query
    expression: what a tag filter must use (a held list matches as ``["(tags held for review)"]``, never by its stored
    words: docs/security.md, "Planted instructions"). With ``reader``: as they are shown that reader
    (:func:`reader_tags`: the content's too where they may read the root); without: the typed ones alone."""
    typed = _ShownTags(F(f"{prefix}tags"), F(f"{prefix}metadata"), holds=_holds(mode))
    if reader is None:
        return typed
    joined = _ShownTags(_Joined(F(f"{prefix}tags"), F(f"{prefix}content_tags")), F(f"{prefix}metadata"),
                        holds=_holds(mode))
    read = reader_annotations(reader, prefix)[ROOT_READ]
    return Case(When(Q(read) & ~Q(**{f"{prefix}content_tags": []}), then=joined), default=typed,
                output_field=ArrayField(CharField(max_length=100)))
