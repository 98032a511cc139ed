// Add words to the store-wide vocabulary with their embedding (hypermem.vocabulary); a word already
// there keeps its node (another process may have added it first).
// $rows: [{id, word, embedding}]
UNWIND $rows AS r
MERGE (t:Term {id: r.id})
ON CREATE SET t.word = r.word, t.embedding = vecf32(r.embedding)
