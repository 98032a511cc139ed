// The jobs that have not ended (queued or running), oldest first: a starting process takes over those whose
// worker is gone. The batch is not returned (adopt_job returns it to the one process that takes the job).
MATCH (j:IngestJob)
WHERE j.status IN ['queued', 'running']
RETURN j.id AS job_id, j.memory_id AS memory_id, j.status AS status, j.worker AS worker, j.heartbeat AS heartbeat,
       j.created_at AS created_at
ORDER BY created_at, job_id
