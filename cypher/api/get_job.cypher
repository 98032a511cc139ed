// One background ingest job. $id
MATCH (j:IngestJob {id: $id})
RETURN j.id AS job_id, j.memory_id AS memory_id, j.status AS status, j.messages AS messages,
       coalesce(j.progress, 0) AS progress, j.created_at AS created_at, j.updated_at AS updated_at,
       j.report AS report, j.error AS error, j.worker AS worker, j.heartbeat AS heartbeat
