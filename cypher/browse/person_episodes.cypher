// A person's episodes in date order: episodes whose segment hyperedges hold a Person of that name
// (case-insensitive), or that the person took part in. Optional window: $from / $to (ISO strings or null).
// $memory_id, $person, $from, $to
MATCH (e:Episode)
WHERE e.memory_id = $memory_id
  AND ($from IS NULL OR e.end >= $from)
  AND ($to IS NULL OR e.start <= $to)
OPTIONAL MATCH (e)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'segment'})-[:MEMBER]->(p:Person)
WHERE toLower(p.name) = toLower($person)
WITH e, count(p) AS mentions
WHERE mentions > 0 OR any(x IN e.participants WHERE toLower(x) = toLower($person))
RETURN e.id AS id, e.title AS title, e.summary AS summary, e.session AS session, e.start AS start, e.end AS end
ORDER BY start, id
