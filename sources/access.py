"""Access at the source: which policy each path of a source gets (docs/sources.md, "Access").

Three steps, each failing closed:

1. the source's **access map** (set by its admins): a list of path globs, each with a level and
   groups; the first glob that matches gives the policy, else the source's default policy;
2. an optional file in the source itself, :data:`ACCESS_FILE`, with the same kind of entries, which
   may only **narrow**: each entry must imply the source's default (checked when the file is read) and
   the policy the access map gave the path (checked per path); an entry that would widen, or that is
   not exactly well formed (an unknown key, level or group: a near miss), fails -- with its line --
   every item of the sync whose policy it could decide, which is every item;
3. access markers inside a file narrow further (the pipeline, as for an upload).

Globs are anchored at the source's root: ``*`` and ``?`` stay inside one path segment, ``**`` spans
any number of them (``docs/**`` is everything below ``docs``; ``**/*.md`` every Markdown file).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

import yaml

from accounts.policy import AccessLevel, Reader, UnknownAccessLevel, can_read, parse_level, policy_implies
from ingestion.parsers.access_markers import edit_distance, skeleton
from sources.entries import Entry, Listing, Skip

ACCESS_FILE = ".bulkhead-access.yaml"
ENTRY_KEYS = {"path", "access_level", "groups"}
# Every path of a sync is matched against every rule: a source's own file may not make that work
# unbounded (YAML aliases would let a few bytes repeat an entry thousands of times, so they are refused).
MAX_ACCESS_FILE_BYTES = 64 * 1024
MAX_ACCESS_FILE_ENTRIES = 1000


class GlobError(ValueError):
    pass


@lru_cache(maxsize=1024)
def glob_regex(glob: str) -> re.Pattern:
    """The anchored regular expression of ``glob``; a glob with a character class or a ``..`` is refused."""
    if not glob or glob.startswith("/") or any(part == ".." for part in glob.split("/")):
        raise GlobError(f"glob {glob!r} must be a relative path pattern without '..'")
    if any(c in glob for c in "[]{}\\"):
        raise GlobError(f"glob {glob!r}: only *, ** and ? are supported")
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def glob_match(glob: str, path: str) -> bool:
    return glob_regex(glob).match(path) is not None


def path_selected(path: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Included (no include globs: everything) and not excluded."""
    if include and not any(glob_match(g, path) for g in include):
        return False
    return not any(glob_match(g, path) for g in exclude)


@dataclass(frozen=True)
class Rule:
    path: str
    level: int
    groups: tuple[int, ...]
    line: int = 0  # in the access file; 0 for the access map
    file: str = ACCESS_FILE  # the access file, named relative to the tenant's folder when above the source's root


@dataclass(frozen=True)
class AccessFile:
    rules: tuple[Rule, ...] = ()
    error: str = ""  # set: the file is refused, and every item with it
    lookalike: str = ""  # the path of a file named like it, which the error names
    # The access files above a folder source's root (or a local Git repository), outermost first: (the root relative to the file's folder, its
    # rules), applied before ``rules`` (:func:`listing_access_file`).
    above: tuple[tuple[str, tuple[Rule, ...]], ...] = ()


def map_rules(access_map: Iterable[Mapping]) -> tuple[Rule, ...]:
    """The stored access map (``[{"path", "level", "groups"}]``) as rules."""
    return tuple(Rule(e["path"], int(e["level"]), tuple(sorted(e.get("groups") or ()))) for e in access_map)


