"""Ingestion, stage 4: screening every planned chunk once (``ingestion.screening``, docs/screening.md)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from copy import copy
from dataclasses import dataclass

from accounts.policy import policy_implies
from ingestion.screening import DETECTOR_VERSION, Seam, screen_chunks, screen_seams, seam_window
from kb.expansion import span_less
from kb.models import HEAD_SCREENING, TITLE_SCREENING, ChunkReview, Document, Section
from kb.screening import TITLES_KEY, head_screened, section_heads
from kb.services import document_tags_give_way, document_tags_listed, document_title_follow, text_digest
from kb.titles import (
    UNTITLED,
    TitleDecisions,
    source_entries_kept,
    source_flagging,
    tags_flagging,
    title_candidates,
    title_record,
    titles_digest,
    titles_unshown,
)
from pipeline.plan import Plan

# What a stored verdict was made by (``Chunk.screening_detector``): the detector, and what it was given --
# the embed text, every heading and the document's titles -- and, since "titles2", that the titles' and
# headings' own verdicts are stored beside it (``kb.models.TITLE_SCREENING``, on the document and its
# sections: a held one is shown nowhere); since "titles3", that a held source flags them as a title does
# (``kb.titles.source_flagging``); since "readers", that a chunk is compared with the document's text as its
# readers may read it (:func:`readable_document_texts`); since "readers2", that a flagged title's score on a chunk
# is made over that text too (:func:`screen_document`); since "tags", that the document's tags have a verdict
# (``kb.titles.document_tags_screen``, in every mode) and held ones flag every chunk as a held source does
# (``kb.titles.tags_flagging``). Verdicts stored before (the detector on the body alone; no titles' records; no
# source's flag; a chunk compared with the whole text, restricted sections included; tags never judged -- stored
# with screening off, or before the tag rule) are stale, and the re-screen job screens them again
# (``pipeline.rescreen``). Since "heads", each section's head has a verdict too (:func:`head_records`, the
# re-screen job writing those of documents stored before: their heads are cut until it has).
# Since "heads2", a heading's line too when it holds words its title does not (``kb.screening.head_screened``).
# Since "seams" (sixteenth session), the seam between consecutive chunks that a model may read joined, each way its
# readers may read the other chunk (:func:`seams_follow`): an instruction the chunker cut in two flags both halves.
# Since "seams2" (seventeenth session), the seams across chunks that may be held too (:class:`SeamWalks`): a held
# chunk is cut from what a model reads, and the chunks on either side of it reach it joined.
# Since "borne" (seventeenth session), a title and tags from the content flag only the chunks every reader of which may
# read the section bearing them (their readers alone are shown them: ``kb.titles.reader_title``).
# Since "candidates" (seventeenth session), every title candidate (a front matter's, each H1) is screened and flags the
# chunks every reader of which may read the section bearing it: a member is shown the first they may read.
SCREENED_BY = f"{DETECTOR_VERSION}+titles3+readers2+tags+heads2+seams2+borne+candidates"


def screen_plans(plans: list[Plan]) -> None:
    """Screen every planned chunk once, with the whole document as context (``ingestion.screening``), and each
    section's head (:func:`head_records`); the verdicts are stored with the chunks and sections by
    :func:`pipeline.store.store_plan` and never computed per query."""
    for plan in plans:  # a document without chunks too: its titles and headings are shown all the same
        chains = {s.key: tuple(s.heading_path) for s in plan.parsed.sections}  # as planned: readable by all
        ids = {row.key: row.id for row in plan.section_rows}
        policies = {row.key: (row.access_level, tuple(row.access_groups or ())) for row in plan.section_rows}
        texts = readable_document_texts(plan.parsed.text, plan.section_rows)
        shown = copy(plan.document)  # the titles it will show once stored (pipeline.store), and to whom
        document_title_follow(shown, plan.section_rows, content_title=plan.parsed.title or "",
                              title_key=plan.parsed.title_key, candidates=plan.parsed.title_candidates)
        candidates = title_candidates(shown, plan.section_rows)
        titles = planned_titles(plan)
        # A title or tags from the content are shown to the readers of the section bearing them (kb.titles.reader_title,
        # reader_tags): they flag the chunks every reader of which may read that section (as a heading flags the chunks
        # below it that every reader of may read it), no other (their readers are not all shown them).
        chunk_policies = [policies.get(c.section_key) for c in plan.chunks]
        by_id = {row.id: policies[row.key] for row in plan.section_rows}
        root = next((policies[row.key] for row in plan.section_rows if row.parent_id is None), None)
        typed_tags, content_tags = listed_tags(plan)
        root_tags = tags_flagging(plan.document, [*typed_tags, *content_tags]) if content_tags else None
        borne = candidates_borne(candidates, chunk_policies, by_id)
        if root_tags is not None:
            borne[root_tags[0]] = reaching(chunk_policies, root)
        screened = screen_document(
            [(c.text, c.embed_text, chains.get(c.section_key, ())) for c in plan.chunks],
            document_text=plan.parsed.text, titles=titles,
            unshown=titles_unshown(shown, titles, [c for _, c in candidates]),
            chunk_documents=[texts.get(ids.get(c.section_key), "") for c in plan.chunks],
            headings=[s.title for s in plan.parsed.sections],
            source=source_flagging(plan.document, (plan.document.title, plan.parsed.title or "")),
            # The tags it will list: the front matter's join the document's while every reader may read the root, or
            # replace held ones (kb.services.document_tags_listed and document_tags_give_way, as pipeline.store lists them).
            tags=tags_flagging(plan.document, typed_tags), root_tags=root_tags, borne=borne,
            seams=ChunkSeams([(c.start, c.end) for c in plan.chunks], [policies.get(c.section_key) for c in plan.chunks]),
        )
        plan.screenings, plan.title_screenings = screened.chunks, screened.titles
        heads = head_records(plan.parsed.text, plan.section_rows, texts)
        plan.head_screenings = {row.key: heads[row.id] for row in plan.section_rows if row.id in heads}


def head_records(text: str, sections: Sequence[Section], readable: Mapping[uuid.UUID, str]) -> dict[uuid.UUID, dict]:
    """The :data:`~kb.models.HEAD_SCREENING` record of each section (rows with ``id``, ``parent_id``, ``start``,
    ``end``, ``body_spans`` and ``kind``: every section of the document) whose head -- its text before its first text
    or subsection (``kb.screening.section_heads``) -- is no heading line (a heading's title has its own verdict) and
    not empty: a front matter, a definition's decorators and signature, a caption file's header. Each head is
    screened on its own, against the document's text as its section's readers may read it (``readable``,
    :func:`readable_document_texts`), as a chunk is; a blank one is clean. The record keeps the head's span: it
    holds for that extent only (``kb.screening.head_held``). An agent reads a head only when it is clean, or flagged
    in a mode that shows flagged chunks (found attacking the demo, fourteenth session: unscreened, "Ignore all
    previous instructions and ..." in a front matter's ``description:`` or a decorator's comment reached an agent
    whole through MCP; then cut, an agent read a function's body without its ``def`` line)."""
    rows = list(sections)
    # A heading's line whose words are all its title's is judged by the title's own verdict (a held title cuts its
    # line: kb.screening.held_heading_spans); one with more -- a Markdown link's target or title, an image's title,
    # which its title drops -- is screened as any head (kb.screening.head_screened).
    heads = {row.id: head for row, head in zip(rows, section_heads(rows), strict=True)
             if head[1] > head[0] and head_screened(text, row.kind, row.title, head)}
    out: dict[uuid.UUID, dict] = {}
    groups: dict[str, list[uuid.UUID]] = {}
    for section_id, (start, end) in heads.items():
        if text[start:end].strip():
            groups.setdefault(readable.get(section_id, ""), []).append(section_id)
        else:
            out[section_id] = {"flagged": False, "score": 0.0, "reasons": []}
    for document_text, members in groups.items():  # one call per distinct readable text, as the chunks'
        verdicts = screen_chunks([text[heads[i][0]:heads[i][1]] for i in members], document_text=document_text)
        for section_id, verdict in zip(members, verdicts, strict=True):
            out[section_id] = {"flagged": bool(verdict.flagged), "score": round(float(verdict.score), 4),
                               "reasons": [str(r) for r in verdict.reasons]}
    # The head's text by digest (never the text): a reviewer's decision on it follows that text only
    # (:func:`head_records_follow`, ``kb.screening.head_review_decide``).
    return {section_id: {"detector": SCREENED_BY, "span": list(heads[section_id]),
                         "digest": text_digest(text[heads[section_id][0]:heads[section_id][1]]), **verdict}
            for section_id, verdict in out.items()}


# A head's review (``kb.screening.head_review_decide``): in its record, beside its verdict.
HEAD_REVIEWS = (str(ChunkReview.RELEASED), str(ChunkReview.KEPT_OUT))


def head_decisions(rows: Iterable[Section]) -> list[tuple[str, str, tuple]]:
    """The reviewers' decisions on the flagged heads of section rows as stored (before a re-screen or a re-ingestion
    makes their records again), as (head text digest, review, (level, group ids) of the row it was made on)."""
    decided = []
    for row in rows:
        record = (row.metadata or {}).get(HEAD_SCREENING)
        if (isinstance(record, dict) and record.get("flagged") is True and record.get("review") in HEAD_REVIEWS
                and isinstance(record.get("digest"), str)):
            decided.append((record["digest"], record["review"], (row.access_level, tuple(row.access_groups or ()))))
    return decided


def head_records_follow(sections: Iterable[tuple[Section, dict | None]], decided: Sequence[tuple] = ()) -> None:
    """Give each section row in memory its head's record (:func:`head_records`), or none (a heading, an empty head:
    nothing to cut). The caller saves the rows.

    A reviewer's decision (``decided``: :func:`head_decisions` of the rows as stored) stays with a flagged head of the
    same text, as a chunk's follows its text (``pipeline.store.carried_review``): a keep-out to any, a release only to
    a head whose every reader may read the released one's section (so could its reviewer); a head whose text changed
    waits for a new decision."""
    for row, record in sections:
        metadata = {k: v for k, v in (row.metadata or {}).items() if k != HEAD_SCREENING}
        if record is not None and record.get("flagged") is True:
            review = head_review_carried(decided, record.get("digest"), (row.access_level, row.access_groups or ()))
            record = {**record, "review": review} if review else record
        row.metadata = {**metadata, HEAD_SCREENING: record} if record is not None else metadata


def head_review_carried(decided: Sequence[tuple], digest, policy: tuple) -> str:
    """The review a flagged head of text ``digest`` in a section of ``policy`` takes from ``decided``, or ``""``."""
    same = [(review, source) for key, review, source in decided if isinstance(digest, str) and key == digest]
    if any(review == ChunkReview.KEPT_OUT for review, _ in same):
        return str(ChunkReview.KEPT_OUT)
    if any(review == ChunkReview.RELEASED and policy_implies(source[0], source[1], policy[0], policy[1])
           for review, source in same):
        return str(ChunkReview.RELEASED)
    return ""


def listed_tags(plan: Plan) -> tuple[list[str], list[str]]:
    """The tags ``plan``'s document lists once stored (``pipeline.store``), worked out on a copy: to every reader (the
    typed ones), and to readers of its root besides (the content's)."""
    listed = copy(plan.document)
    content_tags = [str(t) for t in plan.parsed.tags or ()]
    document_tags_give_way(listed, content_tags, reuse=bool(plan.reuse_sections))
    typed, content, _ = document_tags_listed(listed, content_tags=content_tags)
    return typed, content


def planned_titles(plan: Plan) -> tuple[str, ...]:
    """The titles a planned document may be shown under, each screened on its own: the one typed (or "untitled"), the
    content's, and every title candidate of its sections (``ParsedDocument.title_candidates``: a member is shown the
    first of a section they may read, ``kb.titles.reader_title``) -- the candidates as stored (500 characters)."""
    found = [str(title)[:500] for _, title in plan.parsed.title_candidates or () if str(title).strip()]
    return content_titles(plan.document.title, plan.parsed.title or "", found)


def content_titles(title: str, content: str, candidates: Sequence[str]) -> tuple[str, ...]:
    """A document's titles to screen: ``title`` (the stored one), ``content`` (the content's) and ``candidates`` (its
    title candidates, as stored: 500 characters), each once -- the content's as stored when it is a candidate (its
    verdict is kept under those 500 characters; the whole of a longer one would be a title no section bears)."""
    if content[:500] in candidates:
        content = content[:500]
    return tuple(dict.fromkeys((title, content, *candidates)))


def candidates_borne(candidates: Sequence[tuple], chunk_policies: Sequence, policies: Mapping) -> dict[str, list[bool]]:
    """Per title candidate (``kb.titles.title_candidates``: bearing section id, title), per chunk, whether every reader
    of the chunk may read a section bearing it (``policies``: by section id) -- the chunks it flags (a member is shown
    a candidate only where they may read its section; fail closed: whether they are shown an earlier one instead does
    not narrow it). Two sections bearing the same title: either."""
    borne: dict[str, list[bool]] = {}
    for section_id, title in candidates:
        flags = reaching(chunk_policies, policies.get(section_id))
        borne[title] = [a or b for a, b in zip(borne.get(title, [False] * len(flags)), flags, strict=True)]
    return borne


def reaching(chunk_policies: Sequence, bearer: tuple | None) -> list[bool]:
    """For each chunk (its policy, or None), whether every reader of it may read a section of policy ``bearer``
    (None: no section bears it -- no chunk)."""
    return [bearer is not None and policy is not None and policy_implies(policy[0], policy[1], bearer[0], bearer[1])
            for policy in chunk_policies]


# The most distinct policies of one document screened each against its readers' text; past it (a document whose
# sections carry many different group sets) each section's chunks are screened against that section's own text,
# which all its readers may read: the work and memory stay a few times the document's, never policies x text.
MAX_READER_TEXTS = 16


def readable_document_texts(text: str, sections: Sequence[Section]) -> dict[uuid.UUID, str]:
    """For each section (rows with their effective policy, ``start``/``end`` and ``parent_id``), the document's
    text as every reader of the section may read it: the text of each section whose policy its policy implies
    (its heading and own body, not its descendants'), in document order -- the whole text when that is all of
    them. The detector compares a unit's words with the rest of the document (its topic-distance feature), and
    a chunk's verdict, score included, is shown to its readers: taken over the whole text, it moved with the
    words of sections they may not read (found attacking the demo). Text of no section is left out."""
    by_id = {s.id: s for s in sections}
    children: dict[uuid.UUID, list[Section]] = {}
    for section in sections:
        if section.parent_id in by_id:
            children.setdefault(section.parent_id, []).append(section)

    def own(section: Section) -> list[tuple[int, int]]:  # [start, end) less the children's extents
        spans, pos = [], section.start
        for child in sorted(children.get(section.id, ()), key=lambda c: c.start):
            if child.start > pos:
                spans.append((pos, child.start))
            pos = max(pos, child.end)
        if section.end > pos:
            spans.append((pos, section.end))
        return spans

    keys = {(s.access_level, tuple(sorted(s.access_groups))) for s in sections}
    if len(keys) > MAX_READER_TEXTS:  # each text is screened against once: a bounded number of them
        return {s.id: "\n".join(text[a:b] for a, b in own(s)) for s in sections}
    found: dict[tuple, str] = {}
    out: dict[uuid.UUID, str] = {}
    for section in sections:
        key = (section.access_level, tuple(sorted(section.access_groups)))
        if key not in found:
            kept = [s for s in sections if policy_implies(key[0], key[1], s.access_level, s.access_groups)]
            if len(kept) == len(sections):
                found[key] = text
            else:
                found[key] = "\n".join(text[a:b] for a, b in sorted(span for s in kept for span in own(s)))
        out[section.id] = found[key]
    return out


@dataclass(frozen=True)
class DocumentScreening:
    """:func:`screen_document`'s verdicts: one per chunk, and one per title and heading screened on its own
    (its text -> ``Screening.as_dict()``), which the document's and its sections' records are made of
    (``kb.screening.title_record``)."""

    chunks: list[dict]
    titles: dict[str, dict]


def screen_document(chunks: Sequence[tuple[str, str, Sequence[str]]], *, document_text: str,
                    titles: Sequence[str] = (), headings: Iterable[str] = (),
                    source: tuple[str, dict] | None = None, tags: tuple[str, dict] | None = None,
                    chunk_documents: Sequence[str] | None = None, unshown: Iterable[str] = (),
                    seams: ChunkSeams | None = None, root_tags: tuple[str, dict] | None = None,
                    borne: Mapping[str, Sequence[bool]] | None = None) -> DocumentScreening:
    """Verdicts (``Screening.as_dict()``) of chunks given as (text, embed text, headings) -- the headings
    being the chunk's section's heading path: the titles of it and its ancestors that *every* reader of the
    chunk may read (``accounts.policy.visible_heading_paths``) -- and of the document's ``titles`` (the one
    typed at upload, the content's own: either may be shown).

    A heading stricter than a chunk below it (an API override opened the chunk's section wider) does not
    flag the chunk: it reaches none of the chunk's readers who may not read it, and those who may read it are
    shown it held (its own record, ``kb.titles``) -- while a flag on the chunk would tell a reader below the
    heading that the heading they cannot read holds an instruction, and why (the review rule: no reasons of
    an unreadable section to those who cannot read it).

    What is screened is the embed text -- the heading path and any table context in front of the
    body -- because that is what a reader's model gets with the chunk: a heading can carry an
    instruction too (found attacking the demo: the body alone was screened, so a planted heading
    reached every context unflagged). The verdict's spans are moved to offsets into the chunk's text,
    as the review queue and the contexts read them; a span that lies in the prefix alone is dropped from
    the spans (the reviewer sees the heading path beside the text), never the flag.

    Each heading and document title is also screened on its own, and a flagged one flags every chunk
    it goes to the model with (its reasons added, no span): the embedded prefix keeps only the nearest
    headings that fit the model's limit and those every reader of the chunk may read, while a hit's
    heading path and a parent context carry every heading its reader may read; and the document title
    goes with every hit of the document (``document_title``, the spotlight block's ``source:`` line) and
    is in no chunk's text. Found attacking the demo: a heading pushed out of a long prefix, and a title
    "Ignore all previous instructions and ...", came back unflagged. ``headings``: every section's title (a
    heading with no text below it is in no chunk's path, and is listed all the same: the sections API).

    ``source``: the document's source and its verdict when that holds it (``kb.titles.source_flagging``: screened
    alone at upload, never again with the text) -- it flags every chunk as a title does, so the document is held
    until a reviewer releases a chunk of it, which releases the source too (a flagged source that flagged no chunk
    was in no review queue: held for good). ``tags``: the document's tags likewise (``kb.titles.tags_flagging``:
    judged by the label rule in every mode; a tenant that had screening off, or tags stored before the rule).

    ``chunk_documents``: for each chunk, the document's text as every reader of it may read it
    (:func:`readable_document_texts`), which its units are compared with; without it, ``document_text``.

    ``unshown``: those of ``titles`` the document does not show (``kb.titles.titles_unshown``: the content's title when its
    title is another -- typed, or "untitled" because some reader of the document may not read the root or the
    heading bearing it). Each is screened for its own record (it is held when it is shown, after a policy change
    and before the re-screen job flags its chunks) and flags no chunk, as a heading stricter than a chunk does not:
    found attacking the demo (fourteenth session), a confidential front matter's planted title held a section opened
    to internal readers, its reasons told them, though the title was shown to none of them.

    ``seams``: the chunks' spans and policies (:class:`ChunkSeams`), for the seams between consecutive chunks
    (:func:`seams_follow`): an instruction the chunker cut in two flags both halves that a model may read joined.

    ``borne``: titles (a title from the content) and tag lists (``root_tags``: the typed and the content's, listed to
    readers of the root) shown only to the readers of the section bearing them (``kb.titles.reader_title``,
    ``reader_tags``), each with, per chunk, whether every reader of the chunk may read that section: a flagged one
    flags those chunks only (seventeenth session: the title decided per reader)."""
    borne = dict(borne or {})
    if chunk_documents is None:
        verdicts = screen_chunks([embed_text for _, embed_text, _ in chunks], document_text=document_text)
    else:  # one call per distinct text (a document of one policy: one call, as without it)
        verdicts = [None] * len(chunks)
        groups: dict[str, list[int]] = {}
        for i, readable in enumerate(chunk_documents):
            groups.setdefault(readable, []).append(i)
        for readable, members in groups.items():
            for i, verdict in zip(members, screen_chunks([chunks[i][1] for i in members], document_text=readable),
                                  strict=True):
                verdicts[i] = verdict
    out = []
    for (text, embed_text, _), verdict in zip(chunks, verdicts, strict=True):
        found = verdict.as_dict()
        shift = len(embed_text) - len(text) if embed_text.endswith(text) else None
        spans = []
        for start, end in found["spans"]:
            if shift is None:  # the body is not the embed text's tail: mark the whole body
                spans.append([0, len(text)])
                continue
            start, end = max(start - shift, 0), min(end - shift, len(text))
            if end > start:
                spans.append([start, end])
        found["spans"] = [list(s) for s in sorted({tuple(s) for s in spans})]
        out.append(found)
    shown = [t for t in dict.fromkeys(titles) if t and t.strip() and t != UNTITLED]
    headings = {h for h in headings if h and h.strip()} | {h for _, _, chain in chunks for h in chain if h and h.strip()}
    named = [*shown, *sorted(headings - set(shown))]
    screened = dict(zip(named, screen_chunks(named, document_text=document_text) if named else (), strict=True))
    flagged = {name: (round(v.score, 4), list(v.reasons)) for name, v in screened.items() if v.flagged}
    verdicts = {name: verdict.as_dict() for name, verdict in screened.items()}
    everywhere = [t for t in shown if t not in set(unshown) and t not in borne]
    for given, default in ((source, "source"), (tags, "tags"), (root_tags, "tags")):
        if given is not None and given[0] not in screened:
            name, entry = given
            reasons = entry.get("reasons")
            flagged[name] = (0.0, [str(r) for r in reasons] if isinstance(reasons, list) and reasons else [default])
            if name not in borne:
                everywhere.append(name)

    def reaching(i: int) -> list[str]:
        return [name for name, flags in borne.items() if name not in set(unshown) and i < len(flags) and flags[i]]
    if not flagged:
        if seams is not None:  # last, as below: a chunk a title flags may be held too (seams_follow)
            seams_follow(out, seams, document_text=document_text, chunk_documents=chunk_documents)
        return DocumentScreening(out, verdicts)
    # Which titles flag a chunk is decided over the whole text, as their own records are (shown as held); the
    # score a flagged one gives a chunk, shown to its readers, is made over what they may read, as the chunk's
    # own (found attacking the per-reader texts: a flagged title's score over the whole text became the chunk's,
    # and moved with the words of a restricted section).
    scores: dict[tuple[str, str], float] = {}
    if chunk_documents is not None:
        wanted: dict[str, set[str]] = {}
        for i, ((_, _, chain), readable) in enumerate(zip(chunks, chunk_documents, strict=True)):
            wanted.setdefault(readable, set()).update(
                n for n in (*everywhere, *chain, *reaching(i)) if n in flagged and n in screened)
        for readable, names in wanted.items():
            ordered = sorted(names)
            for name, verdict in zip(ordered, screen_chunks(ordered, document_text=readable), strict=True):
                scores[(readable, name)] = round(verdict.score, 4)
    for i, ((_, _, chain), found) in enumerate(zip(chunks, out, strict=True)):
        names = sorted({name for name in (*everywhere, *chain, *reaching(i)) if name in flagged})
        for name in names:
            score, reasons = flagged[name]
            if chunk_documents is not None:
                score = scores.get((chunk_documents[i], name), 0.0)
            found["flagged"] = True
            found["score"] = max(found["score"], score)
            found["reasons"] = list(dict.fromkeys([*found["reasons"], *reasons]))
        if names:
            # Which titles flag it, as a digest (no text in the verdict): a reviewer's decision follows
            # the chunk's text only under the same ones (pipeline.store, kb.screening.review_decide).
            found[TITLES_KEY] = titles_digest(names)
    if seams is not None:  # after every other flag: the walks pass each chunk that may be held (seams_follow)
        seams_follow(out, seams, document_text=document_text, chunk_documents=chunk_documents)
    return DocumentScreening(out, verdicts)


@dataclass(frozen=True)
class ChunkSeams:
    """What the seams between a document's chunks are found from: each chunk's span in the document's text
    (``start``, ``end``) and its effective policy (access level, group ids), in the order of the chunks given to
    :func:`screen_document`; a policy None (its section unknown) joins the chunk to no other. ``kept_out``: for each
    chunk, whether a reviewer kept it out (held in every mode, whatever its verdict; the re-screen job's chunks) --
    empty: none."""

    spans: Sequence[tuple[int, int]]
    policies: Sequence[tuple[int, Sequence] | None]
    kept_out: Sequence[bool] = ()


# The verdict's key naming the seams that flag a chunk ("previous", "next"): stored for reviewers and the job's
# counts, shown nowhere (``kb.screening`` shows a verdict's fixed fields).
SEAMS_KEY = "seams"

# How many chunks that may be held -- flagged, each one every reader of the walking chunk may read -- a seam's walk
# passes (:class:`SeamWalks`) before it stops; a walk stopped by the bound leaves a seam unscreened, so its chunk is
# flagged itself (fail closed), with the reason :data:`UNSCREENED_SEAM`.
MAX_SEAM_WALK = 16
UNSCREENED_SEAM = "unscreened"
# How many rounds of seams :func:`seams_follow` screens (each round, the seams the flags of the one before opened:
# one call per readers' text); the seams a round past it would screen flag their chunks unscreened (fail closed).
MAX_SEAM_ROUNDS = 32


class SeamWalks:
    """The seams between a document's chunks that a model may read joined (:class:`ChunkSeams`), found by walks that
    go on as more chunks are flagged (:meth:`advance`), in the chunks' reading order (start, then the longer first:
    the chunker's ordinals). ``pairs``: (first chunk, second chunk) -> [flags the first, flags the second];
    ``bounded``: chunk -> the sides ("next", "previous") whose walk the bound stopped (:data:`MAX_SEAM_WALK`).

    A seam's verdict may flag a chunk only when every reader of that chunk may read the other one's text: its
    verdict, score and reasons included, is shown to its readers, and made over text above them it would be an oracle
    of that text (docs/security.md, "A chunk's verdict as an oracle of text above its readers"). So each chunk walks
    forward (flagging itself as the first of a pair) and backward (as the second) over the chunks whose policy its
    policy implies (``accounts.policy.policy_implies``: those *every* reader of it may read) and is joined with each:

    * a chunk not all its readers may read is passed without a join (a reader who may not read it reads the chunks
      on either side joined, as expansion drops what they may not read; one who may is judged by that chunk's own
      walk, from its side);
    * a chunk that may be held -- flagged (its own verdict, a title's, a seam's), or kept out by a reviewer -- is
      joined and passed: in quarantine mode it is cut out of every context and of ``read_section``
      (``kb.expansion.cut_pieces``) and the pieces on either side reach a model joined (found attacking the seams,
      seventeenth session: an obvious instruction, held, planted between the halves of a quieter one);
    * the first chunk that is neither ends the walk: every reader of the walking chunk reads it next.

    A walk passes at most :data:`MAX_SEAM_WALK` chunks that may be held; the next one that may be held stops it and
    its chunk is flagged (fail closed: the seam past it is never screened). Every count and stop reads only chunks
    all the walking chunk's readers may read, and their flags (made, in turn, of text those readers may read): a
    verdict never moves with what lies between that they may not read. A walk stopped at a chunk later flagged (a
    seam's verdict flags it: :func:`seams_follow`) goes on from it. Past :data:`MAX_READER_TEXTS` distinct policies
    (as the readers' texts are bounded) a chunk not all its readers may read ends a walk instead: each walk is at
    most :data:`MAX_SEAM_WALK` + 1 steps; below it, a walk stops at its own policy's next chunk not held at the
    latest, so the walks cost at most the chunks times 2 x the distinct policies x (:data:`MAX_SEAM_WALK` + 1)."""

    def __init__(self, seams: ChunkSeams):
        self.seams = seams
        self.order = sorted(range(len(seams.spans)), key=lambda i: (seams.spans[i][0], -seams.spans[i][1], i))
        self.position = {chunk: at for at, chunk in enumerate(self.order)}
        self.keys = [None if p is None else (p[0], tuple(sorted(p[1]))) for p in (seams.policies[i] for i in self.order)]
        distinct = sorted({k for k in self.keys if k is not None})
        self.implied = {(a, b): policy_implies(a[0], a[1], b[0], b[1]) for a in distinct for b in distinct}
        self.many = len(distinct) > MAX_READER_TEXTS
        self.pairs: dict[tuple[int, int], list[bool]] = {}
        self.bounded: dict[int, set[str]] = {}
        self._held: list[bool] = [False] * len(self.order)
        self._waiting: dict[int, list[tuple[int, int, int]]] = {}  # position -> walks (at, step, passed) stopped there
        self._started = False

    def _joins(self, at: int, other: int) -> bool:
        key, joined = self.keys[at], self.keys[other]
        return key is not None and joined is not None and self.implied[(key, joined)]

    def advance(self, flagged: Sequence[bool]) -> set[tuple[int, int]]:
        """Walk, or go on walking, with ``flagged`` (one per chunk; a chunk once flagged stays so): the first call
        starts every walk, a later one moves on those stopped at a chunk flagged since. Returns the pairs joined or
        given a side to flag by this call."""
        kept_out = self.seams.kept_out
        self._held = [bool(flagged[chunk]) or (bool(kept_out[chunk]) if kept_out else False) for chunk in self.order]
        touched: set[tuple[int, int]] = set()
        if not self._started:
            self._started = True
            for at, key in enumerate(self.keys):
                if key is not None:
                    for step in (1, -1):
                        self._walk(at, step, at + step, 0, touched)
        for position in [p for p in self._waiting if self._held[p]]:
            for at, step, passed in self._waiting.pop(position):
                self._pass(at, step, position, passed, touched)
        return touched

    def _pass(self, at: int, step: int, position: int, passed: int, touched: set) -> None:
        """Walk on past ``position`` (joined, and held), or stop at the bound."""
        if passed + 1 > MAX_SEAM_WALK:
            self.bounded.setdefault(self.order[at], set()).add("next" if step == 1 else "previous")
            return
        self._walk(at, step, position + step, passed + 1, touched)

    def _walk(self, at: int, step: int, other: int, passed: int, touched: set) -> None:
        while 0 <= other < len(self.order):
            if not self._joins(at, other):
                if self.many:
                    return
                other += step
                continue
            pair = (self.order[min(at, other)], self.order[max(at, other)])
            flags = self.pairs.setdefault(pair, [False, False])
            if not flags[0 if step == 1 else 1]:
                flags[0 if step == 1 else 1] = True
                touched.add(pair)
            if not self._held[other]:
                self._waiting.setdefault(other, []).append((at, step, passed))
                return
            self._pass(at, step, other, passed, touched)
            return

    def window(self, text: str, first: int, second: int) -> Seam | None:
        """The :class:`~ingestion.screening.Seam` of a pair as a model reads it with every chunk between them that
        may be held cut out: the first chunk's text up to the first such chunk overlapping it (a split section's
        repeated sentences), the second's from the last one's end; only chunks every reader of each side may read
        cut it (no verdict moves with an unreadable chunk's flag)."""
        a, b = self.position[first], self.position[second]
        between = [p for p in range(a + 1, b) if self._held[p]]
        spans = self.seams.spans
        tail = span_less(tuple(spans[first]), (spans[self.order[p]] for p in between if self._joins(a, p)))
        head = span_less(tuple(spans[second]), (spans[self.order[p]] for p in between if self._joins(b, p)))
        if not tail or not head:
            return None
        return seam_window(text, tail[-1], head[0])


def seam_pairs(seams: ChunkSeams, flagged: Sequence[bool] | None = None) -> dict[tuple[int, int], tuple[bool, bool]]:
    """The seams to screen (:class:`SeamWalks`), as (first chunk, second chunk) -> (flags the first, flags the second),
    with ``flagged`` chunks (default: none) passed as held; a seam both ways (the same policy, the common case) is
    one window."""
    walks = SeamWalks(seams)
    walks.advance(flagged if flagged is not None else [False] * len(seams.spans))
    return {pair: (flags[0], flags[1]) for pair, flags in walks.pairs.items()}


def seams_follow(verdicts: list[dict], seams: ChunkSeams, *, document_text: str,
                 chunk_documents: Sequence[str] | None) -> None:
    """Flag in ``verdicts`` (one per chunk, spans as offsets into each chunk's text) the chunks a seam's window
    flags (:class:`SeamWalks`, ``ingestion.screening.screen_seams``), with its reasons and its score when higher,
    and spans at the part of the crossing text inside each chunk. Each window is scored against the document's text
    as the flagged chunk's readers may read it (``chunk_documents``), as the chunk itself: one call per distinct
    text and round. A seam that flags nothing changes no verdict (its score is not the chunk's).

    To a fixpoint: a chunk a seam flags may be held, so the walks go on past it, and the new seams are screened in
    turn, until no verdict changes. Bounded, failing closed (:data:`UNSCREENED_SEAM`): a chunk whose walk the bound
    stopped is flagged (at once, before any screening: it may be held in turn); past :data:`MAX_SEAM_ROUNDS` rounds,
    the seams left to screen flag their chunks unscreened."""
    walks = SeamWalks(seams)
    flagged = [bool(v["flagged"]) for v in verdicts]
    done: set[tuple[tuple[int, int], int]] = set()  # (pair, chunk it may flag): screened
    bounded: set[tuple[int, str]] = set()
    rounds = 0
    while True:
        touched: set[tuple[int, int]] = set()
        while True:  # the walks, and the bound's flags (no screening needed): a chunk flagged may be held in turn
            touched |= walks.advance(flagged)
            fresh = {(target, side) for target, sides in walks.bounded.items() for side in sides} - bounded
            if not fresh:
                break
            for target, side in sorted(fresh):
                bounded.add((target, side))
                _unscreened(verdicts[target], side)
            flagged = [bool(v["flagged"]) for v in verdicts]
        wanted: dict[str, dict[tuple[int, int], list[int]]] = {}
        windows: dict[tuple[int, int], Seam] = {}
        for first, second in sorted(touched):
            window = walks.window(document_text, first, second)
            if window is None:
                continue
            windows[(first, second)] = window
            for target, flag in zip((first, second), walks.pairs[(first, second)], strict=True):
                if flag and ((first, second), target) not in done:
                    done.add(((first, second), target))
                    readable = chunk_documents[target] if chunk_documents is not None else document_text
                    wanted.setdefault(readable, {}).setdefault((first, second), []).append(target)
        rounds += 1
        for readable, pairs in wanted.items():
            ordered = sorted(pairs)
            if rounds > MAX_SEAM_ROUNDS:  # fail closed: flagged unscreened, each chunk the seam may flag
                for pair in ordered:
                    for target in pairs[pair]:
                        _unscreened(verdicts[target], "next" if target == pair[0] else "previous")
                continue
            for pair, verdict in zip(ordered, screen_seams([windows[p] for p in ordered], document_text=readable),
                                     strict=True):
                if verdict.flagged:
                    _seam_flags(verdicts, seams, windows[pair], pair, pairs[pair], verdict)
        now = [bool(v["flagged"]) for v in verdicts]
        if now == flagged:
            return
        flagged = now


def _unscreened(into: dict, side: str) -> None:
    """Flag a verdict for a seam on ``side`` that was not screened (:data:`UNSCREENED_SEAM`; fail closed)."""
    into["flagged"] = True
    into["reasons"] = list(dict.fromkeys([*into["reasons"], UNSCREENED_SEAM]))
    into[SEAMS_KEY] = sorted({*into.get(SEAMS_KEY, ()), side})


def _seam_flags(verdicts: list[dict], seams: ChunkSeams, window: Seam, pair: tuple[int, int], targets: list[int],
                verdict) -> None:
    """Flag each of ``targets`` (chunks of ``pair``) by the flagged ``verdict`` of the pair's ``window``."""
    for target in targets:
        side = "next" if target == pair[0] else "previous"
        part = window.first_part if target == pair[0] else window.second_part
        start, end = seams.spans[target]
        spans = []
        for a, b in verdict.spans:
            found = part(a, b)
            if found is not None and min(found[1], end) > max(found[0], start):
                spans.append([max(found[0], start) - start, min(found[1], end) - start])
        into = verdicts[target]
        into["flagged"] = True
        into["score"] = max(into["score"], round(verdict.score, 4))
        into["reasons"] = list(dict.fromkeys([*into["reasons"], *verdict.reasons]))
        into["spans"] = [list(s) for s in sorted({tuple(s) for s in [*into["spans"], *spans]})]
        into[SEAMS_KEY] = sorted({*into.get(SEAMS_KEY, ()), side})


def screening_fields(verdict: dict) -> dict:
    """A verdict as the chunk's columns (the re-screen job writes the same ones); ``screening_detector``
    says what made it (:data:`SCREENED_BY`), the verdict's own ``detector`` the detector's version."""
    return {"screening": verdict, "screening_flagged": bool(verdict["flagged"]),
            "screening_detector": SCREENED_BY if verdict["detector"] == DETECTOR_VERSION else str(verdict["detector"])}


def title_records_follow(document: Document, titles: Iterable[str], sections: Iterable[tuple[Section, str]],
                         verdicts: Mapping[str, dict], *, decided: TitleDecisions) -> None:
    """Give ``document`` and ``sections`` (rows in memory, each with the title it was screened under) the
    records of their titles' own verdicts (:class:`DocumentScreening`'s ``titles``; ``kb.models.TITLE_SCREENING``)
    -- the document's for each of its screened ``titles`` as stored (500 characters) -- keeping the reviewers'
    decisions ``decided`` (``kb.titles.title_decisions`` of the records before) that each row may keep
    (:meth:`~kb.titles.TitleDecisions.for_row`: a release only where every reader of the released row may read). Every record is written
    anew, whatever the rows held (a section's parsed metadata included), but for the verdict of the document's
    source (``kb.titles.source_entries_kept``). The caller saves the rows."""
    record = title_record({t[:500]: verdicts[t] for t in titles if t in verdicts}, detector=SCREENED_BY,
                          decided=decided.for_row(None))
    # The source's verdict (screened at upload only: kb.titles.document_title_screen) is kept.
    document.metadata = {**(document.metadata or {}), TITLE_SCREENING: source_entries_kept(document, record)}
    for row, screened in sections:
        record = title_record({row.title: verdicts[screened]} if screened in verdicts else {}, detector=SCREENED_BY,
                              decided=decided.for_row((row.access_level, row.access_groups)))
        row.metadata = {**(row.metadata or {}), TITLE_SCREENING: record}
