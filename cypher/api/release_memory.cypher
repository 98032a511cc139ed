// Drop the owner of a memory that holds no dialogue (a claim whose first ingest failed). $id, $memory_id
MATCH (o:MemoryOwner {id: $id})
WHERE o.memory_id = $memory_id
OPTIONAL MATCH (t:Turn)
WHERE t.memory_id = $memory_id
WITH o, count(t) AS turns
WHERE turns = 0
DELETE o
RETURN count(*) AS released
