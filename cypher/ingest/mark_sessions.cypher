// Mark sessions as completely ingested. $rows: [{id, memory_id, session, hash}]
UNWIND $rows AS r
MERGE (s:IngestState {id: r.id})
SET s.memory_id = r.memory_id, s.session = r.session, s.hash = r.hash
