// Stored turns of some sessions of one memory (to merge live messages into a session).
MATCH (t:Turn)
WHERE t.memory_id = $memory_id AND t.session IN $sessions
RETURN t.id AS id, t.dia_id AS dia_id, t.speaker AS speaker, t.text AS text, t.timestamp AS timestamp,
       t.session AS session, t.seq AS seq, t.embedding AS embedding
ORDER BY t.seq
