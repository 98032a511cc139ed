// Whether a memory holds any dialogue yet. $memory_id
MATCH (t:Turn)
WHERE t.memory_id = $memory_id
RETURN t.id AS id
LIMIT 1
