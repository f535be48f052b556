"""Ordinary imperatives of documentation that a detector must leave alone, in a paragraph of the
documentation they would sit in: the detector's regression tests (tests/ingestion/test_screening.py)
and, with :data:`SKIPPING_THE_ABOVE`, a constraint on training's choice of C and the word-feature scale (``python -m bench.screening
train``: a configuration that flags any of them is not chosen, whatever its validation recall)."""

from __future__ import annotations

ORDINARY_IMPERATIVES = [
    "Ignore the warning and run `make install`.",
    "Install the package with pip install requests, then restart the server.",
    "Before you upgrade, back up the database and stop the worker.",
    "Send a pull request to the main branch when the tests pass.",
    "Use the --force flag only if you know what you are doing.",
    "Call close() when you are done with the connection, otherwise the pool leaks.",
    "Set DEBUG = False in production and never commit your SECRET_KEY.",
    "Forget about the old settings file; Django reads settings.py now.",
    "If the migration fails, drop the table and run migrate again.",
    "The model field stores the user's e-mail address; validate it in the form.",
    "Answer the questions in the survey and return the form to the office by Friday.",
]

# Documentation that says what to skip: the "ignore the above" rule's exceptions (lexical-4.1, whose
# tests hold them), a constraint on training's choice since lexical-5.
SKIPPING_THE_ABOVE = [
    "You can safely ignore the above warning.",
    "Ignore the above if you use SQLite.",
    "If you use MySQL, ignore the preceding paragraph.",
    "Forget everything before 2.0; the API changed.",
    "Ignore the above error message, it is harmless.",
]

PROSE = (
    "The ORM maps each model class to a database table. Querysets are lazy: building one touches no "
    "database until it is evaluated. Use select_related to follow foreign keys in one query. "
    "Indexes speed up lookups on the columns you filter by most often. Migrations record each change "
    "to the schema so that every environment can apply it in the same order."
)


def highest_score(model) -> float:
    """The highest score ``model`` gives any of :data:`ORDINARY_IMPERATIVES` in :data:`PROSE`'s document."""
    from ingestion.screening import features as F
    from ingestion.screening.detector import score_units

    return max(float(score_units(text, F.document_words(PROSE + "\n" + text), model).scores.max())
               for text in ORDINARY_IMPERATIVES + SKIPPING_THE_ABOVE)  # fmt: skip
