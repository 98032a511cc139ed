MATCH (t:Turn)
WHERE t.memory_id = $memory_id
RETURN max(t.seq) AS max_seq
