// HingeMem §3.2 element salience from frequency, centrality and diversity, per memory.
// frequency  = segment hyperedges joining the element (log-scaled),
// centrality = distinct elements it co-occurs with in a segment (degree in the clique expansion),
// diversity  = distinct topics reached through its segments' episodes;
// each normalised by its maximum in the memory; salience = their mean, in [0, 1].
MATCH (x:Element)
WHERE x.memory_id = $memory_id
OPTIONAL MATCH (x)<-[:MEMBER]-(s:Hyperedge {kind: 'segment'})
WITH x, count(DISTINCT s) AS frequency
OPTIONAL MATCH (x)<-[:MEMBER]-(:Hyperedge {kind: 'segment'})-[:MEMBER]->(y:Element)
WHERE y <> x
WITH x, frequency, count(DISTINCT y) AS centrality
OPTIONAL MATCH (x)<-[:MEMBER]-(:Hyperedge {kind: 'segment'})<-[:HAS_HYPEREDGE]-(:Episode)<-[:MEMBER]-(:Hyperedge {kind: 'topic'})<-[:HAS_HYPEREDGE]-(t:Topic)
WITH x, frequency, centrality, count(DISTINCT t) AS diversity
WITH collect({node: x, f: frequency, c: centrality, d: diversity}) AS rows,
     max(frequency) AS mf, max(centrality) AS mc, max(diversity) AS md
UNWIND rows AS r
WITH r.node AS x, r, mf, mc, md
SET x.frequency = r.f, x.centrality = r.c, x.diversity = r.d,
    x.salience = (log(1.0 + r.f) / log(2.0 + mf)
                  + toFloat(r.c) / (CASE WHEN mc > 0 THEN mc ELSE 1 END)
                  + toFloat(r.d) / (CASE WHEN md > 0 THEN md ELSE 1 END)) / 3.0
RETURN count(x) AS updated
