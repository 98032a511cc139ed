// The episodes of one topic (members of its topic hyperedge) in date order, with member weight.
// $memory_id, $topic_id
MATCH (t:Topic {id: $topic_id})-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'topic'})-[m:MEMBER]->(e:Episode)
WHERE t.memory_id = $memory_id
RETURN e.id AS id, e.title AS title, e.summary AS summary, e.session AS session, e.start AS start, e.end AS end,
       e.participants AS participants, m.weight AS weight, h.id AS hyperedge_id
ORDER BY start, id
