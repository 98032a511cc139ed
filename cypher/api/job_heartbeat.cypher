// A running job is alive; $progress (messages done) and $report (the report so far, JSON text) when known,
// else null. $id, $now, $beat (epoch seconds)
MATCH (j:IngestJob {id: $id})
WHERE j.status = 'running'
SET j.heartbeat = $beat, j.updated_at = $now, j.progress = coalesce($progress, j.progress),
    j.report = coalesce($report, j.report)
