// How many Terms a memory's vocabulary holds, and their generation (hypermem.vocabulary: a random id the
// first Terms of a memory get, and every later one shares): the stamp by which a process checks its copy
// (store/vocabulary_matrix.py). The generation is read off one Term: all hold the same, and reading it off
// every Term (min) cost ~7 ms a call against ~0.2 for this. No row when the memory has no Term. $memory_id
MATCH (t:Term)
WHERE t.memory_id = $memory_id
WITH count(t) AS words
MATCH (g:Term)
WHERE g.memory_id = $memory_id
RETURN words, g.generation AS generation
LIMIT 1
