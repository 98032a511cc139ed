// Drop a memory's stored query results beyond the newest $keep, and those created before $before (ISO).
// $memory_id, $keep, $before
MATCH (q:QueryRecord)
WHERE q.memory_id = $memory_id
WITH q ORDER BY q.created_at DESC
WITH collect(q) AS records
UNWIND range(0, size(records) - 1) AS i
WITH records[i] AS q, i
WHERE i >= $keep OR q.created_at < $before
DELETE q
RETURN count(*) AS pruned
