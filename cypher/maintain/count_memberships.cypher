// count(r), not count(*): FalkorDB's count(*) skips parallel edges.
MATCH (h:Hyperedge)-[r:MEMBER]->()
WHERE h.memory_id = $memory_id
RETURN count(r) AS count
