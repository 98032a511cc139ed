// Elements no segment hyperedge joins any more.
MATCH (x:Element)
WHERE x.memory_id = $memory_id AND NOT (x)<-[:MEMBER]-()
DETACH DELETE x
RETURN count(x) AS deleted
