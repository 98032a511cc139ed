// Take (or renew) the lock of one memory for $token until $now + $lease (epoch seconds), unless another
// holder's lease is still running. Atomic: MERGE on the unique id, and the first SET takes the node's
// write lock before the holder is read (Neo4j; FalkorDB runs writes one at a time anyway). The lock node
// carries `memory`, not `memory_id`, so deleting the memory does not delete its lock.
// $id, $memory, $token, $holder ("host:pid"), $operation, $now, $lease
MERGE (l:MemoryLock {id: $id})
ON CREATE SET l.token = $token, l.expires = 0.0
SET l.memory = $memory
WITH l, (l.token = $token OR l.expires < $now) AS mine
SET l.token = CASE WHEN mine THEN $token ELSE l.token END,
    l.holder = CASE WHEN mine THEN $holder ELSE l.holder END,
    l.operation = CASE WHEN mine THEN $operation ELSE l.operation END,
    l.expires = CASE WHEN mine THEN $now + $lease ELSE l.expires END
RETURN mine AS acquired, l.token AS token, l.holder AS holder, l.operation AS operation
