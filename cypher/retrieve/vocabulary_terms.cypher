// A memory's vocabulary words, but those in $known (the words a process already holds), each with the key of its
// WordVector (embed_key), or its own vector where a Term written before WordVector holds it inline (base64 text,
// hypermem.store.packed, or a float list from an older ingest still), and the generation of one of them (all of a
// memory's Terms share it: hypermem.vocabulary; null when none is returned). One row of aligned lists ('' for a
// missing key or vector: collect() drops nulls): ~2,500 rows cost the client ~2x the time of one row of lists.
// $memory_id, $known
MATCH (t:Term)
WHERE t.memory_id = $memory_id AND NOT t.word IN $known
RETURN collect(t.word) AS words, collect(coalesce(t.embed_key, '')) AS embed_keys,
       collect(coalesce(t.embedding_b64, t.embedding, '')) AS embeddings, min(t.generation) AS generation
