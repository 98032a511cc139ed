// Every word of one memory's vocabulary, with its Term id and embed_key (hypermem.vocabulary.prune_words, and the
// WordVectors a deletion may leave unused: GraphStore.delete_unused_word_vectors). $memory_id
MATCH (t:Term)
WHERE t.memory_id = $memory_id
RETURN t.id AS id, t.word AS word, t.embed_key AS embed_key
