// One episode of a memory. $memory_id, $episode_id
MATCH (e:Episode {id: $episode_id})
WHERE e.memory_id = $memory_id
RETURN e.id AS id, e.title AS title, e.summary AS summary, e.session AS session, e.start AS start, e.end AS end,
       e.participants AS participants
