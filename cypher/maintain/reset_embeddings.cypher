// Forget one memory's turn vectors, the keys of its raw vectors and its session markers, so the next
// ingest re-embeds and rebuilds every session (the dialogue itself stays). $memory_id
MATCH (t:Turn)
WHERE t.memory_id = $memory_id
REMOVE t.embedding, t.embed_key
WITH count(t) AS turns
OPTIONAL MATCH (f:Fact)
WHERE f.memory_id = $memory_id
REMOVE f.embed_key
WITH turns, count(f) AS facts
OPTIONAL MATCH (s:IngestState)
WHERE s.memory_id = $memory_id
DELETE s
RETURN turns, count(s) AS markers
