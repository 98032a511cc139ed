// Forget the supersession chains of a memory before supersession.cypher recomputes them. $memory_id
MATCH (f:Fact)
WHERE f.memory_id = $memory_id AND f.superseded_by IS NOT NULL
OPTIONAL MATCH (f)<-[r:SUPERSEDES]-(:Fact)
DELETE r
SET f.superseded_by = null
RETURN count(DISTINCT f) AS cleared
