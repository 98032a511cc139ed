// The source turns of one episode in dialogue order. $memory_id, $episode_id
MATCH (e:Episode {id: $episode_id})-[:FROM_TURN]->(t:Turn)
WHERE e.memory_id = $memory_id
RETURN t.id AS id, t.dia_id AS dia_id, t.speaker AS speaker, t.text AS text, t.timestamp AS timestamp,
       t.session AS session, t.seq AS seq
ORDER BY seq
