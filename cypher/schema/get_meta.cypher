// The embedding model and dimension this store was built with, and its vocabulary's version
// (hypermem.vocabulary.VERSION; null before the store had one) and its corpus statistics' (GraphStore.ensure_corpus_stats).
MATCH (m:StoreMeta {id: 'meta'})
RETURN m.embedding_model AS embedding_model, m.dimension AS dimension, m.vocabulary AS vocabulary,
       m.corpus_stats AS corpus_stats
