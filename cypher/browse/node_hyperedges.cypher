// The hyperedges around one node: those it owns (Topic, Episode) and those it is a member of
// (Episode, Fact, Element). $memory_id, $node_id
OPTIONAL MATCH (a:Topic {id: $node_id})
OPTIONAL MATCH (b:Episode {id: $node_id})
OPTIONAL MATCH (c:Fact {id: $node_id})
OPTIONAL MATCH (d:Element {id: $node_id})
WITH coalesce(a, b, c, d) AS n
WHERE n IS NOT NULL AND n.memory_id = $memory_id
OPTIONAL MATCH (n)-[:HAS_HYPEREDGE]->(owned:Hyperedge)
WITH n, collect(DISTINCT owned.id) AS owned
OPTIONAL MATCH (holder:Hyperedge)-[m:MEMBER]->(n)
RETURN n.id AS id, [l IN labels(n) WHERE l <> 'Element'][0] AS label,
       coalesce(n.title, n.name, n.content) AS caption, owned,
       collect(DISTINCT {id: holder.id, weight: m.weight}) AS member_of
