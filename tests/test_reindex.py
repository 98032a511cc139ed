"""``hypermem reindex`` and readiness (issue 9 §7): a store recorded with another embedding model
refuses to open, readiness says why, and the reindex is the way forward without losing dialogue."""

from __future__ import annotations

import pytest
from conftest import hm_make_settings
from test_faults import conversation
from typer.testing import CliRunner

from hypermem.api import create_app
from hypermem.cli import app as cli
from hypermem.service import MemoryService
from hypermem.store import SchemaMismatch
from hypermem.store.falkordb import FalkorDBStore
from hypermem.store.packed import pack_vector, unpack_vector


def test_reindex_re_embeds_a_store_built_with_another_model(tmp_path, hm_service, monkeypatch):
    data = tmp_path / "db"
    store = FalkorDBStore(data)  # owns the server: close() stops it (the CLI below joins it)
    service = MemoryService(hm_make_settings(data), store, hm_service.embedder, use_llm=False)
    service.ingest_messages("old", conversation(24, 2))
    before = store.counts("old")
    question = "What did Ben say about the pottery class?"
    answer_before = [t.dia_id for t in service.query("old", question).turns]
    client = create_app(hm_make_settings(data), service).test_client()
    assert client.get("/v1/ready").status_code == 200
    # the store now says it was built with an 8-dimensional model, with vectors to match
    store.drop_vector_indexes()
    store.run_cypher(
        "MATCH (n) WHERE n.memory_id = 'old' AND n.embedding IS NOT NULL SET n.embedding = vecf32([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])"
    )
    store.run_cypher("MATCH (v:WordVector) SET v.embedding_b64 = $v", {"v": pack_vector([0.5] * 8)})
    store.query("schema/set_meta", embedding_model="old-8d-model", dimension=8)
    ready = client.get("/v1/ready")
    assert (
        ready.status_code == 503
        and "old-8d-model" in ready.get_json()["message"]
        and "hypermem reindex" in ready.get_json()["message"]
    )
    with pytest.raises(SchemaMismatch, match="hypermem reindex"):
        MemoryService(hm_make_settings(data), store, hm_service.embedder, use_llm=False)

    monkeypatch.setenv("HYPERMEM_STORE", f"falkordb://{data}")
    monkeypatch.setenv("HYPERMEM_LLM_BASE_URL", "")
    result = CliRunner().invoke(cli, ["reindex"])
    assert result.exit_code == 0, (result.output, __import__("traceback").format_exception(*result.exc_info))
    assert "old: 24 turns re-embedded" in result.output and "old-8d-model (8 dimensions) -> " in result.output

    assert client.get("/v1/ready").status_code == 200
    assert store.meta()["dimension"] == hm_service.embedder.dimension
    assert store.counts("old") == before
    terms = store.run_cypher("MATCH (v:WordVector) RETURN v.embedding_b64 AS v")
    assert len(terms) > 10 and {len(unpack_vector(t["v"])) for t in terms} == {
        hm_service.embedder.dimension
    }  # re-embedded too
    after = [t.dia_id for t in service.query("old", question).turns]
    assert sorted(after) == sorted(answer_before), (after, answer_before)
    store.close()
