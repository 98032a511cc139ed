// Every topic of a memory with its member episodes' raw vectors (for incremental topic updates),
// leaving out the episodes of the sessions being rebuilt ($sessions): the topics as they stand once
// those sessions are cleared. A topic with no other member is not returned.
MATCH (t:Topic)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'topic'})-[:MEMBER]->(e:Episode)
WHERE t.memory_id = $memory_id AND NOT e.session IN $sessions
RETURN t.id AS topic_id, e.id AS episode_id, e.title AS title, e.embedding_raw AS embedding_raw
ORDER BY topic_id, e.start
