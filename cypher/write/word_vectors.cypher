// Store the vectors of words no memory's vocabulary held (hypermem.vocabulary): one store-wide WordVector node
// per embed_key (Embedder.text_key of the word: model name + word; id: ids.word_vector_id), which every memory
// that uses the word shares. A node another process created first keeps its vector (the same one: a word's vector
// depends only on the model and the word). The vector is text, base64 of the float32 bytes
// (hypermem.store.packed): read in one piece, where a vector property comes back one number at a time.
// $rows: [{id, embedding_b64}]
UNWIND $rows AS r
MERGE (v:WordVector {id: r.id})
ON CREATE SET v.embedding_b64 = r.embedding_b64
