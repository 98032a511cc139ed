// Record a queued background ingest job; removed with its memory. $id, $memory_id, $messages, $now,
// $worker ("host:pid" of the process that will run it)
CREATE (j:IngestJob {id: $id, memory_id: $memory_id, status: 'queued', messages: $messages, progress: 0,
                     created_at: $now, updated_at: $now, worker: $worker})
RETURN j.id AS id
