// Give every Term of one memory a new vocabulary generation (hypermem.vocabulary.prune_words): a process's cached
// copy of the vocabulary is checked by word count and generation, and words removed beside words added can leave
// the count as it was. $memory_id, $generation
MATCH (t:Term)
WHERE t.memory_id = $memory_id
SET t.generation = $generation
