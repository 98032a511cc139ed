// Add words to a memory's vocabulary with their embedding (hypermem.vocabulary); a word already there
// keeps its node (another process may have added it first). generation: the memory's vocabulary
// generation (a random id its first Terms get), by which a process's copy is checked. embed_key
// (Embedder.text_key of the word: model name + word) lets another memory take the vector
// (ingest/term_vectors) instead of embedding the word again.
// The vector is stored as text, base64 of its float32 bytes (hypermem.store.packed): read in one piece, where a
// vector property comes back one number at a time. Terms written before it hold t.embedding instead.
// $rows: [{memory_id, id, word, embedding_b64, generation, embed_key}]
UNWIND $rows AS r
MERGE (t:Term {id: r.id})
ON CREATE SET t.memory_id = r.memory_id, t.word = r.word, t.generation = r.generation,
  t.embedding_b64 = r.embedding_b64, t.embed_key = r.embed_key
