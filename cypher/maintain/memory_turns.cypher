// Every turn of one memory in dialogue order (what a re-ingest needs). $memory_id
MATCH (t:Turn)
WHERE t.memory_id = $memory_id
RETURN t.dia_id AS dia_id, t.speaker AS speaker, t.text AS text, t.timestamp AS timestamp, t.session AS session
ORDER BY t.seq
