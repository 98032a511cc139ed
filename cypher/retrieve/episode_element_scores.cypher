// HingeMem element matching: for each candidate episode, the query's elements joined to it by a
// segment hyperedge, scored by member weight × element salience.
UNWIND $episode_ids AS episode_id
MATCH (e:Episode {id: episode_id})-[:HAS_HYPEREDGE]->(s:Hyperedge {kind: 'segment'})-[m:MEMBER]->(x:Element)
WHERE e.memory_id = $memory_id AND x.id IN $element_ids
RETURN e.id AS id, s.id AS hyperedge_id, sum(m.weight * coalesce(x.salience, 0.0)) AS element_score,
       collect(x.name) AS matched
