// Supersession (issue 9): within a memory, the statements of one speaker in one predicate family
// (f.family: residence, work, partner, pet) are chained in dialogue order; each one but the latest
// gets superseded_by = the next one's id and a (newer)-[:SUPERSEDES]->(older) relationship.
// Run after clear_supersession.cypher, once per ingest. $memory_id
MATCH (f:Fact)-[:FROM_TURN]->(t:Turn)
WHERE f.memory_id = $memory_id AND f.family IS NOT NULL
WITH f, min(t.seq) AS seq
ORDER BY seq, f.id
WITH f.speaker AS speaker, f.family AS family, collect(f) AS chain
UNWIND range(0, size(chain) - 2) AS i
WITH chain[i] AS older, chain[i + 1] AS newer
MERGE (newer)-[:SUPERSEDES]->(older)
SET older.superseded_by = newer.id
RETURN count(older) AS superseded
