// Record that every memory of the store has its CorpusStats nodes, at version $version (GraphStore.ensure_corpus_stats).
MERGE (m:StoreMeta {id: 'meta'})
SET m.corpus_stats = $version
