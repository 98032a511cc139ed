// Memories holding turns of a session no ingest has finished (no IngestState marker of it: an ingest or a reindex
// was interrupted), with the holder ("host:pid") of the memory's lock where its lease runs at $now (epoch seconds):
// a writer may still be finishing it.
MATCH (t:Turn)
WITH t.memory_id AS memory_id, collect(DISTINCT t.session) AS sessions
OPTIONAL MATCH (s:IngestState)
WHERE s.memory_id = memory_id
WITH memory_id, sessions, collect(s.session) AS done
WITH memory_id, size(sessions) AS sessions, size([x IN sessions WHERE NOT x IN done]) AS unfinished
WHERE unfinished > 0
OPTIONAL MATCH (l:MemoryLock)
WHERE l.memory = memory_id AND l.expires > $now
RETURN memory_id, sessions, unfinished, l.holder AS holder
ORDER BY memory_id
