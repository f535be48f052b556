"""The search's modes are declared once (``kb.search_modes``): the engine, the API's serializer, the
console's forms and ``kb_search`` offer exactly them, with the same defaults -- none can drift; and
every declared mode and way to expand has exactly one row in the engine's tables (``kb.retrieval``,
``kb.expansion``)."""

from __future__ import annotations

import argparse
import inspect

import pytest

from accounts.errors import ApplicationError
from console.forms import EvaluateForm, SearchForm
from kb import expansion, retrieval, search_modes
from kb import search as engine
from kb.management.commands.kb_search import Command as SearchCommand
from kb.serializers import SearchInputSerializer

DECLARED = {
    "mode": (search_modes.MODES, search_modes.DEFAULT_MODE),
    "expand": (search_modes.EXPANDS, search_modes.DEFAULT_EXPAND),
    "expand_level": (search_modes.EXPAND_LEVELS, search_modes.DEFAULT_EXPAND_LEVEL),
}
VALID = {"query": "q", "top_k": 5, "mode": "hybrid", "expand": "parent", "expand_level": "leaf", "max_contexts": 5,
         "context_token_budget": 100, "neighbors": 1}


def test_the_engine_accepts_exactly_the_declared_choices_with_the_declared_defaults():
    defaults = inspect.signature(engine.search).parameters
    for name, (choices, default) in DECLARED.items():
        assert defaults[name].default == default
        for choice in choices:
            engine._validate(**{**VALID, name: choice})
        with pytest.raises(ApplicationError, match=f"{name} must be one of {', '.join(choices)}"):
            engine._validate(**{**VALID, name: "not-a-" + name})
    assert (engine.MAX_TOP_K, engine.MAX_QUERY_CHARS) == (search_modes.MAX_TOP_K, search_modes.MAX_QUERY_CHARS)


def test_the_api_serializer_offers_the_declared_choices():
    fields = SearchInputSerializer().fields
    for name, (choices, default) in DECLARED.items():
        assert list(fields[name].choices) == list(choices)
        assert fields[name].default == default
    assert fields["top_k"].max_value == search_modes.MAX_TOP_K
    assert fields["query"].max_length == search_modes.MAX_QUERY_CHARS


def test_the_console_forms_offer_the_declared_choices():
    form = SearchForm()
    for name, (choices, default) in DECLARED.items():
        assert [value for value, _ in form.fields[name].choices] == list(choices)
        assert form.fields[name].initial == default
    evaluate = EvaluateForm()
    assert [value for value, _ in evaluate.fields["mode"].choices] == list(search_modes.MODES)
    assert evaluate.fields["mode"].initial == search_modes.DEFAULT_MODE


def test_the_command_offers_the_declared_choices():
    parser = argparse.ArgumentParser()
    SearchCommand().add_arguments(parser)
    options = {action.dest: action for action in parser._actions}
    for name, dest in (("mode", "mode"), ("expand", "expand"), ("expand_level", "level")):
        choices, default = DECLARED[name]
        assert list(options[dest].choices) == list(choices)
        assert options[dest].default == default


def test_every_declared_mode_has_exactly_one_row_in_the_retrieval_table():
    assert tuple(retrieval.RETRIEVAL_MODES) == search_modes.MODES
    # Only the modes that rank by vector embed the query (a keyword search never loads the model).
    assert {name for name, row in retrieval.RETRIEVAL_MODES.items() if row.embeds} == {"vector", "hybrid"}


def test_every_declared_way_to_expand_has_exactly_one_row_in_the_expansion_table():
    assert tuple(expansion.EXPANSIONS) == search_modes.EXPANDS


def test_every_way_in_leaves_the_budget_fill_to_the_server_when_not_asked():
    """The budget fill's default is one constant (``kb.search_modes.DEFAULT_BUDGET_FILL``), read by the engine: every
    way in passes None when its caller says nothing -- a way in with a default of its own would not follow a flip."""
    from bulkhead_client._client import _Operations

    from kb.mcp_server import search_tool

    assert inspect.signature(engine.search).parameters["budget_fill"].default is None
    field = SearchInputSerializer().fields["budget_fill"]
    assert not field.required and field.default is None
    for body, value in (({}, None), ({"budget_fill": None}, None), ({"budget_fill": True}, True),
                        ({"budget_fill": False}, False)):
        given = SearchInputSerializer(data={"query": "q", **body})
        assert given.is_valid(), given.errors
        assert given.validated_data["budget_fill"] is value
    assert inspect.signature(search_tool).parameters["budget_fill"].default is None
    parser = argparse.ArgumentParser()
    SearchCommand().add_arguments(parser)
    assert parser.parse_args(["q", "--tenant", "t", "--as", "e"]).budget_fill is None
    assert parser.parse_args(["q", "--tenant", "t", "--as", "e", "--no-budget-fill"]).budget_fill is False

    class Sent(_Operations):
        def _send(self, request):
            return request.json

    client = Sent()
    assert inspect.signature(_Operations.search).parameters["budget_fill"].default is None
    assert "budget_fill" not in client.search("q")  # not sent: the server's default
    assert "budget_fill" not in client.search("q", budget_fill=None)
    assert client.search("q", budget_fill=False)["budget_fill"] is False
    assert client.search("q", budget_fill=True)["budget_fill"] is True
