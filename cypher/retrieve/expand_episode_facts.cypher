// Coarse-to-fine, episode -> fact (HyperMem §3.4): the facts joined by the chosen episodes' hyperedges.
UNWIND $episode_ids AS episode_id
MATCH (e:Episode {id: episode_id})-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'episode'})-[m:MEMBER]->(f:Fact)
WHERE e.memory_id = $memory_id
RETURN f.id AS id, e.id AS episode_id, h.id AS hyperedge_id, m.weight AS weight
