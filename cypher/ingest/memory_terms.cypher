// Every word of one memory's vocabulary, with its Term id (hypermem.vocabulary.prune_words). $memory_id
MATCH (t:Term)
WHERE t.memory_id = $memory_id
RETURN t.id AS id, t.word AS word
