"""The API's one JSON body parser: every body that cannot be parsed is DRF's ParseError (a 400 in
the API's error shape), never a 500.

DRF's own parser turns ``ValueError`` into ParseError, but nesting deeper than Python's
recursion limit (``"[" * 50000``) raises RecursionError from inside ``json``; and a body that
parses but nests hundreds of levels deep only makes trouble further on (serializers, logging,
anything recursive). No request of this API nests more than a few levels, so the parsed value
must stay within :data:`MAX_JSON_DEPTH`.
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 32


def json_depth_exceeds(value, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether arrays/objects nest more than ``limit`` levels (iterative: no recursion of our own)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class SafeJSONParser(JSONParser):
    """DRF's JSONParser, with RecursionError and over-deep nesting answered as ParseError."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply") from None
        except LookupError:  # a charset no codec reads (DRF turns only ValueError into ParseError)
            raise ParseError("JSON parse error - unknown charset") from None
        if json_depth_exceeds(data):
            raise ParseError(f"JSON parse error - the body is nested more than {MAX_JSON_DEPTH} levels deep")
        return data
