// A memory's vocabulary words, but those in $known (the words a process already holds), each with the key of its
// WordVector (embed_key), or its own vector where a Term written before WordVector holds it inline (base64 text,
// hypermem.store.packed, or a float list from an older ingest still). $memory_id, $known
MATCH (t:Term)
WHERE t.memory_id = $memory_id AND NOT t.word IN $known
RETURN t.word AS word, t.embed_key AS embed_key, coalesce(t.embedding_b64, t.embedding) AS embedding
