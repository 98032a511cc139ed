// Upsert episodes with their provenance to turns.
// $rows: [{memory_id, id, session, title, summary, text, terms, words, start, end, participants, turn_ids, embedding,
//          embedding_raw}]; terms and words: hypermem.store.bm25.stored_analysis of text
UNWIND $rows AS r
MERGE (e:Episode {id: r.id})
SET e.memory_id = r.memory_id, e.session = r.session, e.title = r.title, e.summary = r.summary,
    e.text = r.text, e.terms = r.terms, e.words = r.words, e.start = r.start, e.end = r.end,
    e.participants = r.participants,
    e.embedding = vecf32(r.embedding), e.embedding_raw = vecf32(r.embedding_raw)
WITH e, r
UNWIND r.turn_ids AS turn_id
MATCH (t:Turn {id: turn_id})
MERGE (e)-[:FROM_TURN]->(t)
