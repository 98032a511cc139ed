// The people of one memory, most salient first. $memory_id
MATCH (p:Person)
WHERE p.memory_id = $memory_id
OPTIONAL MATCH (e:Episode)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'segment'})-[:MEMBER]->(p)
WITH p, count(DISTINCT e) AS episodes
RETURN p.id AS id, p.name AS name, p.salience AS salience, p.frequency AS frequency, episodes
ORDER BY salience DESC, episodes DESC, name
