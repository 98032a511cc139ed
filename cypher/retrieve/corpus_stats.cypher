// A memory's BM25 statistics (hypermem.store.bm25), one row per searched label its CorpusStats node counts (written
// by every ingest, GraphStore.refresh_corpus_stats): documents and words (Σ whitespace-separated words of speaker
// and text) per speaker, as aligned lists ('' for no speaker). $memory_id
MATCH (s:CorpusStats)
WHERE s.memory_id = $memory_id
RETURN s.label AS label, s.speakers AS speakers, s.documents AS documents, s.words AS words
