// Facts with their source turns (HiGMem: every answer traces back to dia_ids). A source turn that
// asks something carries its reply (the next turn, by the other speaker): in dialogue the query
// often matches the question while the evidence is the answer. prev_id/next_id: the turn's neighbours
// (the turn ranker's neighbour candidates). A fact no episode hyperedge holds yet (it has exactly one once its
// episode is written) is left out: an ingest writes its facts before their episodes
// (hypermem.ingest.plan.FirstWrites), and one that stopped in between leaves them so until the next ingest prunes
// them. Matched from the fact (~0.3 ms for 30 facts; a WHERE pattern predicate cost ~1 ms on FalkorDB).
UNWIND $ids AS fact_id
MATCH (:Hyperedge)-[:MEMBER]->(f:Fact {id: fact_id})-[:FROM_TURN]->(t:Turn)
WHERE f.memory_id = $memory_id
OPTIONAL MATCH (t)-[:NEXT]->(n:Turn)
OPTIONAL MATCH (p:Turn)-[:NEXT]->(t)
WITH f, t, p.id AS prev_id, n.id AS next_id,
     CASE WHEN n IS NOT NULL AND n.speaker <> t.speaker AND t.text CONTAINS '?'
          THEN {id: n.id, dia_id: n.dia_id, speaker: n.speaker, text: n.text, timestamp: n.timestamp, seq: n.seq}
          ELSE null END AS reply
RETURN f.id AS id, f.kind AS kind, f.content AS content, f.date AS date, f.episode_id AS episode_id,
       f.superseded_by AS superseded_by,
       collect({id: t.id, dia_id: t.dia_id, speaker: t.speaker, text: t.text, timestamp: t.timestamp, seq: t.seq,
                prev_id: prev_id, next_id: next_id, reply: reply}) AS turns
