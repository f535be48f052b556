"""A code chunk's context (imports, enclosing class signatures) holds only what every reader of
the chunk may read, as its heading prefix does.

The context of a method is text of other sections -- the module's import lines (the root's) and
the signatures of its enclosing classes -- so a method readable by more people than its class or
module must not embed them: a keyword search for the class name or its base would otherwise
find the method's chunk (found by an attack on the demo; docs/security.md).
"""

from __future__ import annotations

from accounts.policy import AccessLevel, PathNode, Policy, visible_heading_paths
from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.parsers.code import parse_python
from ingestion.structure import ParsedDocument, restrict_context

COUNTER = default_counter()
INTERNAL = Policy(AccessLevel.INTERNAL)
RESTRICTED = Policy(AccessLevel.RESTRICTED, ("board",))

SOURCE = b'''"""Acquisition desk."""
import os
from globex import holdings


class ProjectNightjarAcquisition(holdings.GlobexHoldingsBase):
    """Terms of the deal."""

    def public_helper(self, path):
        return os.path.basename(path).strip()
'''


def _as_the_pipeline(doc: ParsedDocument, policies: dict[str, Policy]) -> None:
    """What ``pipeline.services.plan_content`` does with the sections' stored policies."""
    paths = visible_heading_paths(
        PathNode(s.key, s.parent, s.title, int(policies[s.key].rank), policies[s.key].groups) for s in doc.sections
    )
    for section in doc.sections:
        section.heading_path = paths[section.key]
    restrict_context(doc, policies)


def _embedded(doc: ParsedDocument, title: str) -> str:
    key = next(s.key for s in doc.sections if s.title == title)
    chunks = [c for c in chunk_document(doc, ChunkingConfig(), COUNTER) if c.section_key == key]
    assert chunks
    return "\n".join(c.embed_text for c in chunks)


def _policies(doc: ParsedDocument, **by_title: Policy) -> dict[str, Policy]:
    return {s.key: by_title.get(s.title, INTERNAL) for s in doc.sections}


def test_a_restricted_class_leaves_its_signature_out_of_a_readable_methods_context():
    doc = parse_python(SOURCE, filename="nightjar.py")
    _as_the_pipeline(doc, _policies(doc, ProjectNightjarAcquisition=RESTRICTED))
    method = _embedded(doc, "public_helper")
    assert "ProjectNightjarAcquisition" not in method and "GlobexHoldingsBase" not in method
    # What every reader of the method may read stays: the module's import, its own signature, its body.
    assert "import os" in method and "def public_helper(self, path):" in method and "basename" in method
    # The class's own chunks keep their signature (their readers may read it).
    assert "class ProjectNightjarAcquisition(holdings.GlobexHoldingsBase):" in _embedded(doc, "ProjectNightjarAcquisition")


def test_a_restricted_module_leaves_its_imports_out_of_readable_definitions():
    doc = parse_python(SOURCE, filename="nightjar.py")
    _as_the_pipeline(doc, _policies(doc, **{"nightjar.py": RESTRICTED}))
    method, cls = _embedded(doc, "public_helper"), _embedded(doc, "ProjectNightjarAcquisition")
    assert "import os" not in method and "nightjar.py" not in method
    assert "from globex import holdings" not in cls
    # The class is readable by the method's readers: its signature stays in the method's context.
    assert "class ProjectNightjarAcquisition(holdings.GlobexHoldingsBase):" in method


def test_context_stays_whole_when_every_reader_may_read_its_sources():
    doc = parse_python(SOURCE, filename="nightjar.py")
    whole = {s.key: s.context for s in doc.sections}
    _as_the_pipeline(doc, _policies(doc, public_helper=RESTRICTED))  # narrower than what encloses it
    assert {s.key: s.context for s in doc.sections} == whole
    assert "class ProjectNightjarAcquisition(holdings.GlobexHoldingsBase):" in _embedded(doc, "public_helper")


def test_a_context_source_with_unknown_policy_is_left_out():
    """Fail closed: a part whose section has no policy in the mapping is not embedded."""
    doc = parse_python(SOURCE, filename="nightjar.py")
    method = next(s for s in doc.sections if s.title == "public_helper")
    restrict_context(doc, {method.key: INTERNAL})
    assert method.context == "def public_helper(self, path):"


def test_the_root_is_never_untitled():
    """A policy change finds that a definition's context lost the module's imports by the module's
    title leaving its heading path: a source without a file name still titles the root."""
    for source in ("https://example.com/code/", "", None):
        assert parse_python(SOURCE, filename=source).sections[0].title == "module.py"
