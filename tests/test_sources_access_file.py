"""The source's own access file (``sources.access.parse_access_file``), without a database: what a
hostile repository can write into ``.bulkhead-access.yaml`` to make every sync costly is refused,
naming the line, and the file then fails every item as any refused file does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sources.access import MAX_ACCESS_FILE_BYTES, MAX_ACCESS_FILE_ENTRIES, parse_access_file


def _parse(text: str | bytes):
    content = text.encode() if isinstance(text, str) else text
    return parse_access_file(content, group_ids={"eng": 1}, default_level=0, default_groups=())


def test_a_well_formed_file_gives_its_rules():
    parsed = _parse("- path: 'hr/**'\n  access_level: restricted\n  groups: [eng]\n")
    assert parsed.error == "" and [(r.path, r.groups, r.line) for r in parsed.rules] == [("hr/**", (1,), 1)]


def test_yaml_aliases_are_refused_with_their_line():
    """An anchor and aliases repeat one entry without writing it out: 6 bytes an entry, so a small file
    would give a sync hundreds of thousands of rules to match every path against."""
    text = "- &a\n  path: '**'\n  access_level: restricted\n" + "- *a\n" * 5
    parsed = _parse(text)
    assert parsed.rules == () and "line 4" in parsed.error and "alias" in parsed.error


def test_an_alias_inside_an_entry_is_refused_too():
    parsed = _parse("- path: &p 'docs/**'\n  access_level: restricted\n- path: *p\n  access_level: secret\n")
    assert parsed.rules == () and "line 3" in parsed.error and "alias" in parsed.error


def test_too_many_entries_are_refused_naming_the_first_one_over():
    entry = "- path: 'a/**'\n  access_level: restricted\n"
    assert _parse(entry * MAX_ACCESS_FILE_ENTRIES).error == ""
    parsed = _parse(entry * (MAX_ACCESS_FILE_ENTRIES + 1))
    assert parsed.rules == () and f"line {2 * MAX_ACCESS_FILE_ENTRIES + 1}" in parsed.error
    assert f"more than {MAX_ACCESS_FILE_ENTRIES} entries" in parsed.error


def test_a_file_over_the_size_cap_is_not_read():
    padding = "# " + "x" * 78 + "\n"
    text = "- path: 'a/**'\n  access_level: restricted\n" + padding * (MAX_ACCESS_FILE_BYTES // len(padding) + 1)
    assert len(text.encode()) > MAX_ACCESS_FILE_BYTES
    parsed = _parse(text)
    assert parsed.rules == () and "larger than 64 KB" in parsed.error
    assert _parse(text[:MAX_ACCESS_FILE_BYTES]).error == ""  # the same file, just under the cap, is read


@given(st.lists(st.sampled_from(["upper", "separator", "extension", "folder", "invisible", "cyrillic"]),
                min_size=1, max_size=4, unique=True))
def test_every_near_spelling_of_the_access_file_is_a_lookalike(changes):
    """Whatever mix of case, separators, extension, folder, invisible characters and look-alike letters turns
    ``.bulkhead-access.yaml`` into another name, that name is a look-alike (and fails the sync); the exact name
    at the root is not."""
    from sources.access import ACCESS_FILE, lookalike_access_file

    name = ACCESS_FILE
    for change in changes:
        if change == "upper":
            name = name.replace("bulkhead", "Bulkhead").replace("access", "ACCESS")
        elif change == "separator":
            name = name.replace("-", "_")
        elif change == "extension":
            name = name.replace(".yaml", ".yml.orig")
        elif change == "folder":
            name = f"docs/{name}"
        elif change == "invisible":
            name = name.replace("access", "ac\u200bcess")
        elif change == "cyrillic":
            name = name.replace("a", "\u0430", 1)
    assert name != ACCESS_FILE and lookalike_access_file(name), name
    assert not lookalike_access_file(ACCESS_FILE)
    assert not any(lookalike_access_file(n) for n in ("bulkhead-access-guide.md", "access.yaml", "README.md"))
