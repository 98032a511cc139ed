UNWIND $ids AS episode_id
MATCH (e:Episode {id: episode_id})
WHERE e.memory_id = $memory_id
RETURN e.id AS id, e.title AS title, e.summary AS summary, e.start AS start, e.end AS end, e.session AS session
