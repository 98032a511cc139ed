// Delete the WordVectors of these embed_keys that no Term of any memory uses any more (a memory or words of it
// were deleted: a word's vector must not outlive the last memory that said it). $rows: [{embed_key, vector_id}]
UNWIND $rows AS r
OPTIONAL MATCH (t:Term {embed_key: r.embed_key})
WITH r, count(t) AS users
WHERE users = 0
MATCH (v:WordVector {id: r.vector_id})
DELETE v
RETURN count(v) AS deleted
