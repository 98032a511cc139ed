// Topics of one memory with their episode count and date span, most episodes first.
// $memory_id, $offset, $limit
MATCH (t:Topic)
WHERE t.memory_id = $memory_id
OPTIONAL MATCH (t)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'topic'})-[:MEMBER]->(e:Episode)
WITH t, count(DISTINCT e) AS episodes, min(e.start) AS first, max(e.end) AS last
RETURN t.id AS id, t.title AS title, t.summary AS summary, episodes, first, last
ORDER BY episodes DESC, title, id
SKIP $offset
LIMIT $limit
