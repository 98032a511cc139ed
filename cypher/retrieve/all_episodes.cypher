// Every episode of a memory (the no-topic ablation skips the topic level).
MATCH (e:Episode)
WHERE e.memory_id = $memory_id
RETURN e.id AS id
