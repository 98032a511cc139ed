// Record a queued background ingest job; removed with its memory. $id, $memory_id, $messages (how many),
// $now, $worker ("host:pid" of the process that will run it), $batch (the messages as JSON text, kept until the
// job ends so that another process can run it again: never part of a key or an index)
CREATE (j:IngestJob {id: $id, memory_id: $memory_id, status: 'queued', messages: $messages, progress: 0,
                     created_at: $now, updated_at: $now, worker: $worker, batch: $batch, lost: 0})
RETURN j.id AS id
