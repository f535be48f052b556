"""Forms of the console. They validate input shape only; the services decide what is allowed."""

from __future__ import annotations

import dataclasses
import re

from django import forms

from accounts.models import Role
from accounts.policy import LEVEL_NAMES
from audit.models import MAX_RETENTION_DAYS, MIN_RETENTION_DAYS
from ingestion.chunking.config import BOUNDARIES, INNER_SPLITTERS, PREFIX_POLICIES, STRATEGIES, ChunkingConfig
from kb.search_modes import EXPAND_LEVELS, EXPANDS, MAX_QUERY_CHARS, MAX_TOP_K, MODES


def _choices(values) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


_MODE_WORDS = {"hybrid": "meaning and exact words", "vector": "meaning only", "keyword": "exact words only"}
_EXPAND_WORDS = {"parent": "the whole section around each hit", "neighbors": "each hit and the passages beside it",
                 "none": "the hits alone"}
_LEVEL_WORDS = {"leaf": "the hit's own section", "parent": "the section one heading up"}


def _worded(values, words: dict[str, str]) -> list[tuple[str, str]]:
    return [(v, words.get(v, v)) for v in values]


class SearchForm(forms.Form):
    """The playground's search. The words are for someone who has never heard of "top k"; the values
    sent are the API's. A parameter missing from the address keeps its default (a link with only
    ``?query=`` searches as the form would), and an empty query asks for one, nothing else."""

    query = forms.CharField(max_length=MAX_QUERY_CHARS, strip=True, label="Search for",
                            error_messages={"required": "Type what you are looking for."},
                            help_text="Words or a question, as you would ask a colleague.")
    mode = forms.ChoiceField(choices=_worded(MODES, _MODE_WORDS), initial="hybrid", label="Match by",
                             help_text="Meaning finds passages that say the same in other words; exact words finds "
                                       "the words you typed.")
    expand = forms.ChoiceField(choices=_worded(EXPANDS, _EXPAND_WORDS), initial="parent", label="Answer passages",
                               help_text="How much text around each hit to gather for an answer below the hits.")
    expand_level = forms.ChoiceField(choices=_worded(EXPAND_LEVELS, _LEVEL_WORDS), initial="leaf",
                                     label="Section to gather",
                                     help_text="With whole sections: the hit's own section, or the larger one "
                                               "above it.")
    top_k = forms.IntegerField(min_value=1, max_value=MAX_TOP_K, initial=5, label="Number of hits",
                               help_text=f"How many matching passages to list, best first (1–{MAX_TOP_K}).")
    max_contexts = forms.IntegerField(min_value=1, max_value=50, initial=5, label="Number of answer passages",
                                      help_text="The most passages gathered for an answer (1–50).")
    context_token_budget = forms.IntegerField(
        min_value=1, max_value=100_000, initial=2000, label="Answer length limit (tokens)",
        help_text="The most text the answer passages hold together; a token is about three quarters of a word.")
    tags = forms.CharField(required=False, label="Tags (any of them)",
                           help_text="Comma-separated; only documents with at least one of these tags.")
    source_prefix = forms.CharField(required=False, max_length=1000, label="Source starts with",
                                    help_text="Only documents whose source (file name or path) starts with this.")
    exclude_flagged = forms.BooleanField(required=False, label="Leave out flagged passages",
                                         help_text="Skip passages the screening flagged as instructions to a model.")
    spotlight = forms.BooleanField(required=False, label="Spotlight (wrap passages for a model)",
                                   help_text="Wrap each answer passage in a random boundary, with a system prompt "
                                             "that tells the model the wrapped text is data, never instructions.")
    # Admins only (the view drops them for others).
    as_member = forms.TypedChoiceField(required=False, coerce=int, empty_value=None, label="Search as",
                                       help_text="See exactly what another member would get (never more than "
                                                 "you may read yourself).")
    index_version = forms.TypedChoiceField(required=False, coerce=str, empty_value=None, label="Index version",
                                           help_text="Which build of the search index to ask.")
    compare_version = forms.TypedChoiceField(required=False, coerce=str, empty_value=None, label="Compare with",
                                             help_text="Another version, answered side by side.")

    def __init__(self, data=None, *args, members=(), versions=(), **kwargs):
        if data is not None:
            # A parameter missing from the address keeps its default rather than failing as required.
            data = data.copy()
            for name, field in self.base_fields.items():
                if field.initial is not None and not data.get(name):
                    data[name] = field.initial
        super().__init__(data, *args, **kwargs)
        self.fields["as_member"].choices = [("", "myself")] + [(m.pk, f"{m.user.email} ({m.role}, "
                                                                       f"{m.get_clearance_display()})") for m in members]
        self.active_version = next((str(v.pk) for v in versions if v.is_active), None)
        version_choices = [(str(v.pk), f"{v.name + ' · ' if v.name else ''}{v.short_id}"
                                       f"{' (active)' if v.is_active else ''}") for v in versions]
        self.fields["index_version"].choices = [("", "the active version")] + version_choices
        self.fields["compare_version"].choices = [("", "no comparison")] + version_choices

    def clean(self):
        data = super().clean()
        first = data.get("index_version") or self.active_version
        if data.get("compare_version") and data["compare_version"] == first:
            self.add_error("compare_version", "Choose a different version to compare with: this one is already "
                                              "the version searched.")
        return data

    def tag_list(self) -> tuple[str, ...]:
        return tuple(t.strip() for t in self.cleaned_data.get("tags", "").split(",") if t.strip())


