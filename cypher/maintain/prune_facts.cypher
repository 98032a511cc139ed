// Facts outside every episode hyperedge. An ingest writes its facts before the episodes and the episode
// hyperedges that hold them (hypermem.ingest.plan.FirstWrites); one that stopped in between left them so, and a
// rebuild of their session does not reach them through an episode. $memory_id
MATCH (f:Fact)
WHERE f.memory_id = $memory_id AND NOT (f)<-[:MEMBER]-(:Hyperedge)
DETACH DELETE f
RETURN count(f) AS deleted
