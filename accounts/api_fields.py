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

    def to_internal_value(self, data):
        if hasattr(data, "getlist"):
            known = {*self.fields, *self.extra_parameters, "format"}
            for name in sorted(data):
                if name not in known:
                    raise serializers.ValidationError(
                        {name: [f"unknown query parameter; known: {', '.join(sorted(known - {'format'}))}"]})
                if len(data.getlist(name)) > 1:
                    raise serializers.ValidationError({name: ["given more than once; give it once"]})
        return super().to_internal_value(data)
