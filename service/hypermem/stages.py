"""The one place that chooses the LLM or no-LLM implementation of every pipeline stage.

``Ingestor`` and ``Retriever`` take their stages ready-made (as graphiti-core's ``Graphiti`` takes its
``llm_client``, ``embedder`` and ``cross_encoder``), typed by the stage Protocols, so a test or a
variant can hand in any implementation. ``MemoryService`` builds them here from its settings and
optional LLM client; every LLM stage falls back to its no-LLM twin when the LLM fails.

=====================  ===============================  ==========================
stage                  no LLM                           LLM
=====================  ===============================  ==========================
segmenter              ``DriftSegmenter``               ``LLMSegmenter``
fact extractor         ``TurnFactExtractor``            ``LLMFactExtractor``
topic assigner         ``CentroidTopicAssigner``        ``LLMTopicAssigner``
query analyzer         ``RuleQueryAnalyzer``            ``LLMQueryAnalyzer``
turn selector          ``KeepAllTurns``                 ``LLMTurnSelector``
answerer               ``NoAnswer``                     ``LLMAnswerer``
=====================  ===============================  ==========================
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hypermem.config import Settings
from hypermem.dates import DateResolver
from hypermem.embed import Embedder
from hypermem.ingest.annotate import Annotator
from hypermem.ingest.boundaries import DriftSegmenter, LLMSegmenter, Segmenter
from hypermem.ingest.facts import FactExtractor, LLMFactExtractor, TurnFactExtractor
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.passages import PassageSplitter
from hypermem.ingest.topics import CentroidTopicAssigner, LLMTopicAssigner, TopicAssigner
from hypermem.llm.prompts.common import CompletionClient
from hypermem.retrieve.analysis import LLMQueryAnalyzer, QueryAnalyzer, RuleQueryAnalyzer
from hypermem.retrieve.answer import Answerer, LLMAnswerer, NoAnswer
from hypermem.retrieve.selection import KeepAllTurns, LLMTurnSelector, TurnSelector

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestStages:
    """The ingest stages. ``keywords`` (YAKE, cached) is shared by the turn facts, episode titles and topic
    titles; ``annotator`` runs spaCy NER + dates (and the per-turn keywords) on both paths, in the
    annotation worker process for large ingests; ``llm`` says whether any stage asks an LLM."""

    keywords: KeywordExtractor
    annotator: Annotator
    segmenter: Segmenter
    fact_extractor: FactExtractor
    topic_assigner: TopicAssigner
    llm: bool = False


@dataclass(frozen=True)
class RetrievalStages:
    """The query stages that have an LLM variant."""

    analyzer: QueryAnalyzer
    turn_selector: TurnSelector
    answerer: Answerer


def ingest_stages(settings: Settings, embedder: Embedder, llm: CompletionClient | None = None) -> IngestStages:
    """The ingest stages for ``settings``: the LLM ones with ``llm`` (an ``LLMClient``), else the no-LLM ones.
    ``embedder`` counts tokens for the passages of long turns. spaCy (``settings.spacy_model``) loads on the
    first annotation, in the worker process or in this one."""
    keywords = KeywordExtractor()
    annotator = Annotator(settings.spacy_model, settings.ingest_nice)
    turn_facts = TurnFactExtractor(keywords, PassageSplitter(embedder.count_tokens))
    if llm is None:
        log.info("no LLM configured: ingest runs the no-LLM path (embeddings, NER, dateparser, YAKE)")
        return IngestStages(
            keywords, annotator, DriftSegmenter(), turn_facts, CentroidTopicAssigner(settings.topic_join_similarity)
        )
    return IngestStages(
        keywords,
        annotator,
        LLMSegmenter(llm),
        LLMFactExtractor(llm, turn_facts),
        LLMTopicAssigner(llm, settings.topic_join_similarity),
        llm=True,
    )


def retrieval_stages(llm: CompletionClient | None = None) -> RetrievalStages:
    """The query stages: the LLM ones with ``llm`` (an ``LLMClient``), else the no-LLM ones."""
    dates = DateResolver()
    if llm is None:
        return RetrievalStages(RuleQueryAnalyzer(dates), KeepAllTurns(), NoAnswer())
    return RetrievalStages(LLMQueryAnalyzer(dates, llm), LLMTurnSelector(llm), LLMAnswerer(llm))
