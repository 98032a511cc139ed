// Bloom search phrase "facts about $topic": topic -> episodes -> facts through the topic and
// episode hyperedges, in date order. $topic: part of a Topic title, any case.
MATCH path = (t:Topic)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'topic'})-[:MEMBER]->(e:Episode)
      -[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'episode'})-[:MEMBER]->(f:Fact)
WHERE toLower(t.title) CONTAINS toLower($topic)
RETURN path
ORDER BY e.start, f.date
