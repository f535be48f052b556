"""Serializer fields shared by the API's serializers."""

from __future__ import annotations

from rest_framework import serializers


class LimitedCharField(serializers.CharField):
    """A CharField whose ``max_length`` holds for the string as sent.

    DRF trims whitespace first and checks the length after, so a 1,001-character value
    ending in whitespace passed a ``maxLength: 1000`` the OpenAPI schema promises to refuse
    (found by the schemathesis test). The length is checked before trimming here.

    DRF also turns a number into its string (``{"name": 21890853158}`` was accepted against the
    schema's ``type: string``, also found by schemathesis): only a JSON string is a string here.
    """

    default_error_messages = {"not_a_string": "Not a valid string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class QueryParametersSerializer(serializers.Serializer):
    """A serializer of a request's query parameters that refuses (400, naming it) a parameter it does not know
    and one given twice: ignored, a misspelt filter (``?tagg=``) listed everything unfiltered and a repeated one
    (``?tag=a&tag=b``) silently took its last value (found attacking the read paths). ``extra_parameters``: the
    others the view reads itself (the pagination's ``limit`` and ``offset``); ``format`` (DRF's content
    negotiation) is always known."""

    extra_parameters: tuple[str, ...] = ()

    @classmethod
    def known_parameters(cls) -> set[str]:
        """The names this serializer takes, ``format`` included."""
        return {*cls._declared_fields, *cls.extra_parameters, "format"}

    @classmethod
    def check_names(cls, data) -> None:
        """Refuse (a ValidationError naming it) a parameter of ``data`` (a QueryDict) this serializer does not
        know, or one given more than once. Also run before every API GET (``accounts.apis.MemberAPIView``)."""
        if not hasattr(data, "getlist"):
            return
        known = cls.known_parameters()
        for name in sorted(data):
            if name not in known:
                listed = ", ".join(sorted(known - {"format"})) or "none"
                raise serializers.ValidationError({name: [f"unknown query parameter; known: {listed}"]})
            if len(data.getlist(name)) > 1:
                raise serializers.ValidationError({name: ["given more than once; give it once"]})

    def to_internal_value(self, data):
        self.check_names(data)
        return super().to_internal_value(data)


class PageParameters(QueryParametersSerializer):
    """A list's query string without filters: the pagination's ``limit`` and ``offset`` alone."""

    extra_parameters = ("limit", "offset")
