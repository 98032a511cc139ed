// One stored query result. $id
MATCH (q:QueryRecord {id: $id})
RETURN q.memory_id AS memory_id, q.created_at AS created_at, q.result AS result
