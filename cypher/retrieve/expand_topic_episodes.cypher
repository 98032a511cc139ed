// Coarse-to-fine, topic -> episode (HyperMem §3.4): the episodes joined by the chosen topics' hyperedges.
// $topic_ids: chosen topics. Returns each member episode with the hyperedge it came through and its weight.
UNWIND $topic_ids AS topic_id
MATCH (t:Topic {id: topic_id})-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'topic'})-[m:MEMBER]->(e:Episode)
WHERE t.memory_id = $memory_id
RETURN e.id AS id, t.id AS topic_id, h.id AS hyperedge_id, m.weight AS weight
