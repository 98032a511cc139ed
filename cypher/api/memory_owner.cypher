// The tenant owning a memory, if any. $id (the MemoryOwner node id), $memory_id
MATCH (o:MemoryOwner {id: $id})
WHERE o.memory_id = $memory_id
RETURN o.tenant AS tenant, o.created_at AS created_at
