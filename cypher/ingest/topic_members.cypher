// Every topic of a memory with its member episodes' raw vectors (for incremental topic updates).
MATCH (t:Topic)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'topic'})-[:MEMBER]->(e:Episode)
WHERE t.memory_id = $memory_id
RETURN t.id AS topic_id, e.id AS episode_id, e.title AS title, e.embedding_raw AS embedding_raw
ORDER BY topic_id, e.start
