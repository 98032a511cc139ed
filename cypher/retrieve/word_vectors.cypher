// The vector of each word a WordVector node holds, by its id (ids.word_vector_id of the word's embed_key):
// base64 float32 text (hypermem.store.packed). Ids without a node are left out. $ids
UNWIND $ids AS vector_id
MATCH (v:WordVector {id: vector_id})
RETURN vector_id AS id, v.embedding_b64 AS embedding
