// Add words to a memory's vocabulary with their embedding (hypermem.vocabulary); a word already there
// keeps its node (another process may have added it first).
// $rows: [{memory_id, id, word, embedding}]
UNWIND $rows AS r
MERGE (t:Term {id: r.id})
ON CREATE SET t.memory_id = r.memory_id, t.word = r.word, t.embedding = vecf32(r.embedding)
