"""Template helpers of the console: highlighted query words, access badges."""

from __future__ import annotations

import html
import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()

WORD = re.compile(r"\w{2,}", re.UNICODE)
# The words full-text search leaves out of a query (PostgreSQL's "english" configuration, the Snowball
# list): marking them would point at "of" and "the" rather than at what matched.
STOP_WORDS = frozenset("""
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
    herself it its itself they them their theirs themselves what which who whom this that these those am is
    are was were be been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below to from up
    down in out on off over under again further then once here there when where why how all any both each few
    more most other some such no nor not only own same so than too very s t can will just don should now
""".split())


@register.filter
def highlight(text: str, query: str):
    """``text`` escaped, with the query's words (2+ letters, any case, not a stop word) in ``<mark>``.

    Matched on the raw text and escaped piece by piece, so a query word can never land
    inside an entity of the escaped text (``amp`` in ``&amp;``) or in markup.
    """
    text = text or ""
    words = sorted({w.lower() for w in WORD.findall(query or "")} - STOP_WORDS, key=len, reverse=True)
    if not words:
        return escape(text)
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)
    out, pos = [], 0
    for match in pattern.finditer(text):
        out.append(escape(text[pos : match.start()]))
        out.append(f"<mark>{escape(match.group(0))}</mark>")
        pos = match.end()
    out.append(escape(text[pos:]))
    return mark_safe("".join(out))


@register.simple_tag
def citation(item) -> str:
    """The console page a search hit or context cites: its document, its section chosen and scrolled to."""
    from kb.serializers import section_citation_url

    return section_citation_url(item.document_id, item.section_id)


@register.filter
def as_json(value) -> str:
    """A record's details as JSON text (escaped by the template like any text)."""
    import json

    from django.core.serializers.json import DjangoJSONEncoder

    return json.dumps(value, ensure_ascii=False, sort_keys=True, cls=DjangoJSONEncoder)


@register.simple_tag
def sentence(said) -> str:
    """An audit record's sentence (``audit.sentences.Sentence``, or one ``Name``): its text escaped,
    titles in ``<em>``, each name a link where it has a page. Only what the sentence holds is shown,
    and it holds a title only where the viewer may read it."""
    from audit.sentences import MEMBER, TITLE, Name

    out = []
    for part in (said,) if isinstance(said, Name) else said.parts:
        if isinstance(part, str):
            out.append(_e(part))
            continue
        css = {TITLE: "title", MEMBER: "who"}.get(part.kind, "neutral")
        tag = "em" if part.kind == TITLE else "span"
        text = f'<{tag} class="{css}">{_e(part.text)}</{tag}>'
        out.append(f'<a href="{_e(part.url)}">{text}</a>' if part.url else text)
    return mark_safe("".join(out))  # noqa: S308 -- every text and url escaped


@register.simple_tag
def policy(level_label: str, groups=()):
    """A level badge and a badge per group (built here rather than by an included template: a
    document page shows one per section, and an inclusion tag costs a template render each)."""
    level = html.escape((level_label or "").lower())
    badges = [f'<span class="badge level-{level}">{level}</span>']
    badges += [f' <span class="badge group">{html.escape(str(g))}</span>' for g in groups or ()]
    return mark_safe("".join(badges))  # noqa: S308 -- the level and every group escaped


def _e(value) -> str:
    return html.escape(str(value))


def _source(row) -> str:
    """Where a section's policy comes from, in the upload preview's words."""
    if row.get("override"):
        return "set in the console (overrides the file)"
    return "marker" if row["own"] else "inherited"


@register.simple_tag(takes_context=True)
def section_rows(context, rows, admin: bool, can_edit: bool):
    """The rows of a document's section tree (``console.views.document_page._tree_context``).

    Built here rather than by a ``{% for %}`` in the template: a document of 1,000 sections is 1,000
    rows of some twenty template nodes each, and the template engine spent most of the page's time on
    them. The markup is the one ``_section_tree.html`` had; every value is escaped. A row whose change
    was just refused comes with its form (``_access_form.html``, rendered by the engine); every other
    row fetches its form when opened (htmx), or links to it without JavaScript."""
    form_template = context.template.engine.get_template("console/documents/_access_form.html") if can_edit else None
    out = []
    for row in rows:
        node, sid = row["node"], row["sid"]  # a uuid's text: nothing to escape
        href = _e(row["href"])
        out.append(
            f'<li class="section-row{" selected" if row["selected"] else ""}" id="section-{sid}" data-section="{sid}"'
            f' data-depth="{node.level}">\n<div class="section-head">\n'
            f'<a class="section-title" href="{href}#section-panel" hx-get="{href}" hx-target="#section-panel"'
            f' hx-swap="outerHTML" hx-push-url="true">{_e(row["title"] or "(untitled)")}</a>\n'
        )
        if row["above"]:
            out.append(f'<span class="muted small section-above">in {_e(row["above"])}</span>\n')
        out.append(
            f'<span class="muted small">{_e(node.kind)} · {_e(row["span"])}</span>\n'
            f'<span class="section-policy">{policy(row["level"], row["groups"])}</span>\n'
            f'<span class="muted small policy-source">{_source(row)}</span>\n'
        )
        # Rows are the sections the member may read: only they learn that a section had hidden text.
        if node.hidden_chars_removed:
            out.append(f'<span class="badge hidden-text" title="Text a reader of the document does not see '
                       f'(hidden styles, invisible characters) was left out of search and answers">hidden text '
                       f'removed: {int(node.hidden_chars_removed):,} characters</span>\n')
        for flag in node.hidden_text_flags:
            out.append(f'<span class="badge hidden-text">{_e(flag)}</span>\n')
        if admin:
            out.append(f'<a class="small" href="{_e(row["readers_href"])}">Who can read</a>\n')
        out.append("</div>\n")
        if row["changed"]:
            out.append('<p class="ok small" role="status">Access changed.</p>\n')
        if row["error"]:
            out.append(f'<p class="error" role="alert">{_e(row["error"])}</p>\n')
        if can_edit:
            access = _e(row["access_href"])
            if row.get("form") is not None:
                with context.push(section=node, form=row["form"], inline=True):
                    slot = f'<div class="access-slot">{form_template.render(context)}</div>'
                out.append(f'<details class="access-edit" open>\n<summary>Change access</summary>\n{slot}\n</details>\n')
            else:
                out.append(
                    '<details class="access-edit">\n<summary>Change access</summary>\n'
                    f'<div class="access-slot" hx-get="{access}" hx-trigger="toggle from:closest details once"'
                    f' hx-swap="innerHTML"><a class="small" href="{access}">Open the access form</a></div>\n</details>\n'
                )
        out.append("</li>\n")
    return mark_safe("".join(out))  # noqa: S308 -- every value above is escaped


@register.simple_tag
def shown_title(row) -> str:
    """A document's title or a section's heading as shown (``kb.titles.shown_title_of``): a held one is its
    placeholder. Every console page that names a document or a section by its stored title uses this."""
    from kb.titles import shown_title_of

    return shown_title_of(row) if row is not None else ""
