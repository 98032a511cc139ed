// Add words to a memory's vocabulary (hypermem.vocabulary); a word already there keeps its node (another
// process may have added it first). generation: the memory's vocabulary generation (a random id its first Terms
// get), by which a process's copy is checked. embed_key (Embedder.text_key of the word: model name + word) names
// the word's store-wide WordVector (write/word_vectors), written first.
// $rows: [{memory_id, id, word, generation, embed_key}]
UNWIND $rows AS r
MERGE (t:Term {id: r.id})
ON CREATE SET t.memory_id = r.memory_id, t.word = r.word, t.generation = r.generation, t.embed_key = r.embed_key
