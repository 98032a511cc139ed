// Upsert topics. $rows: [{memory_id, id, title, summary, text, embedding}]
UNWIND $rows AS r
MERGE (t:Topic {id: r.id})
SET t.memory_id = r.memory_id, t.title = r.title, t.summary = r.summary, t.text = r.text,
    t.embedding = vecf32(r.embedding)
