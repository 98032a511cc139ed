// One API key by id. $id
MATCH (k:ApiKey {id: $id})
RETURN k.tenant AS tenant, k.hash AS hash
