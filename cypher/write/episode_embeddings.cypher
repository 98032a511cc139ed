// Replace episodes' propagated vectors. $rows: [{id, embedding}]
// REMOVE first: FalkorDB 4.16 silently keeps a stored vecf32 that SET overwrites (FalkorDB issue #2099);
// no clause after it may filter a row out (FalkorDB then drops that row's updates).
UNWIND $rows AS r
MATCH (e:Episode {id: r.id})
REMOVE e.embedding
SET e.embedding = vecf32(r.embedding)
