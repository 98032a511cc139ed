// Every memory that has an owner (the first API write claimed it), with or without dialogue yet.
MATCH (o:MemoryOwner)
RETURN DISTINCT o.memory_id AS memory_id
ORDER BY memory_id
