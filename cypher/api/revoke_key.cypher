// Delete one key of a tenant. $id, $tenant
MATCH (k:ApiKey {id: $id})
WHERE k.tenant = $tenant
DELETE k
RETURN count(*) AS revoked
