// Hyperedges left without an owner or without members (after a session was rebuilt or deleted).
MATCH (h:Hyperedge)
WHERE h.memory_id = $memory_id
  AND (NOT (h)<-[:HAS_HYPEREDGE]-() OR NOT (h)-[:MEMBER]->())
DETACH DELETE h
RETURN count(h) AS deleted
