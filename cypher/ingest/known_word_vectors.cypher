// Which of these WordVector ids (ids.word_vector_id) the store holds (hypermem.vocabulary.add_words). $ids
UNWIND $ids AS vector_id
MATCH (v:WordVector {id: vector_id})
RETURN vector_id AS id
