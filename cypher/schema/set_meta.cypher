MERGE (m:StoreMeta {id: 'meta'})
SET m.embedding_model = $embedding_model, m.dimension = $dimension
