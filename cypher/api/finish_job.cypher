// Record how a job ended (status done or failed) and drop its stored batch. Nothing happens when the job is gone.
// $id, $status, $now, $report (JSON text or null), $error (text or null)
MATCH (j:IngestJob {id: $id})
SET j.status = $status, j.updated_at = $now, j.report = $report, j.error = $error, j.batch = null,
    j.progress = CASE WHEN $status = 'done' THEN j.messages ELSE j.progress END
