// Give back a job this process ($worker) holds and did not end (it is shutting down): queued again with no
// worker, its progress and report so far kept, for the next process to take over. $id, $worker, $now
MATCH (j:IngestJob {id: $id})
WHERE j.status IN ['queued', 'running'] AND j.worker = $worker
SET j.status = 'queued', j.worker = null, j.heartbeat = null, j.updated_at = $now
RETURN j.id AS id
