// Replace episodes' propagated vectors. $rows: [{id, embedding}]
UNWIND $rows AS r
MATCH (e:Episode {id: r.id})
SET e.embedding = vecf32(r.embedding)
