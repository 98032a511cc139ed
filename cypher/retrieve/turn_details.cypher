// Turns by id with their neighbours and their reply (the next turn, by the other speaker, when this one
// asks something): the turn ranker's candidates, in the shape of fact_details' source turns. Neighbours'
// words feed the ranker's window coverage; their first 1,000 characters are enough for that.
UNWIND $ids AS turn_id
MATCH (t:Turn {id: turn_id})
WHERE t.memory_id = $memory_id
OPTIONAL MATCH (t)-[:NEXT]->(n:Turn)
OPTIONAL MATCH (p:Turn)-[:NEXT]->(t)
RETURN t.id AS id, t.dia_id AS dia_id, t.speaker AS speaker, t.text AS text, t.timestamp AS timestamp, t.seq AS seq,
       p.id AS prev_id, n.id AS next_id, left(p.text, 1000) AS prev_text, left(n.text, 1000) AS next_text,
       CASE WHEN n IS NOT NULL AND n.speaker <> t.speaker AND t.text CONTAINS '?'
            THEN {id: n.id, dia_id: n.dia_id, speaker: n.speaker, text: n.text, timestamp: n.timestamp, seq: n.seq}
            ELSE null END AS reply
