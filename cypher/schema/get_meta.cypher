// The embedding model and dimension this store was built with.
MATCH (m:StoreMeta {id: 'meta'})
RETURN m.embedding_model AS embedding_model, m.dimension AS dimension
