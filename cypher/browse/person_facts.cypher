// The facts about a person within the given episodes: facts naming the person, or drawn from the
// person's own turns (by_speaker). The content test is a substring prefilter: browse.timeline keeps a fact
// only where the name stands as a whole word. $memory_id, $person, $episode_ids
UNWIND $episode_ids AS episode_id
MATCH (e:Episode {id: episode_id})-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'episode'})-[:MEMBER]->(f:Fact)
WHERE e.memory_id = $memory_id
OPTIONAL MATCH (f)-[:FROM_TURN]->(t:Turn)
WITH DISTINCT e, f, any(s IN collect(t.speaker) WHERE toLower(s) = toLower($person)) AS by_speaker
WHERE by_speaker OR toLower(f.content) CONTAINS toLower($person)
RETURN f.id AS id, f.content AS content, f.date AS date, e.id AS episode_id, by_speaker
ORDER BY date, id
