// Bloom search phrase "timeline of $person": the episodes a person takes part in (through the
// segment hyperedges that join them), with each episode's facts, in date order.
// $person: a Person name, any case. Portable: runs on Neo4j 5 and FalkorDB alike.
MATCH segment = (p:Person)<-[:MEMBER]-(:Hyperedge {kind: 'segment'})<-[:HAS_HYPEREDGE]-(e:Episode)
WHERE toLower(p.name) = toLower($person)
OPTIONAL MATCH facts = (e)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'episode'})-[:MEMBER]->(f:Fact)
RETURN segment, facts
ORDER BY e.start, f.date
