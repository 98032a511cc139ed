// Upsert raw dialogue turns (HiGMem anchors) and chain them in dialogue order.
// $rows: [{memory_id, id, dia_id, speaker, text, timestamp, session, seq, embedding, prev_id}]
UNWIND $rows AS r
MERGE (t:Turn {id: r.id})
SET t.memory_id = r.memory_id, t.dia_id = r.dia_id, t.speaker = r.speaker, t.text = r.text,
    t.timestamp = r.timestamp, t.session = r.session, t.seq = r.seq,
    t.embedding = vecf32(r.embedding)
WITH t, r
WHERE r.prev_id IS NOT NULL
MATCH (p:Turn {id: r.prev_id})
MERGE (p)-[:NEXT]->(t)
