// Raw model vectors of one memory's turns and facts, found by the key of the text they were encoded
// from (Embedder.text_key: model name + exact text), so an ingest embeds only texts it has not seen.
// Derived vectors (episode centroids, facts summed from turns, propagated vectors) carry no key.
// A raw_is_turn fact stores no embedding_raw: its vector is its one FROM_TURN turn's, bit for bit
// (read before the write clears and rewrites a session, so the turn still holds that vector).
// $memory_id, $keys
MATCH (t:Turn)
WHERE t.embed_key IN $keys AND t.memory_id = $memory_id AND t.embedding IS NOT NULL
RETURN t.embed_key AS key, t.embedding AS embedding
UNION ALL
MATCH (f:Fact)
WHERE f.embed_key IN $keys AND f.memory_id = $memory_id AND f.embedding_raw IS NOT NULL
RETURN f.embed_key AS key, f.embedding_raw AS embedding
UNION ALL
MATCH (f:Fact)
WHERE f.embed_key IN $keys AND f.memory_id = $memory_id AND f.raw_is_turn = true
MATCH (f)-[:FROM_TURN]->(t:Turn)
WHERE t.embedding IS NOT NULL
RETURN f.embed_key AS key, t.embedding AS embedding
