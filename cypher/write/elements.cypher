// Upsert HingeMem element nodes. Every element has the label Element plus Person, Time or Location.
// $rows: [{memory_id, id, kind, name, value}]
UNWIND $rows AS r
MERGE (e:Element {id: r.id})
SET e.memory_id = r.memory_id, e.name = r.name, e.value = r.value
FOREACH (_ IN CASE WHEN r.kind = 'Person' THEN [1] ELSE [] END | SET e:Person)
FOREACH (_ IN CASE WHEN r.kind = 'Time' THEN [1] ELSE [] END | SET e:Time)
FOREACH (_ IN CASE WHEN r.kind = 'Location' THEN [1] ELSE [] END | SET e:Location)
