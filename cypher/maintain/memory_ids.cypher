MATCH (t:Turn)
RETURN DISTINCT t.memory_id AS memory_id
ORDER BY memory_id
