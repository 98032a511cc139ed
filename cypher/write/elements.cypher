// Upsert HingeMem element nodes. Every element has the label Element plus Person, Time or Location.
// $rows: [{memory_id, id, kind, name, value}]
// Both labels are given at MERGE time: adding a label to an existing node (SET e:Person) costs
// FalkorDB time proportional to the graph size (716 nodes/s at 70k elements, against ~20k/s here).
// An element's kind is part of its identity, so MERGE by (labels, id) stays idempotent.
UNWIND $rows AS r
FOREACH (_ IN CASE WHEN r.kind = 'Person' THEN [1] ELSE [] END |
  MERGE (e:Element:Person {id: r.id}) SET e.memory_id = r.memory_id, e.name = r.name, e.value = r.value)
FOREACH (_ IN CASE WHEN r.kind = 'Time' THEN [1] ELSE [] END |
  MERGE (e:Element:Time {id: r.id}) SET e.memory_id = r.memory_id, e.name = r.name, e.value = r.value)
FOREACH (_ IN CASE WHEN r.kind = 'Location' THEN [1] ELSE [] END |
  MERGE (e:Element:Location {id: r.id}) SET e.memory_id = r.memory_id, e.name = r.name, e.value = r.value)
