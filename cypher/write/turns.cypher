// Upsert raw dialogue turns (HiGMem anchors) and chain them in dialogue order.
// $rows: [{memory_id, id, dia_id, speaker, text, terms, words, timestamp, session, seq, embedding, embed_key, prev_id}]
// REMOVE first: FalkorDB 4.16 silently keeps a stored vecf32 that SET overwrites (FalkorDB issue #2099);
// and no row is filtered out after it (FalkorDB then drops that row's updates), hence FOREACH for NEXT.
UNWIND $rows AS r
MERGE (t:Turn {id: r.id})
REMOVE t.embedding
SET t.memory_id = r.memory_id, t.dia_id = r.dia_id, t.speaker = r.speaker, t.text = r.text, t.terms = r.terms,
    t.words = r.words, t.timestamp = r.timestamp, t.session = r.session, t.seq = r.seq,
    t.embedding = vecf32(r.embedding), t.embed_key = r.embed_key
WITH t, r
OPTIONAL MATCH (p:Turn {id: r.prev_id})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:NEXT]->(t))