class _AliasRefused(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _NoAliasLoader(yaml.SafeLoader):
    """The safe loader, refusing an alias where it would compose one (one pass over the file)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise _AliasRefused(self.peek_event().start_mark.line + 1)
        return super().compose_node(parent, index)


def parse_access_file(
    content: bytes, *, group_ids: Mapping[str, int], default_level: int, default_groups: Sequence[int]
) -> AccessFile:
    """Read :data:`ACCESS_FILE`: a YAML list of ``{path, access_level, groups}``. Any fault -- not
    YAML, not a list of mappings, an unknown key, level or group, a bad glob, or an entry that
    would widen the source's default policy, a file over :data:`MAX_ACCESS_FILE_BYTES` or
    :data:`MAX_ACCESS_FILE_ENTRIES`, a YAML alias -- refuses the whole file, naming its line."""
    if len(content) > MAX_ACCESS_FILE_BYTES:
        return AccessFile(error=f"{ACCESS_FILE}: larger than {MAX_ACCESS_FILE_BYTES // 1024} KB; it is not read")
    try:
        text = content.decode("utf-8")
        node = yaml.compose(text, Loader=_NoAliasLoader)
    except _AliasRefused as exc:
        return AccessFile(error=f"{ACCESS_FILE} line {exc.line}: YAML aliases (*name) are not allowed; "
                                f"write each entry out")
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" line {line + 1}" if line is not None else ""
        return AccessFile(error=f"{ACCESS_FILE}{where}: not readable YAML")
    if node is None:
        return AccessFile()
    if not isinstance(node, yaml.SequenceNode):
        return AccessFile(error=f"{ACCESS_FILE} line {node.start_mark.line + 1}: expected a list of entries")
    if len(node.value) > MAX_ACCESS_FILE_ENTRIES:
        extra = node.value[MAX_ACCESS_FILE_ENTRIES]
        return AccessFile(error=f"{ACCESS_FILE} line {extra.start_mark.line + 1}: more than "
                                f"{MAX_ACCESS_FILE_ENTRIES} entries")
    rules = []
    for entry in node.value:
        line = entry.start_mark.line + 1
        where = f"{ACCESS_FILE} line {line}"
        if not isinstance(entry, yaml.MappingNode):
            return AccessFile(error=f"{where}: an entry is a mapping of path, access_level and groups")
        fields = {}
        for key_node, value_node in entry.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key not in ENTRY_KEYS:
                return AccessFile(error=f"{ACCESS_FILE} line {key_node.start_mark.line + 1}: unknown key {key!r}; "
                                        f"expected {', '.join(sorted(ENTRY_KEYS))}")
            if key in fields:
                return AccessFile(error=f"{ACCESS_FILE} line {key_node.start_mark.line + 1}: {key} given twice")
            fields[key] = value_node
        if "path" not in fields or "access_level" not in fields:
            return AccessFile(error=f"{where}: an entry needs path and access_level")
        path_node, level_node = fields["path"], fields["access_level"]
        if not isinstance(path_node, yaml.ScalarNode) or not isinstance(level_node, yaml.ScalarNode):
            return AccessFile(error=f"{where}: path and access_level are single values")
        try:
            glob_regex(path_node.value)
        except GlobError as exc:
            return AccessFile(error=f"{ACCESS_FILE} line {path_node.start_mark.line + 1}: {exc}")
        try:
            level = int(parse_level(level_node.value))
        except UnknownAccessLevel as exc:
            return AccessFile(error=f"{ACCESS_FILE} line {level_node.start_mark.line + 1}: {exc}")
        groups: list[int] = []
        if "groups" in fields:
            groups_node = fields["groups"]
            if not isinstance(groups_node, yaml.SequenceNode) or not all(
                isinstance(g, yaml.ScalarNode) for g in groups_node.value
            ):
                return AccessFile(error=f"{ACCESS_FILE} line {groups_node.start_mark.line + 1}: groups is a list of names")
            for g in groups_node.value:
                if g.value not in group_ids:
                    return AccessFile(error=f"{ACCESS_FILE} line {g.start_mark.line + 1}: unknown group {g.value!r}")
                groups.append(group_ids[g.value])
        if not policy_implies(level, groups, default_level, default_groups):
            return AccessFile(error=f"{where}: {path_node.value!r} would widen the source's default policy "
                                    f"({AccessLevel(default_level).name.lower()}); the file may only narrow it")
        rules.append(Rule(path_node.value, level, tuple(sorted(groups)), line))
    return AccessFile(rules=tuple(rules))


# Latin look-alikes of the letters of "bulkhead" that the markers' skeleton does not map (it maps those of "access").
_NAME_CONFUSABLES = str.maketrans({"к": "k", "һ": "h", "ӏ": "l", "ⅼ": "l", "Ь": "b", "ь": "b", "ս": "u", "ʜ": "h"})
_NAME_CORE = "bulkheadaccess"


def lookalike_access_file(path: str) -> bool:
    """Whether ``path`` looks like :data:`ACCESS_FILE` without being it: the same name in a subfolder (only the
    source's root's is read), another case, extension or separator (``.bulkhead-access.yml``,
    ``.Bulkhead-Access.yaml``, ``.bulkhead_access.yaml.bak``, ``copy of .bulkhead-access.yaml``), look-alike
    letters of other scripts, or a name within two edits of it (``.bulkhed-acess.yaml``): a part of the name between
    dots, or a run of such parts joined (``.bulkhead.access.yaml``), its separators dropped, within two edits of
    ``bulkheadaccess``. Someone meant it to narrow access, and it would not: fail closed."""
    if path == ACCESS_FILE:
        return False
    name = path.rsplit("/", 1)[-1]
    squashed = re.sub(r"[^a-z0-9.]", "", skeleton(name).translate(_NAME_CONFUSABLES))
    parts = squashed.split(".")
    # Consecutive parts joined too: a dot is a separator like any other (``.bulkhead.access.yaml``; found reviewing
    # the 2026-12-04 fix: only a part between dots was compared, so that name was silently not read). Runs no
    # longer than the core and its two edits, so a name of many dots costs little.
    for start in range(len(parts)):
        joined = ""
        for part in parts[start:]:
            joined += part
            if len(joined) > len(_NAME_CORE) + 2:
                break
            if edit_distance(joined, _NAME_CORE) <= 2:
                return True
    return False


def source_access_file(entries: Sequence[Entry], *, group_ids: Mapping[str, int], default_level: int,
                       default_groups: Sequence[int]) -> AccessFile:
    """The access file of a listing (the sync's and the preview's one reading). Refused -- so every item fails --
    when it cannot be read (a link, a Git LFS pointer: without it every item would get the wider policy it was
    there to narrow) or when any path of the listing merely looks like it (:func:`lookalike_access_file`)."""
    lookalike = next((e.path for e in entries if lookalike_access_file(e.path)), None)
    if lookalike is not None:
        return AccessFile(error=f"{lookalike}: named like {ACCESS_FILE} but not it (only {ACCESS_FILE} at the "
                                f"source's root, and in a folder above it, is read, exactly so named): rename or remove it; nothing is synced "
                                f"until then", lookalike=lookalike)
    entry = next((e for e in entries if e.path == ACCESS_FILE), None)
    if entry is None:
        return AccessFile()
    if entry.skip:
        return AccessFile(error=f"{ACCESS_FILE}: {entry.skip}; it is not read")
    try:
        return parse_access_file(entry.read(), group_ids=group_ids, default_level=default_level,
                                 default_groups=default_groups)
    except Skip as exc:
        return AccessFile(error=f"{ACCESS_FILE}: {exc}")
    except OSError as exc:  # gone or unreadable since the listing: refused, never the wider policy
        return AccessFile(error=f"{ACCESS_FILE}: it could not be read ({exc.strerror or type(exc).__name__}); "
                                "it is not read")


def listing_access_file(listing: Listing, *, group_ids: Mapping[str, int], default_level: int,
                        default_groups: Sequence[int]) -> AccessFile:
    """The access files of a listing: the source's own (:func:`source_access_file`) and, for a folder source rooted
    below the tenant's folder or a local Git repository inside it, those of the folders above its root (``listing.above``), each read as if the source
    were rooted at its folder -- its globs relative to it -- and refused the same way (a look-alike, a link, a
    fault), naming its path relative to the tenant's folder; any refusal refuses the whole, so every item fails.
    Their entries only narrow, checked per path (:func:`item_policy`): an entry for a path of another folder is
    none of this source's business, so they are not held to the source's default when read."""
    own = source_access_file(listing.entries, group_ids=group_ids, default_level=default_level,
                             default_groups=default_groups)
    above = []
    for folder in listing.above:
        where = f"{folder.folder}/" if folder.folder else ""
        read = source_access_file(folder.entries, group_ids=group_ids, default_level=int(AccessLevel.PUBLIC),
                                  default_groups=())
        if read.error:
            lookalike = f"{where}{read.lookalike}" if read.lookalike else ""
            error = where + read.error + (f" (an access file above the source's root, in "
                                          f"{folder.folder or 'the tenant folder'})")
            return AccessFile(error=error, lookalike=lookalike)
        file = f"{where}{ACCESS_FILE}"
        above.append((folder.prefix, tuple(Rule(r.path, r.level, r.groups, r.line, file) for r in read.rules)))
    return AccessFile(rules=own.rules, error=own.error, lookalike=own.lookalike, above=tuple(above))


class ItemAccessError(ValueError):
    pass


def item_policy(
    path: str, *, default: tuple[int, Sequence[int]], access_map: Sequence[Rule], access_file: AccessFile
) -> tuple[int, tuple[int, ...]]:
    """The policy ``path`` is ingested under (before the markers inside it), or :class:`ItemAccessError`."""
    if access_file.error:
        raise ItemAccessError(access_file.error)
    level, groups = default[0], tuple(sorted(default[1]))
    for rule in access_map:
        if glob_match(rule.path, path):
            level, groups = rule.level, rule.groups
            break
    # The files above the root first (outermost first), then the root's own: each may only narrow what it is given.
    for prefix, rules in (*access_file.above, ("", access_file.rules)):
        there = f"{prefix}/{path}" if prefix else path
        for rule in rules:
            if glob_match(rule.path, there):
                if not policy_implies(rule.level, rule.groups, level, groups):
                    raise ItemAccessError(f"{rule.file} line {rule.line}: {rule.path!r} would widen the policy the "
                                          f"source's access map (or an access file above) gives {path!r}; the file "
                                          f"may only narrow it")
                level, groups = rule.level, rule.groups
                break
    return level, groups


# ----------------------------------------------------------------------------- who may see an item

# An item whose policy could not be decided (its access file refused, an entry that would widen): shown only to an
# admin who may read every level and group.
UNDECIDED: dict = {"level": None}


def item_access(policy: tuple[int, Sequence[int]] | None, *, document_id=None,
                sections: Iterable[tuple[int, Sequence[int]]] | None = None) -> dict:
    """What decides who may see one item of a source -- a preview's row, a sync's error or skip, with its path
    (docs/sources.md, "Who sees a source's paths"): the policy the source gives the path (``None``: undecided,
    :data:`UNDECIDED`), the document the path is stored as (``document_id``: whoever may not see it may not see
    its path either -- its markers may have narrowed every section), and, for a document deleted with the item
    (a skip), the policies of the sections it had (``sections``), as :func:`item_shown` reads them. Kept as JSON
    on the sync's rows."""
    if policy is None:
        return dict(UNDECIDED)
    record: dict = {"level": int(policy[0]), "groups": sorted(int(g) for g in policy[1])}
    if document_id:
        record["document"] = str(document_id)
    if sections is not None:
        record["sections"] = [[int(level), sorted(int(g) for g in groups)] for level, groups in sections]
    return record


def path_access(path: str, *, default: tuple[int, Sequence[int]], access_map: Sequence[Rule], access_file: AccessFile,
                document_id=None, folder_documents: Iterable = (), max_documents: int | None = None) -> dict:
    """:func:`item_access` of ``path`` under its :func:`item_policy` (undecided when that fails): for a path a
    listing names in an error, which is no item of it. A path ending in ``/`` is a folder: :func:`folder_access`
    (``folder_documents``: the documents stored below it)."""
    if path.endswith("/"):
        return folder_access(path, default=default, access_map=access_map, access_file=access_file,
                             document_ids=folder_documents, max_documents=max_documents)
    try:
        policy = item_policy(path, default=default, access_map=access_map, access_file=access_file)
    except ItemAccessError:
        return item_access(None)
    return item_access(policy, document_id=document_id)


def _glob_tokens(glob: str) -> tuple[str, ...]:
    """``glob`` as :func:`glob_regex` reads it: ``**/``, ``**``, ``*``, ``?`` and single characters."""
    glob_regex(glob)  # refused as there
    out, i = [], 0
    while i < len(glob):
        for token in ("**/", "**", "*", "?"):
            if glob.startswith(token, i):
                out.append(token)
                i += len(token)
                break
        else:
            out.append(glob[i])
            i += 1
    return tuple(out)


@lru_cache(maxsize=4096)
def glob_may_match_below(glob: str, folder: str) -> bool:
    """Whether ``glob`` matches some path below ``folder`` (``a/b/``, ending in ``/``): whether any string starting
    with ``folder`` is matched. Every glob's rest can be matched once ``folder`` is read (its pieces are literals,
    ``?``, ``*``, ``**``), so it is whether ``folder`` can be read to its end."""
    tokens = _glob_tokens(glob)

    @cache
    def read(t: int, at: int) -> bool:
        if at == len(folder):
            return True
        if t == len(tokens):
            return False
        token, c = tokens[t], folder[at]
        if token == "**":
            return True  # anything, the rest of ``folder`` included
        if token == "*":
            return read(t + 1, at) or (c != "/" and read(t, at + 1))
        if token == "**/":  # (?:[^/]+/)*
            if read(t + 1, at):
                return True
            end = folder.find("/", at)
            if end == -1:
                return True  # inside a segment when ``folder`` ends
            return end > at and read(t, end + 1)
        if token == "?":
            return c != "/" and read(t + 1, at + 1)
        return token == c and read(t + 1, at + 1)

    return read(0, 0)


def glob_covers(glob: str, folder: str) -> bool:
    """Whether ``glob`` certainly matches every path below ``folder`` (``a/b/``): ``**``, or ``<an ancestor or
    the folder itself>/**`` written without wildcards. Other globs may match some paths below it only."""
    if glob == "**":
        return True
    if not glob.endswith("/**"):
        return False
    base = glob[:-2]  # "a/"
    return not any(c in base for c in "*?") and folder.startswith(base)


def folder_access(folder: str, *, default: tuple[int, Sequence[int]], access_map: Sequence[Rule],
                  access_file: AccessFile, document_ids: Iterable = (), max_documents: int | None = None) -> dict:
    """What decides who may read the name of ``folder`` (``a/b/``, relative to the source's root) -- a folder the
    listing names in an error (it could not be listed, its name is not UTF-8) -- as :func:`item_access` does for
    a path. The folder's files are not known, so it is every policy the source could give a file below it,
    fail closed: the map's entries that may match a path below it up to one that matches every such path (else the
    default too), and every entry of an access file (above the root, then the root's) that may match one
    (``policies``: an admin must be able to read **each**), and the documents stored below it (``documents``: each
    must be one they can see). An access file refused, or an entry that may match and does not narrow what comes
    before it (it would fail its items), leaves it undecided (:data:`UNDECIDED`); so do more documents below it than
    ``max_documents`` (the record is kept on the sync's row: bounded, never shown)."""
    if access_file.error:
        return dict(UNDECIDED)
    document_ids = sorted({str(d) for d in document_ids if d})
    if max_documents is not None and len(document_ids) > max_documents:
        return dict(UNDECIDED)
    folder = folder if folder.endswith("/") else folder + "/"
    given: list[tuple[int, tuple[int, ...]]] = []
    for rule in access_map:
        if glob_may_match_below(rule.path, folder):
            given.append((rule.level, tuple(rule.groups)))
            if glob_covers(rule.path, folder):
                break
    else:
        given.append((int(default[0]), tuple(sorted(default[1]))))
    for prefix, rules in (*access_file.above, ("", access_file.rules)):
        there = f"{prefix}/{folder}" if prefix else folder
        narrowed = []
        for rule in rules:
            if glob_may_match_below(rule.path, there):
                if not all(policy_implies(rule.level, rule.groups, level, groups) for level, groups in given):
                    return dict(UNDECIDED)
                narrowed.append((rule.level, tuple(rule.groups)))
        given.extend(narrowed)
    policies = sorted(set(given))
    record = item_access(policies[-1], document_id=None)
    record["policies"] = [[int(level), sorted(int(g) for g in groups)] for level, groups in policies]
    record["documents"] = document_ids
    return record


def all_of(records: Sequence[Mapping]) -> dict:
    """One record (:func:`item_access`, :func:`folder_access`) read as all of ``records``: shown only to who may see
    each -- every policy and every document any names (a website page's error that names the redirect's hop it
    failed at: the page's and the hop's). Undecided when any is."""
    if any(not isinstance(r, Mapping) or r.get("level") is None for r in records):
        return dict(UNDECIDED)
    first = records[0]
    record: dict = {"level": first["level"], "groups": list(first.get("groups") or ())}
    policies = {(int(first["level"]), tuple(first.get("groups") or ()))}
    documents: set[str] = set()
    for r in records:
        policies.add((int(r["level"]), tuple(sorted(r.get("groups") or ()))))
        policies.update((int(level), tuple(sorted(groups))) for level, groups in r.get("policies") or ())
        documents.update(str(d) for d in r.get("documents") or ())
        if r.get("document"):
            documents.add(str(r["document"]))
        if r.get("sections") is not None:  # a skip's deleted document: not an error's; fail closed
            return dict(UNDECIDED)
    record["policies"] = [[level, list(groups)] for level, groups in sorted(policies)]
    record["documents"] = sorted(documents)
    return record


def item_shown(record: Mapping | None, reader: Reader, *, everything: bool, visible_documents: set[str]) -> bool:
    """Whether an item whose :func:`item_access` is ``record`` is shown to ``reader`` (an admin): all of it to
    one who may read every level and group (``everything``); else only when its policy was decided and they may
    read it, the document it is stored as is one they can see (``visible_documents``: ``kb.selectors``'s rule,
    asked by the caller; a document gone since is not), and, for a deleted one, they could read one of its
    sections (a document is seen by a readable section). Fail closed: a row without a record (one kept before
    this rule) is not shown."""
    if everything:
        return True
    if not isinstance(record, Mapping) or record.get("level") is None:
        return False
    if not can_read(reader, level=record["level"], group_ids=record.get("groups") or ()):
        return False
    if record.get("document") and record["document"] not in visible_documents:
        return False
    # A folder (folder_access): every policy a file below it could get, every document stored below it.
    if any(not can_read(reader, level=level, group_ids=groups) for level, groups in record.get("policies") or ()):
        return False
    if any(d not in visible_documents for d in record.get("documents") or ()):
        return False
    sections = record.get("sections")
    if sections is not None and not any(can_read(reader, level=level, group_ids=groups) for level, groups in sections):
        return False
    return True


# A quoted piece of a message (Python's repr): what the access file's own words are, in its errors; a quote left
# over opens words that were not closed (cut there).
_QUOTED = re.compile(r"(?<!\w)'(?:[^'\\\n]|\\.)*'" + r'|"(?:[^"\\\n]|\\.)*"')
_STRAY_QUOTE = re.compile(r"'…'|(?P<stray>(?<!\w)'|\")")


def access_file_error_without_words(access_file: AccessFile) -> str:
    """The access file's error without its words -- each quoted piece (a glob, a key, a group) and a look-alike's
    path read ``…`` -- for an admin who may not read every level and group: a glob of the file names a path as
    much as the path does. The line and the kind of fault are left."""
    error = access_file.error
    if access_file.lookalike:  # the message starts with it
        error = "…" + error[len(access_file.lookalike):] if error.startswith(access_file.lookalike) else "…"
    error = _QUOTED.sub("'…'", error)
    for match in _STRAY_QUOTE.finditer(error):
        if match.group("stray"):
            return error[: match.start()] + "…"
    return error
