// Delete up to $limit nodes of one memory, with their relationships. Called until it returns 0.
MATCH (n)
WHERE n.memory_id = $memory_id
WITH n LIMIT $limit
DETACH DELETE n
RETURN count(*) AS deleted
