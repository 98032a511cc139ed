// Record how a job ended (status done or failed). Nothing happens when the job is gone.
// $id, $status, $now, $report (JSON text or null), $error (text or null)
MATCH (j:IngestJob {id: $id})
SET j.status = $status, j.updated_at = $now, j.report = $report, j.error = $error,
    j.progress = CASE WHEN $status = 'done' THEN j.messages ELSE j.progress END
