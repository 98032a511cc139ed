// The vector of each word key (Embedder.text_key: model name + word) that a Term of any memory holds,
// one Term per key, so a word new to one memory is not embedded again (hypermem.vocabulary). A word's
// vector depends only on the model and the word; a Term without embed_key is never returned. The vector is the
// Term's base64 text (hypermem.store.packed), or its float list when an older ingest wrote it. $keys
UNWIND $keys AS key
CALL {
    WITH key
    MATCH (t:Term)
    WHERE t.embed_key = key AND (t.embedding_b64 IS NOT NULL OR t.embedding IS NOT NULL)
    RETURN coalesce(t.embedding_b64, t.embedding) AS embedding
    LIMIT 1
}
RETURN key, embedding
