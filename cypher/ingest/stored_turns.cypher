// What the memory's turns hold before an ingest: every session id they carry (finished or not: a lookalike
// spelling of one joins it, spelt_as_known) and the highest seq (new turns are numbered after it).
MATCH (t:Turn)
WHERE t.memory_id = $memory_id
RETURN collect(DISTINCT t.session) AS sessions, max(t.seq) AS max_seq
