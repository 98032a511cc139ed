// Turns by id with their reply (the next turn, by the other speaker, when this one asks something):
// the turn-level (flat) leg's hits, in the shape of fact_details' source turns.
UNWIND $ids AS turn_id
MATCH (t:Turn {id: turn_id})
WHERE t.memory_id = $memory_id
OPTIONAL MATCH (t)-[:NEXT]->(n:Turn)
RETURN t.id AS id, t.dia_id AS dia_id, t.speaker AS speaker, t.text AS text, t.timestamp AS timestamp, t.seq AS seq,
       CASE WHEN n IS NOT NULL AND n.speaker <> t.speaker AND t.text CONTAINS '?'
            THEN {id: n.id, dia_id: n.dia_id, speaker: n.speaker, text: n.text, timestamp: n.timestamp}
            ELSE null END AS reply
