// A memory's vocabulary words and their vectors, but those in $known (the words a process already holds).
// $memory_id, $known
MATCH (t:Term)
WHERE t.memory_id = $memory_id AND NOT t.word IN $known
RETURN t.word AS word, t.embedding AS embedding
