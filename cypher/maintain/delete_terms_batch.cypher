// Delete up to $limit Term nodes of one memory (its vocabulary's vectors belong to one embedding model:
// hypermem reindex forgets them and the rebuild adds them with the new one). Called until it returns 0.
MATCH (t:Term)
WHERE t.memory_id = $memory_id
WITH t LIMIT $limit
DETACH DELETE t
RETURN count(*) AS deleted
