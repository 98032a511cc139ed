"""One home for the search settings: the API schema, the CLI, the MCP tool, ``Settings`` and ``SearchConfig``
agree on names, defaults, bounds and choices, and every one of them refuses a bad value naming the field."""

from __future__ import annotations

import dataclasses
from typing import get_type_hints

import pydantic
import pytest
import typer.main
from marshmallow import ValidationError, fields, validate

from hypermem.api.schemas import QueryRequestSchema
from hypermem.cli import app
from hypermem.config import Settings
from hypermem.mcp_server import HypermemTools
from hypermem.retrieve.config import FROM_SETTINGS, MAX_QUERY_CHARS, SEARCH_FIELDS, SearchConfig

SCHEMA = QueryRequestSchema()


def _validator(field: fields.Field, kind: type):
    return next((v for v in field.validators if isinstance(v, kind)), None)


def test_the_api_schema_has_every_search_setting_with_its_bounds_and_help():
    assert set(SCHEMA.fields) == {"query", *SEARCH_FIELDS}
    assert _validator(SCHEMA.fields["query"], validate.Length).max == MAX_QUERY_CHARS
    for name, spec in SEARCH_FIELDS.items():
        field = SCHEMA.fields[name]
        assert field.metadata["description"] == spec.help
        if spec.kind is bool:
            assert isinstance(field, fields.Boolean)
        elif spec.kind is str:
            expected = {"stopping": ("adaptive", "fixed"), "turn_ranker": ("learned", "rrf")}[name]
            assert tuple(_validator(field, validate.OneOf).choices) == spec.choices == expected
        else:
            assert isinstance(field, fields.Integer if spec.kind is int else fields.Float)
            bounds = _validator(field, validate.Range)
            assert (bounds.min, bounds.max) == spec.bounds


def test_settings_and_search_config_share_defaults_and_bounds():
    config = SearchConfig()
    assert {f.name: f.default for f in dataclasses.fields(SearchConfig)} == {
        name: spec.default for name, spec in SEARCH_FIELDS.items()
    }
    assert SearchConfig.from_settings(Settings(llm_base_url=None)) == config
    for name in FROM_SETTINGS:
        info = Settings.model_fields[name]
        assert info.default == getattr(config, name) == SEARCH_FIELDS[name].default
        low, high = SEARCH_FIELDS[name].bounds or (None, None)
        limits = {type(m).__name__: m for m in info.metadata}
        assert (getattr(limits.get("Ge"), "ge", None), getattr(limits.get("Le"), "le", None)) == (low, high)
        if SEARCH_FIELDS[name].bounds:
            with pytest.raises(pydantic.ValidationError, match=name):
                Settings(**{name: high + 1})


def test_the_cli_and_the_mcp_tool_take_the_same_bounds():
    command = typer.main.get_command(app)
    query = command.commands["query"]
    options = {p.name: p for p in query.params if p.param_type_name == "option" and p.name in SEARCH_FIELDS}
    assert set(options) == {"stopping", "turn_budget"}
    for name, option in options.items():
        spec = SEARCH_FIELDS[name]
        assert option.opts == ["--" + name.replace("_", "-")] and option.help == spec.help
        assert option.default is None  # unset: the configured default (Settings)
        if spec.bounds:
            assert (option.min, option.max) == spec.bounds
    hints = get_type_hints(HypermemTools.query_memory, include_extras=True)
    budget = hints["turn_budget"].__metadata__[0]
    limits = {type(m).__name__: m for m in budget.metadata}
    assert (limits["Ge"].ge, limits["Le"].le) == SEARCH_FIELDS["turn_budget"].bounds
    assert budget.description == SEARCH_FIELDS["turn_budget"].help


@pytest.mark.parametrize(
    ("name", "bad"),
    [("k_topic", 0), ("k_fact", 501), ("rrf_k", 501), ("turn_budget", "ten"), ("min_facts", 1.5),
     ("flat_weight", 10.5), ("flat_weight", -1), ("stopping", "never"), ("flat", "yes")],
)  # fmt: skip
def test_a_bad_value_is_refused_everywhere_naming_the_field(name, bad):
    with pytest.raises(ValueError, match=rf"^{name}: must be "):
        SearchConfig.from_settings(Settings(llm_base_url=None), **{name: bad})
    with pytest.raises(ValidationError) as refused:
        SCHEMA.load({"query": "where?", name: bad})
    assert set(refused.value.messages) == {name}


@pytest.mark.parametrize(("name", "edge"), [("k_topic", 1), ("k_fact", 500), ("flat_weight", 0), ("flat_weight", 10)])
def test_the_bounds_themselves_are_accepted_everywhere(name, edge):
    assert getattr(SearchConfig.from_settings(Settings(llm_base_url=None), **{name: edge}), name) == edge
    assert SCHEMA.load({"query": "where?", name: edge})[name] == edge


@pytest.mark.parametrize(("url", "problem"), [("http://[::1", "not a URL"), ("http://localhost:99999/v1", "not a URL"),
                                             ("notaurl", "http:// or https://"), ("ftp://x", "http:// or https://"),
                                             ("http://h:0", "port 0"), (" http://x", "whitespace"),
                                             ("http://x y", "whitespace")])  # fmt: skip
def test_a_bad_llm_url_is_refused_at_start_naming_the_setting(url, problem):
    with pytest.raises(pydantic.ValidationError, match=problem) as refused:
        Settings(llm_base_url=url)
    assert refused.value.errors()[0]["loc"] == ("llm_base_url",)


def test_an_llm_url_is_kept_and_an_empty_one_is_the_no_llm_path():
    assert Settings(llm_base_url="http://localhost:8080/v1").llm_base_url == "http://localhost:8080/v1"
    assert not Settings(llm_base_url="").llm_enabled


@pytest.mark.parametrize(("value", "expected"), [("", False), ("  ", False), ("true", True), ("0", False)])
def test_an_empty_vector_index_setting_is_the_default(monkeypatch, value, expected):
    monkeypatch.setenv("HYPERMEM_FALKORDB_VECTOR_INDEXES", value)
    assert Settings().falkordb_vector_indexes is expected


def test_a_bad_vector_index_setting_is_refused_naming_it(monkeypatch):
    monkeypatch.setenv("HYPERMEM_FALKORDB_VECTOR_INDEXES", "sometimes")
    with pytest.raises(pydantic.ValidationError) as refused:
        Settings()
    assert refused.value.errors()[0]["loc"] == ("falkordb_vector_indexes",)


def test_an_empty_store_setting_is_the_default_store(monkeypatch):
    monkeypatch.setenv("HYPERMEM_STORE", "")
    assert Settings().store == Settings.model_fields["store"].default
    assert Settings().store.startswith("falkordb://")


@pytest.mark.parametrize(
    ("value", "url"),
    [("/srv/hypermem data", "falkordb:///srv/hypermem%20data"), ("./data", "falkordb:///work/here/data"),
     ("../data", "falkordb:///work/data"), ("~/hypermem", "falkordb:///home/ana/hypermem")],
)  # fmt: skip
def test_a_bare_store_path_is_refused_with_the_url_that_names_it(monkeypatch, value, url):
    monkeypatch.setattr("os.getcwd", lambda: "/work/here")
    monkeypatch.setenv("HOME", "/home/ana")
    monkeypatch.setenv("HYPERMEM_STORE", value)
    with pytest.raises(pydantic.ValidationError) as refused:
        Settings()
    assert refused.value.errors()[0]["loc"] == ("store",)
    assert f"use {url}" in str(refused.value)
    monkeypatch.setenv("HYPERMEM_STORE", url)
    assert Settings().store == url
