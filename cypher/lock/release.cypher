// Release the lock of one memory if $token still holds it. $id, $token
MATCH (l:MemoryLock {id: $id})
WHERE l.token = $token
DELETE l
RETURN count(*) AS released
