// A memory's vocabulary words and their vectors, but those in $known (the words a process already holds).
// A vector is the Term's base64 text (hypermem.store.packed), or its float list when an older ingest wrote it.
// $memory_id, $known
MATCH (t:Term)
WHERE t.memory_id = $memory_id AND NOT t.word IN $known
RETURN t.word AS word, coalesce(t.embedding_b64, t.embedding) AS embedding
