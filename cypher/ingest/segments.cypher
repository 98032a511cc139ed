// Segment hyperedges of a memory with their element weights and anchored episodes.
MATCH (h:Hyperedge {kind: 'segment'})-[m:MEMBER]->(x:Element)
WHERE h.memory_id = $memory_id
OPTIONAL MATCH (e:Episode)-[:HAS_HYPEREDGE]->(h)
RETURN h.id AS id, collect(DISTINCT {element: x.id, weight: m.weight}) AS members, collect(DISTINCT e.id) AS episode_ids
