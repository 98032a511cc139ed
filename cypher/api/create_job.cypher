// Record a queued background ingest job; removed with its memory. $id, $memory_id, $messages, $now
CREATE (j:IngestJob {id: $id, memory_id: $memory_id, status: 'queued', messages: $messages,
                     created_at: $now, updated_at: $now})
RETURN j.id AS id
