// Persist one query result (JSON text) for later explanation; removed with its memory.
// $id, $memory_id, $query, $created_at, $result
MERGE (q:QueryRecord {id: $id})
SET q.memory_id = $memory_id, q.query = $query, q.created_at = $created_at, q.result = $result
