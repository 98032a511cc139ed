// The Person / Time / Location elements of one episode's segment hyperedges, heaviest first.
// $memory_id, $episode_id
MATCH (e:Episode {id: $episode_id})-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'segment'})-[m:MEMBER]->(x:Element)
WHERE e.memory_id = $memory_id
RETURN x.id AS id, [l IN labels(x) WHERE l <> 'Element'][0] AS kind, x.name AS name, x.value AS value,
       m.weight AS weight, h.id AS hyperedge_id
ORDER BY weight DESC, id
