// How many Terms a memory's vocabulary holds, and their generation (hypermem.vocabulary: a random id the
// first Terms of a memory get): the stamp by which a process checks its copy (store/vocabulary_matrix.py).
// $memory_id
MATCH (t:Term)
WHERE t.memory_id = $memory_id
RETURN count(t) AS words, min(t.generation) AS generation
