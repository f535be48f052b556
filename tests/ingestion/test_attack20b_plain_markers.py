"""A line marker (``# access: restricted``) that a terminal conceals from its line's start fails the upload with its
line (attack20b, twentieth session) -- in plain text, and in the other formats read as a terminal shows them (CSV,
code, SubRip, plain transcripts).

Plain text has no access markers: a line that looks like one fails the document (``registry``), so that a Markdown
text posted as plain text never has its marked sections ingested at the upload's access. The check ran on the file
as written and on the text a terminal shows; a marker whose line starts with the escape that conceals it
(``ESC[8m# access: restricted ESC[0m``) was in neither -- the escape before it on the file, cut with it from the
shown text -- and the upload passed, the marker ignored, while a marker comment concealed the same way fails
(docs/security.md, "Marker comments where they are never read")."""

from __future__ import annotations

import pytest

from ingestion.parsers import parse
from ingestion.structure import ParseError

E = "\x1b"
BODY = "# Intro\n\nOpen text.\n\n{line}\n\nThe plan.\n\n# Next\n\nMore.\n"


@pytest.mark.parametrize("line", [
    f"{E}[8m# access: restricted{E}[0m",  # concealed
    f"{E}[30;40m## Access: confidential; groups: board{E}[0m",  # black on black
    f"{E}[8maccess: restricted{E}[m",  # a bare key
    f"{E}[8m{E}]0;title{E}\\# access: restricted{E}[0m",  # a control string first, then the marker
    f"{E}]0;a\nb{E}\\{E}[8m# access: restricted{E}[0m",  # a line break inside a control string: lines as the file's
])
def test_a_line_marker_a_terminal_conceals_fails_with_its_line(line):
    with pytest.raises(ParseError) as failed:
        parse(BODY.format(line=line).encode(), content_type="text/plain", filename="notes.txt")
    assert failed.value.line == 5 + line.count("\n"), str(failed.value)
    assert "access marker" in str(failed.value)


def test_concealed_text_that_is_no_marker_still_parses_without_it():
    doc = parse(BODY.format(line=f"{E}[8mAccess: granted to everyone{E}[0m").encode(), content_type="text/plain",
                filename="notes.txt")
    assert "granted" not in doc.text and [s.title for s in doc.sections if s.title] == ["Intro", "Next"]


CONCEALED = f"{E}[8maccess: restricted{E}[0m"
OTHER_FORMATS = {  # a file of each other format read as a terminal shows it, the concealed marker on its line 3
    "table.csv": f"name,amount\nrent,10\n{CONCEALED},x\nfood,20\n",
    "module.py": f"def f():\n    pass\n{E}[8m# access: restricted{E}[0m\n\ndef g():\n    pass\n",
    "talk.srt": f"1\n00:00:00,000 --> 00:00:01,000\n{CONCEALED}\n\n2\n00:00:01,000 --> 00:00:02,000\nBye.\n",
}


@pytest.mark.parametrize("filename", sorted(OTHER_FORMATS))
def test_the_other_formats_read_as_a_terminal_shows_them_fail_it_too(filename):
    with pytest.raises(ParseError) as failed:
        parse(OTHER_FORMATS[filename].encode(), filename=filename)
    assert failed.value.line == 3 and "access marker" in str(failed.value), str(failed.value)
