// Mark a queued job running; returns nothing when the job is gone (its memory was deleted). $id, $now
MATCH (j:IngestJob {id: $id})
WHERE j.status = 'queued'
SET j.status = 'running', j.updated_at = $now
RETURN j.id AS id
