// Mark a queued job running; returns nothing when the job is gone (its memory was deleted). $id, $now, $beat
MATCH (j:IngestJob {id: $id})
WHERE j.status = 'queued'
SET j.status = 'running', j.updated_at = $now, j.heartbeat = $beat
RETURN j.id AS id
