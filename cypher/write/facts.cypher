// Upsert facts with their provenance to turns.
// $rows: [{memory_id, id, episode_id, kind, speaker, family, content, potential, keywords, date, text, terms, words,
//          turn_ids, embedding, embedding_raw, embed_key, raw_is_turn}]; embedding_raw is null when raw_is_turn (the turn's
//          vector is it; embed_key is then the key of that vector, found through FROM_TURN by ingest/stored_vectors)
UNWIND $rows AS r
MERGE (f:Fact {id: r.id})
SET f.memory_id = r.memory_id, f.episode_id = r.episode_id, f.content = r.content,
    f.potential = r.potential, f.keywords = r.keywords, f.date = r.date, f.text = r.text, f.terms = r.terms,
    f.words = r.words, f.kind = r.kind, f.speaker = r.speaker, f.family = r.family,
    f.embedding = vecf32(r.embedding), f.embedding_raw = vecf32(r.embedding_raw), f.embed_key = r.embed_key,
    f.raw_is_turn = r.raw_is_turn
WITH f, r
UNWIND r.turn_ids AS turn_id
MATCH (t:Turn {id: turn_id})
MERGE (f)-[:FROM_TURN]->(t)
