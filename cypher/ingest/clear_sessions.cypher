// Remove what was derived from the sessions $sessions of $memory_id (their episodes, the episodes' facts and
// episode hyperedges) before they are rebuilt, in one statement. Turns stay. Topic and segment memberships of the
// removed episodes disappear with them; prune_* files clean up after.
MATCH (e:Episode)
WHERE e.memory_id = $memory_id AND e.session IN $sessions
OPTIONAL MATCH (e)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'episode'})
OPTIONAL MATCH (h)-[:MEMBER]->(f:Fact)
WITH collect(DISTINCT e) + collect(DISTINCT h) + collect(DISTINCT f) AS doomed
UNWIND doomed AS n
DETACH DELETE n
RETURN count(n) AS deleted
