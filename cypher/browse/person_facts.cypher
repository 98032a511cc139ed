// The facts about a person within the given episodes: facts naming the person, or drawn from the
// person's own turns. $memory_id, $person, $episode_ids
UNWIND $episode_ids AS episode_id
MATCH (e:Episode {id: episode_id})-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'episode'})-[:MEMBER]->(f:Fact)
WHERE e.memory_id = $memory_id
OPTIONAL MATCH (f)-[:FROM_TURN]->(t:Turn)
WITH DISTINCT e, f, collect(t.speaker) AS speakers
WHERE toLower(f.content) CONTAINS toLower($person) OR any(s IN speakers WHERE toLower(s) = toLower($person))
RETURN f.id AS id, f.content AS content, f.date AS date, e.id AS episode_id
ORDER BY date, id
