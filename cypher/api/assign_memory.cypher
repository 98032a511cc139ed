// Make a tenant the owner of a memory (admin). $id, $memory_id, $tenant, $created_at
MERGE (o:MemoryOwner {id: $id})
SET o.memory_id = $memory_id, o.tenant = $tenant, o.created_at = coalesce(o.created_at, $created_at)
RETURN o.tenant AS tenant
