// Forget one memory's turn vectors and session markers, so the next ingest re-embeds and rebuilds
// every session (the dialogue itself stays). $memory_id
MATCH (t:Turn)
WHERE t.memory_id = $memory_id
REMOVE t.embedding
WITH count(t) AS turns
OPTIONAL MATCH (s:IngestState)
WHERE s.memory_id = $memory_id
DELETE s
RETURN turns, count(s) AS markers
