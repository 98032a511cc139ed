// The embedding model and dimension this store was built with, and its vocabulary's version
// (hypermem.vocabulary.VERSION; null before the store had one).
MATCH (m:StoreMeta {id: 'meta'})
RETURN m.embedding_model AS embedding_model, m.dimension AS dimension, m.vocabulary AS vocabulary
