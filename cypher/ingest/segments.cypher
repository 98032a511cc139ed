// Segment hyperedges of a memory with their element weights and anchored episodes, leaving out the
// episodes of the sessions being rebuilt ($sessions): the segments as they stand once those sessions
// are cleared. A segment anchoring no other episode is not returned; element weights stay as stored.
MATCH (h:Hyperedge {kind: 'segment'})-[m:MEMBER]->(x:Element)
WHERE h.memory_id = $memory_id
OPTIONAL MATCH (e:Episode)-[:HAS_HYPEREDGE]->(h)
WHERE NOT e.session IN $sessions
WITH h.id AS id, collect(DISTINCT {element: x.id, weight: m.weight}) AS members, collect(DISTINCT e.id) AS episode_ids
WHERE size(episode_ids) > 0
RETURN id, members, episode_ids
