"""Shared fixtures for the ingest, retrieve and CLI tests.

Per engine (``hm_engine``: the embedded FalkorDB always, Neo4j when ``NEO4J_URI`` is set, marked
``neo4j``; see ``tests/engines.py``), one store and one ``MemoryService`` (real embeddings, real
spaCy, no LLM) serve the whole test session; the small conversation written for the tests (``TESTCONV``,
not taken from LoCoMo) is ingested into it once, as memory ``testconv``. Tests that change a
memory (incremental ingest, bad input) work on memory ids of their own in the same store.

Fixture names start with ``hm_`` so that they cannot clash with the fixtures other test
files define for themselves (``store``, ``embedder``, ``app``, ...).

LoCoMo fixtures skip with a reason when ``../shared/data/locomo-dev.json`` is absent.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from engines import ENGINES, engine_settings

from hypermem.config import Settings
from hypermem.ingest.locomo import conversation_from_record, load_locomo
from hypermem.model import Conversation
from hypermem.service import MemoryService

LOCOMO = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo-dev.json"
TESTCONV_ID = "testconv"

# --- the test conversation: 3 sessions, 2 speakers, relative dates, a photo, a move, a third person ---------
# Session dates: Monday 12 June 2023, Monday 26 June 2023, Saturday 15 July 2023.
TESTCONV_SESSIONS: list[tuple[str, list[dict]]] = [
    ("2:15 pm on 12 June, 2023", [
        {"speaker": "Nadia", "dia_id": "D1:1",
         "text": "Hi Omar! I ran the Porto half marathon last Saturday and finished in under two hours."},
        {"speaker": "Omar", "dia_id": "D1:2", "text": "Congratulations Nadia! I adopted a puppy yesterday, look at him.",
         "blip_caption": "a photo of a golden retriever puppy sitting on a sandy beach"},
        {"speaker": "Nadia", "dia_id": "D1:3", "text": "He is adorable! What did you name him?"},
        {"speaker": "Omar", "dia_id": "D1:4",
         "text": "His name is Biscuit. My sister Leila helped me pick him at the shelter."},
        {"speaker": "Nadia", "dia_id": "D1:5", "text": "Lovely name. I still live in Lisbon, so bring him to visit sometime."},
    ]),
    ("7:30 pm on 26 June, 2023", [
        {"speaker": "Nadia", "dia_id": "D2:1", "text": "Omar, I started a pottery class two weeks ago at a studio near my flat."},
        {"speaker": "Omar", "dia_id": "D2:2", "text": "Pottery sounds fun! Have you made anything on the wheel yet?"},
        {"speaker": "Nadia", "dia_id": "D2:3", "text": "I threw my first bowl on the wheel, but it collapsed when I trimmed it."},
        {"speaker": "Omar", "dia_id": "D2:4", "text": "Clay is tricky. Did the teacher show you how to centre it properly?"},
        {"speaker": "Nadia", "dia_id": "D2:5", "text": "Yes, she made me practise centring the clay for an hour before glazing."},
        {"speaker": "Omar", "dia_id": "D2:6", "text": "Next time glaze it blue, blue glaze on stoneware looks amazing."},
        {"speaker": "Omar", "dia_id": "D2:7", "text": "By the way, I went camping in the Geres mountains a few days ago."},
        {"speaker": "Nadia", "dia_id": "D2:8", "text": "Camping! Did you sleep in a tent or rent a cabin?"},
        {"speaker": "Omar", "dia_id": "D2:9", "text": "A tent. It rained all night and the campfire kept going out."},
        {"speaker": "Nadia", "dia_id": "D2:10", "text": "Did the puppy enjoy hiking on the mountain trails?"},
        {"speaker": "Omar", "dia_id": "D2:11", "text": "He loved the trails and swam in the river next to our tent."},
        {"speaker": "Nadia", "dia_id": "D2:12", "text": "Haha yes, thanks!"},
    ]),
    ("10:05 am on 15 July, 2023", [
        {"speaker": "Nadia", "dia_id": "D3:1",
         "text": "Big news, Omar: I moved from Lisbon to Berlin for a new job as a data engineer."},
        {"speaker": "Omar", "dia_id": "D3:2", "text": "Wow, Berlin! When did you arrive?"},
        {"speaker": "Nadia", "dia_id": "D3:3",
         "text": "I flew in last weekend and signed the lease for my apartment in Kreuzberg."},
        {"speaker": "Omar", "dia_id": "D3:4", "text": "Congratulations! Are you still doing pottery in Berlin?"},
        {"speaker": "Nadia", "dia_id": "D3:5", "text": "Not yet, but I found a studio in Neukolln that teaches wheel throwing."},
    ]),
]  # fmt: skip


def make_testconv_record(sample_id: str = TESTCONV_ID, edits: dict[str, str] | None = None) -> dict:
    """The test conversation as one LoCoMo record; ``edits`` maps dia_id -> replacement text."""
    conversation: dict = {"speaker_a": "Nadia", "speaker_b": "Omar"}
    for number, (when, turns) in enumerate(TESTCONV_SESSIONS, start=1):
        turns = copy.deepcopy(turns)
        for turn in turns:
            if edits and turn["dia_id"] in edits:
                turn["text"] = edits[turn["dia_id"]]
        conversation[f"session_{number}_date_time"] = when
        conversation[f"session_{number}"] = turns
    return {"sample_id": sample_id, "conversation": conversation, "qa": []}


def topic_similarity(vector: np.ndarray, members: list[np.ndarray], center: np.ndarray) -> float:
    """The documented topic-join score, by hand: cosine of ``vector`` and the topic centroid (unit mean of
    its members' unit vectors), both centred on ``center`` (the mean episode vector of the memory)."""
    unit = [m / np.linalg.norm(m) for m in members]
    centroid = np.mean(unit, axis=0)
    centroid = centroid / np.linalg.norm(centroid)
    a, b = vector - center, centroid - center
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / denominator if denominator else 0.0


def expected_propagation(members: dict[str, tuple[np.ndarray, float]], lam: float) -> dict[str, np.ndarray]:
    """HyperMem propagation by hand for nodes in exactly one hyperedge: ``members`` id -> (raw vector, weight);
    h_e = Σ softmax(w)·h ; h' = unit(h + λ·h_e)."""
    w = np.array([m[1] for m in members.values()])
    soft = np.exp(w) / np.exp(w).sum()
    h_e = sum(s * m[0] for s, m in zip(soft, members.values()))
    out = {}
    for key, (raw, _) in members.items():
        vector = raw + lam * h_e
        out[key] = vector / np.linalg.norm(vector)
    return out


@dataclass(frozen=True)
class Ingested:
    """A memory ingested once for the session: its id, the conversation and the ingest report."""

    memory_id: str
    conversation: Conversation
    report: object


def hm_make_settings(path: Path, **extra) -> Settings:
    """Settings for an embedded store at ``path``, no LLM whatever the environment says
    (``engines.engine_settings`` for a store on either engine)."""
    return engine_settings("falkordb", path, **extra)


@pytest.fixture(scope="session")
def hm_extractor():
    """The no-LLM element extractor (spaCy NER + dates); skips when the spaCy model is not installed."""
    from hypermem.ingest.elements import ElementExtractor, load_spacy

    found = ElementExtractor()
    if load_spacy(found.spacy_model) is None:
        pytest.skip("spaCy model not installed")
    return found


@pytest.fixture(scope="session", params=ENGINES)
def hm_engine(request) -> str:
    """The engine of the session store: ``"falkordb"``, then ``"neo4j"`` (marked ``neo4j``; skips without NEO4J_URI).

    Every fixture and test built on it runs once per engine.
    """
    return request.param


@pytest.fixture(scope="session")
def hm_store_dir(tmp_path_factory) -> Path:
    """Where the session's embedded FalkorDB keeps its data (unused on Neo4j)."""
    return tmp_path_factory.mktemp("hm-store") / "db"


@pytest.fixture(scope="session")
def hm_settings(hm_engine, hm_store_dir) -> Settings:
    """Settings of the session store on ``hm_engine``, no LLM (``engines.engine_env`` turns them into env vars)."""
    return engine_settings(hm_engine, hm_store_dir)


@pytest.fixture(scope="session")
def hm_service(hm_settings):
    """One MemoryService (real embeddings, no LLM) on the session store, per engine."""
    svc = MemoryService.open(hm_settings, use_llm=False)
    yield svc
    svc.close()


@pytest.fixture(scope="session")
def hm_testconv() -> Conversation:
    """The test conversation, parsed by the LoCoMo loader."""
    return conversation_from_record(make_testconv_record())


@pytest.fixture(scope="session")
def hm_testconv_file(tmp_path_factory) -> Path:
    """The test conversation as a LoCoMo JSON file."""
    path = tmp_path_factory.mktemp("hm-data") / "testconv.json"
    path.write_text(json.dumps([make_testconv_record()]), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def hm_ingested(hm_service, hm_testconv) -> Ingested:
    """The test conversation ingested once as memory ``testconv``. Do not modify this memory."""
    report = hm_service.ingest_conversation(hm_testconv)
    return Ingested(TESTCONV_ID, hm_testconv, report)


def _locomo(hm_service, sample_id: str) -> Ingested:
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo dev data not found at {LOCOMO}")
    conversation = load_locomo(LOCOMO, [sample_id])[0]
    return Ingested(sample_id, conversation, hm_service.ingest_conversation(conversation))


@pytest.fixture(scope="session")
def hm_conv30(hm_service) -> Ingested:
    """LoCoMo conv-30 (the smallest dev conversation) ingested once, no LLM."""
    return _locomo(hm_service, "conv-30")


@pytest.fixture(scope="session")
def hm_conv26(hm_service) -> Ingested:
    """LoCoMo conv-26 (issue 4's must-show example) ingested once, no LLM."""
    return _locomo(hm_service, "conv-26")


@pytest.fixture(scope="session")
def hm_locomo_qa() -> dict[str, list[dict]]:
    """LoCoMo questions by sample_id (for gold dia_ids)."""
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo dev data not found at {LOCOMO}")
    return {r["sample_id"]: r["qa"] for r in json.loads(LOCOMO.read_text(encoding="utf-8"))}
