// Stored turns of some sessions of one memory (to merge live messages into a session): the sessions
// $sessions, plus the sessions that hold any of the turns $ids now (the old session of a moved message).
OPTIONAL MATCH (m:Turn)
WHERE m.memory_id = $memory_id AND m.id IN $ids
WITH $sessions + collect(DISTINCT m.session) AS sessions
MATCH (t:Turn)
WHERE t.memory_id = $memory_id AND t.session IN sessions
RETURN t.id AS id, t.dia_id AS dia_id, t.speaker AS speaker, t.text AS text, t.timestamp AS timestamp,
       t.session AS session, t.seq AS seq, t.embedding AS embedding
ORDER BY t.seq
