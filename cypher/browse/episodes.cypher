// The episodes of one memory sorted by time: $order 'recent' (latest end first) or 'oldest'
// (earliest start first), with their fact count. $memory_id, $order, $offset, $limit
MATCH (e:Episode)
WHERE e.memory_id = $memory_id
OPTIONAL MATCH (e)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'episode'})-[:MEMBER]->(f:Fact)
WITH e, count(f) AS facts
RETURN e.id AS id, e.title AS title, e.summary AS summary, e.session AS session, e.start AS start, e.end AS end,
       e.participants AS participants, facts
ORDER BY CASE WHEN $order = 'recent' THEN e.end END DESC, CASE WHEN $order = 'oldest' THEN e.start END, id
SKIP $offset
LIMIT $limit
