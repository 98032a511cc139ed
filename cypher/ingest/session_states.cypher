// Content hashes of the sessions whose ingest completed (resume marker).
MATCH (s:IngestState)
WHERE s.memory_id = $memory_id
RETURN s.session AS session, s.hash AS hash
