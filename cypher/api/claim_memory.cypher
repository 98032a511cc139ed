// Record the owner of a memory unless it has one; returns the owner either way.
// $id, $memory_id, $tenant, $created_at
MERGE (o:MemoryOwner {id: $id})
ON CREATE SET o.memory_id = $memory_id, o.tenant = $tenant, o.created_at = $created_at
RETURN o.tenant AS tenant, o.created_at AS created_at
