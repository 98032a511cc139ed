UNWIND $ids AS topic_id
MATCH (t:Topic {id: topic_id})
WHERE t.memory_id = $memory_id
RETURN t.id AS id, t.title AS title
