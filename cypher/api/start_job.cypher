// Mark a queued job running for $worker, the process it is queued in; returns nothing when the job is gone
// (its memory was deleted) or another process has taken it over. Returns the messages already done and the
// report so far (a job resumed after its worker stopped). $id, $worker, $now, $beat
MATCH (j:IngestJob {id: $id})
WHERE j.status = 'queued' AND j.worker = $worker
SET j.status = 'running', j.updated_at = $now, j.heartbeat = $beat
RETURN coalesce(j.progress, 0) AS progress, j.report AS report
