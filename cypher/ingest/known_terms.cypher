// Which of these Term ids a memory's vocabulary already holds (hypermem.vocabulary). $ids
UNWIND $ids AS term_id
MATCH (t:Term {id: term_id})
RETURN t.id AS id
