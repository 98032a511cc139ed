// Delete the Terms of one memory named in $rows (their ids): words no turn of it uses any more
// (hypermem.vocabulary.prune_words). $memory_id, $rows: [{id}]
UNWIND $rows AS r
MATCH (t:Term {id: r.id})
WHERE t.memory_id = $memory_id
DELETE t
