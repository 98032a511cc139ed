// Add words to a memory's vocabulary with their embedding (hypermem.vocabulary); a word already there
// keeps its node (another process may have added it first). generation: the memory's vocabulary
// generation (a random id its first Terms get), by which a process's copy is checked. embed_key
// (Embedder.text_key of the word: model name + word) lets another memory take the vector
// (ingest/term_vectors) instead of embedding the word again.
// $rows: [{memory_id, id, word, embedding, generation, embed_key}]
UNWIND $rows AS r
MERGE (t:Term {id: r.id})
ON CREATE SET t.memory_id = r.memory_id, t.word = r.word, t.generation = r.generation,
  t.embedding = vecf32(r.embedding), t.embed_key = r.embed_key
