// Take the lock of one memory from a holder known to be dead, if $old_token still holds it (compare and set).
// $id, $old_token, $token, $holder, $operation, $now, $lease
MATCH (l:MemoryLock {id: $id})
WHERE l.token = $old_token
SET l.token = $token, l.holder = $holder, l.operation = $operation, l.expires = $now + $lease
RETURN true AS acquired
