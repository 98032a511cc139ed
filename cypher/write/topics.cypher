// Upsert topics. $rows: [{memory_id, id, title, summary, text, terms, words, embedding}]
// REMOVE first: FalkorDB 4.16 silently keeps a stored vecf32 that SET overwrites (FalkorDB issue #2099);
// no clause after it may filter a row out (FalkorDB then drops that row's updates).
UNWIND $rows AS r
MERGE (t:Topic {id: r.id})
REMOVE t.embedding
SET t.memory_id = r.memory_id, t.title = r.title, t.summary = r.summary, t.text = r.text, t.terms = r.terms, t.words = r.words,
    t.embedding = vecf32(r.embedding)
