// The facts of one episode (members of its episode hyperedge) in date order, with weight and source turns.
// $memory_id, $episode_id
MATCH (e:Episode {id: $episode_id})-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'episode'})-[m:MEMBER]->(f:Fact)
WHERE e.memory_id = $memory_id
OPTIONAL MATCH (f)-[:FROM_TURN]->(t:Turn)
WITH f, m, h, t
ORDER BY t.seq
WITH f, m, h, collect(t.id) AS turn_ids
RETURN f.id AS id, f.kind AS kind, f.content AS content, f.date AS date, f.potential AS potential, f.keywords AS keywords,
       f.superseded_by AS superseded_by,
       m.weight AS weight, h.id AS hyperedge_id, turn_ids
ORDER BY date, id
