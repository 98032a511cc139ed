// Facts with their source turns (HiGMem: every answer traces back to dia_ids).
UNWIND $ids AS fact_id
MATCH (f:Fact {id: fact_id})-[:FROM_TURN]->(t:Turn)
WHERE f.memory_id = $memory_id
RETURN f.id AS id, f.content AS content, f.date AS date, f.episode_id AS episode_id,
       collect({id: t.id, dia_id: t.dia_id, speaker: t.speaker, text: t.text, timestamp: t.timestamp, seq: t.seq}) AS turns
