// Delete up to $limit Term nodes (the vocabulary's vectors belong to one embedding model: hypermem reindex
// forgets them and rebuilds them with the new one). Called until it returns 0.
MATCH (t:Term)
WITH t LIMIT $limit
DETACH DELETE t
RETURN count(*) AS deleted
