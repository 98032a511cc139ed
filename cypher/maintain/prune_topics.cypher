// Topics whose hyperedge is gone (no episode left).
MATCH (t:Topic)
WHERE t.memory_id = $memory_id AND NOT (t)-[:HAS_HYPEREDGE]->()
DETACH DELETE t
RETURN count(t) AS deleted
