// Record that the store's vocabulary (Term nodes) covers every stored turn, at version $version.
MERGE (m:StoreMeta {id: 'meta'})
SET m.vocabulary = $version
