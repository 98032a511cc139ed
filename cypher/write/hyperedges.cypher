// Upsert reified hyperedges, link their owners, and replace their member sets.
// $rows: [{memory_id, id, kind, owner_ids: [id], members: [{id, weight}]}]
// Owners are Topics (kind topic) or Episodes (kinds episode, segment); members are
// Episodes (topic), Facts (episode) or Elements (segment).
UNWIND $rows AS r
MERGE (h:Hyperedge {id: r.id})
SET h.memory_id = r.memory_id, h.kind = r.kind, h.size = size(r.members)
WITH h, r
OPTIONAL MATCH (h)-[old:MEMBER]->(m)
WHERE NOT m.id IN [x IN r.members | x.id]
DELETE old
WITH DISTINCT h, r
UNWIND r.members AS member
OPTIONAL MATCH (e:Episode {id: member.id})
OPTIONAL MATCH (f:Fact {id: member.id})
OPTIONAL MATCH (x:Element {id: member.id})
WITH h, r, member, coalesce(e, f, x) AS m
WHERE m IS NOT NULL
MERGE (h)-[rel:MEMBER]->(m)
SET rel.weight = member.weight
WITH DISTINCT h, r
UNWIND r.owner_ids AS owner_id
OPTIONAL MATCH (t:Topic {id: owner_id})
OPTIONAL MATCH (e:Episode {id: owner_id})
WITH h, coalesce(t, e) AS owner
WHERE owner IS NOT NULL
MERGE (owner)-[:HAS_HYPEREDGE]->(h)
