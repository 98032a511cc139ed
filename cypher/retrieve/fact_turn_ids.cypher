// The source turns of facts (memory-wide fact search legs of the turn ranker), by fact id.
UNWIND $ids AS fact_id
MATCH (f:Fact {id: fact_id})-[:FROM_TURN]->(t:Turn)
WHERE f.memory_id = $memory_id
RETURN f.id AS id, collect(t.id) AS turns
