// Which of these Term ids the store's vocabulary already holds (hypermem.vocabulary). $ids
UNWIND $ids AS term_id
MATCH (t:Term {id: term_id})
RETURN t.id AS id
