// For ranked facts: the fact that superseded each one (superseded_by) and the latest of its chain
// (head), with the head's predicate family. $memory_id, $ids
UNWIND $ids AS fact_id
MATCH (f:Fact {id: fact_id})
WHERE f.memory_id = $memory_id AND f.superseded_by IS NOT NULL
OPTIONAL MATCH (head:Fact)-[:SUPERSEDES*1..20]->(f)
WHERE head.superseded_by IS NULL
RETURN f.id AS id, f.superseded_by AS superseded_by, f.family AS family, head.id AS head
