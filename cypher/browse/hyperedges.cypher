// Hyperedges of one memory with their owners and weighted members. $memory_id, $ids
UNWIND $ids AS hid
MATCH (h:Hyperedge {id: hid})
WHERE h.memory_id = $memory_id
OPTIONAL MATCH (o)-[:HAS_HYPEREDGE]->(h)
WITH h, collect(DISTINCT {id: o.id, label: [l IN labels(o) WHERE l <> 'Element'][0], caption: coalesce(o.title, o.name, o.content)}) AS owners
OPTIONAL MATCH (h)-[m:MEMBER]->(x)
RETURN h.id AS id, h.kind AS kind, owners,
       collect({id: x.id, label: [l IN labels(x) WHERE l <> 'Element'][0], caption: coalesce(x.title, x.name, x.content), weight: m.weight}) AS members
