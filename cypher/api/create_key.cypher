// Store a tenant API key by id; only the SHA-256 of the key is kept. $id, $tenant, $hash, $created_at
CREATE (k:ApiKey {id: $id, tenant: $tenant, hash: $hash, created_at: $created_at})
RETURN k.id AS id
