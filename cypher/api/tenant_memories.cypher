// The memories a tenant owns. $tenant
MATCH (o:MemoryOwner)
WHERE o.tenant = $tenant
RETURN o.memory_id AS memory_id, o.created_at AS created_at
ORDER BY memory_id