# ----------------------------------------------------------------------------- members, groups, tokens (admins)


class _MemberFieldsForm(forms.Form):
    role = forms.ChoiceField(initial="viewer")
    clearance = forms.ChoiceField(initial="internal")
    groups = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = Role.choices
        self.fields["clearance"].choices = _choices(LEVEL_NAMES)
        self.fields["groups"].choices = _choices(groups)


class MemberCreateForm(_MemberFieldsForm):
    """A new member: e-mail (the user is created if new), role, clearance, groups (by slug)."""

    email = forms.EmailField(label="E-mail", max_length=254)
    field_order = ["email", "role", "clearance", "groups"]


class MemberChangeForm(_MemberFieldsForm):
    """One member's role, clearance and groups, as a row of the members table sends them."""


class MemberActiveForm(forms.Form):
    is_active = forms.TypedChoiceField(choices=[("true", "active"), ("false", "inactive")],
                                       coerce=lambda v: v == "true")


class GroupCreateForm(forms.Form):
    slug = forms.CharField(max_length=63, help_text="lowercase letters, digits and hyphens; it never changes")
    name = forms.CharField(max_length=200, required=False)


class GroupRenameForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)


class TokenCreateForm(forms.Form):
    membership = forms.TypedChoiceField(coerce=int, label="Member")
    name = forms.CharField(max_length=100, required=False, help_text="what the token is for")

    def __init__(self, *args, memberships=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["membership"].choices = [
            (m.pk, f"{m.user.email}{'' if m.is_active else ' (inactive)'}") for m in memberships
        ]


# ----------------------------------------------------------------------------- index versions (admins)

# One line each on the chunking settings (ChunkingConfig's docstring has the whole story).
CONFIG_HELP = {
    "strategy": "structure: sections, paragraphs, sentences; fixed: token windows inside each section",
    "target_tokens": "body size the packer aims for",
    "overlap": "fraction of target_tokens repeated between consecutive chunks of one section, in [0, 1)",
    "max_tokens": "the model's input limit, special tokens included",
    "prefix": "embed the heading path before the body, or the body alone",
    "model": "the deployed embedding model",
    "semantic_split": "cut long prose where adjacent sentences stop being similar (structure only)",
    "special_tokens": "tokens the model adds around every input",
    "embedding_dimensions": "the width of the model's vectors",
    "prose_target_tokens": "body size for prose without headings (0: target_tokens)",
    "text_tables": "keep pipe- and tab-delimited tables in plain text together",
    "boundaries": "where prose may be cut inside a paragraph: sentences; also lines and clauses; lines first",
    "inner": "what cuts a run of prose: the packer, or semchunk (everywhere, or without headings only)",
    "prose_overlap": "overlap also in sections without a heading",
    "table_context": "a text table embeds the sentence that announces it, a row group its group label",
    "table_rows": "a table of records with numbers inside prose: one chunk per row, with its header and introduction",
    "topic_sentence": "later chunks of a long paragraph embed its first sentence",
    "table_delimiter_rows": "a Markdown pipe table in text keeps its header line (the |---| row is part of it)",
    "markdown_table_rows": "a Markdown pipe table in text: one chunk per row even when its cells are words",
    "compact_table_header": "a Markdown table's rows embed its header with the |---| row compacted",
    "long_sentence_lines": "a sentence longer than a chunk is cut at its line breaks before its words",
}
# Settings with a fixed set of values.
CONFIG_CHOICES = {
    "strategy": STRATEGIES,
    "prefix": PREFIX_POLICIES,
    "boundaries": BOUNDARIES,
    "inner": INNER_SPLITTERS,
}


class IndexVersionForm(forms.Form):
    """A field per chunking setting, each starting at its default; the service validates the whole."""

    name = forms.CharField(max_length=100, required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        default = ChunkingConfig()
        self.config_keys = []
        for f in dataclasses.fields(ChunkingConfig):
            initial, help_text = getattr(default, f.name), CONFIG_HELP.get(f.name, "")
            if f.name in CONFIG_CHOICES:
                field = forms.ChoiceField(choices=_choices(CONFIG_CHOICES[f.name]), initial=initial, help_text=help_text)
            elif f.type == "bool":
                field = forms.BooleanField(required=False, initial=initial, help_text=help_text)
            elif f.type == "int":
                field = forms.IntegerField(initial=initial, help_text=help_text)
            elif f.type == "float":
                field = forms.FloatField(initial=initial, help_text=help_text)
            else:
                field = forms.CharField(initial=initial, help_text=help_text)
            self.fields[f.name] = field
            self.config_keys.append(f.name)

    def config_data(self) -> dict:
        return {key: self.cleaned_data[key] for key in self.config_keys}

    def add_service_error(self, message: str) -> None:
        """The service's refusal beside the setting it names first (else above the form)."""
        found = [(m.start(), key) for key in self.config_keys if (m := re.search(rf"\b{key}\b", message))]
        self.add_error(min(found)[1] if found else None, message)


class EvaluateForm(forms.Form):
    golden = forms.FileField(label="Golden file", help_text='JSONL as kb_eval reads it: one '
                             '{"question": ..., "document": ..., "spans": [[start, end], ...]} per line (or Chroma CSV)')
    mode = forms.ChoiceField(choices=_choices(MODES), initial="hybrid")
    k = forms.CharField(label="Depths k", initial="1,5", max_length=50, help_text="comma-separated")
    budget = forms.IntegerField(label="Context token budget", min_value=1, max_value=100_000, initial=1000)
    compare = forms.BooleanField(required=False, initial=True, label="Compare with the active version")

    def clean_k(self) -> list[int]:
        try:
            ks = sorted({int(part) for part in self.cleaned_data["k"].split(",") if part.strip()})
        except ValueError:
            raise forms.ValidationError("Give whole numbers separated by commas.") from None
        if not ks:
            raise forms.ValidationError("Give at least one depth.")
        return ks


class ActivateForm(forms.Form):
    force = forms.BooleanField(required=False, label="Activate anyway (force)")


# ----------------------------------------------------------------------------- one document (editors, admins)


class SectionAccessForm(forms.Form):
    """A section's own policy, or inheriting again -- what ``PATCH /api/v1/sections/{id}/`` takes.

    Every level and every group of the tenant is offered; ``kb.services.section_set_access``
    refuses what the member may not set, with its own message. Unchecked groups mean none (the
    API's ``"groups": []``)."""

    access_level = forms.ChoiceField(label="Level")
    groups = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                       help_text="a reader needs one of them; none: no group is needed")
    inherit = forms.BooleanField(required=False, label="Inherit from the parent instead")

    def __init__(self, *args, groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["access_level"].choices = _choices(LEVEL_NAMES)
        self.fields["groups"].choices = _choices(groups)

    def change(self) -> dict:
        """The keyword arguments of ``section_set_access`` this form asks for."""
        data = self.cleaned_data
        if data["inherit"]:
            return {"access_level": None, "groups": None, "inherit": True}
        return {"access_level": data["access_level"], "groups": list(data["groups"]), "inherit": False}


class DocumentReplaceForm(forms.Form):
    """New content for a document; its title, tags and default policy stay unless the file says otherwise."""

    file = forms.FileField(allow_empty_file=False, label="New file")
    title = forms.CharField(required=False, max_length=500, help_text="leave empty to keep the present title")


class AsMemberForm(forms.Form):
    """The member an admin views a document as (the tenant's active members)."""

    member = forms.TypedChoiceField(coerce=int, label="View as")

    def __init__(self, *args, members=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["member"].choices = [("", "choose a member")] + [
            (m.pk, f"{m.user.email} ({m.role}, {m.get_clearance_display()})") for m in members
        ]


# ----------------------------------------------------------------------------- upload (editors, admins)

# The types a pasted text may be read as (any file the parsers read can be uploaded as a file).
PASTE_TYPES = [
    ("text/markdown", "Markdown"), ("text/plain", "Plain text"), ("text/html", "HTML"), ("text/csv", "CSV"),
    ("text/tab-separated-values", "TSV"), ("text/x-python", "Python"), ("text/vtt", "WebVTT transcript"),
    ("message/rfc822", "E-mail (RFC 822)"),
]


class _MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class _MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", _MultipleFileInput(attrs={"multiple": True}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = data if isinstance(data, list | tuple) else [data] if data else []
        return [super(_MultipleFileField, self).clean(f, initial) for f in files]


class _AnyChoiceField(forms.ChoiceField):
    """Offers some choices, accepts any value: what a member may choose is the service's to refuse,
    with its own message (a crafted request gets the same answer as the API's)."""

    def valid_value(self, value) -> bool:
        return True


_SLUG = re.compile(r"[-a-zA-Z0-9_]{1,63}")


class _AnyMultipleChoiceField(forms.MultipleChoiceField):
    """Any group slug-shaped value (the service refuses groups the member may not set, with its own
    message); anything else -- a NUL, markup -- is a form error, not a database error."""

    def valid_value(self, value) -> bool:
        return bool(_SLUG.fullmatch(str(value)))


class UploadForm(forms.Form):
    """Files (picked or dropped) and/or a pasted text, with the default policy of every one of them.

    The level and group widgets offer what the member may set (``levels``, ``groups``); the
    services refuse anything else, so the form checks shapes only."""

    files = _MultipleFileField(required=False, label="Files")
    title = forms.CharField(required=False, max_length=500, label="Title of the pasted text")
    content_type = forms.ChoiceField(choices=PASTE_TYPES, initial="text/markdown", label="Pasted text is")
    text = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 8}), label="Text")
    access_level = _AnyChoiceField(label="Default access level", initial="internal")
    groups = _AnyMultipleChoiceField(required=False, label="Default groups",
                                     help_text="a reader needs one of them; none: no group is needed")
    tags = forms.CharField(required=False, max_length=1000, help_text="comma-separated")

    def __init__(self, *args, levels=(), groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["access_level"].choices = _choices(levels)
        self.fields["groups"].choices = _choices(groups)
        self.fields["groups"].widget.attrs["size"] = min(max(len(groups), 2), 8)

    def clean(self):
        data = super().clean()
        if not data.get("files") and not (data.get("text") or "").strip():
            raise forms.ValidationError("Choose or drop files, or paste a text.")
        if (data.get("text") or "").strip() and not (data.get("title") or "").strip():
            self.add_error("title", "Give the pasted text a title.")
        return data

    def tag_list(self) -> tuple[str, ...]:
        return tuple(t.strip() for t in self.cleaned_data.get("tags", "").split(",") if t.strip())


# ----------------------------------------------------------------------------- audit (admins)


class AuditFilterForm(forms.Form):
    """The audit page's filters (``GET /api/v1/audit/``'s, and a document's title): each one left
    empty filters nothing. ``document`` (an id) comes from a document page's "who retrieved this"."""

    member = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, label="Who")
    action = forms.ChoiceField(required=False, label="What")
    title = forms.CharField(
        required=False, max_length=200, label="Document title",
        help_text="Part of a document's title. Only documents you may read are searched.",
    )
    document = forms.UUIDField(required=False, label="Document", widget=forms.HiddenInput)
    since = forms.DateTimeField(required=False, label="From", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    until = forms.DateTimeField(required=False, label="Before", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))

    def __init__(self, *args, members=(), actions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["member"].choices = [("", "anyone")] + [(m.pk, m.user.email) for m in members]
        self.fields["action"].choices = [("", "anything")] + [(a, label) for a, label in actions]
        self.fields["title"].widget.attrs.update({"aria-describedby": "audit-title-help", "placeholder": "e.g. Handbook"})

    def selector_arguments(self) -> dict:
        data = self.cleaned_data if self.is_bound and self.is_valid() else {}
        return {"membership_id": data.get("member"), "action": data.get("action") or None,
                "document_id": data.get("document"), "since": data.get("since"), "until": data.get("until")}

    def title_text(self) -> str:
        """The title filter's text ("" when none, or when the form cannot be read)."""
        data = self.cleaned_data if self.is_bound and self.is_valid() else {}
        return (data.get("title") or "").strip()


class AuditSettingsForm(forms.Form):
    """The tenant's audit settings (``PATCH /api/v1/audit/settings/``'s fields and bounds)."""

    retention_days = forms.IntegerField(
        min_value=MIN_RETENTION_DAYS, max_value=MAX_RETENTION_DAYS, label="Keep records for (days)",
        help_text=f"Between {MIN_RETENTION_DAYS} and {MAX_RETENTION_DAYS}. Older records are deleted by the hourly expiry.",
    )
    hash_queries = forms.BooleanField(
        required=False, label="Keep only a keyed hash of search texts, never the text",
        help_text="Applies to searches recorded from now on; records already kept are not rewritten.",
    )


class RevokeTokensChoice:
    """A new-password form's (the reset link's, "Change password"'s) "Also revoke my N API tokens", when the person
    has API tokens in the tenants the password opens (``tokens``: ``accounts.invitations.password_tokens_count``):
    checked at first when ``revoke_by_default``. Mixed in before Django's form (``SetPasswordForm``,
    ``PasswordChangeForm``: the user first).

    The form carries the number it offered (``tokens_offered``, hidden; 0 with no box, as is none). Submitted when the
    live number differs -- a token minted or revoked since the form was shown -- it is shown again with the new number,
    the box as at first, and "You have N API tokens now; choose again.", nothing written (found attacking identity,
    2026-12-04: a token minted between the page and the post was kept silently, with or without the box)."""

    revoke_by_default = True
    revoke_help = ("Recommended if someone else may have used your account. Scripts and apps using them stop working; "
                   "an admin mints new ones. Your other signed-in sessions end either way.")

    def __init__(self, user, *args, tokens: int = 0, **kwargs):
        super().__init__(user, *args, **kwargs)
        self.tokens = tokens
        self.fields["tokens_offered"] = forms.CharField(widget=forms.HiddenInput, required=False, strip=False,
                                                        initial=tokens)
        if tokens:
            self.fields["revoke_tokens"] = forms.BooleanField(
                required=False, initial=self.revoke_by_default,
                label=f"Also revoke my {tokens} API token{'' if tokens == 1 else 's'}", help_text=self.revoke_help)

    def offer_again(self) -> str:
        """Show the form again offering the live number (``tokens``), its box as at first; the sentence."""
        data = self.data.copy()
        data["tokens_offered"] = str(self.tokens)
        data.pop("revoke_tokens", None)
        if self.tokens and self.revoke_by_default:
            data["revoke_tokens"] = "on"
        self.data = data
        if not self.tokens:
            return "You have no API tokens now; choose again."
        return f"You have {self.tokens} API token{'' if self.tokens == 1 else 's'} now; choose again."

    def clean(self):
        cleaned = super().clean()
        # Compared as posted: no number (a form shown before it was carried, or by a client that never read it) is
        # a form that offered no choice, 0; any other value than the live number is shown again as a changed one.
        if (cleaned.get("tokens_offered") or "0") != str(self.tokens):
            raise forms.ValidationError(self.offer_again(), code="tokens_changed")
        return cleaned
