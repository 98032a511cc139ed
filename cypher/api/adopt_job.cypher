// Take over a job whose worker is gone ($old: that worker, '' for a job given back at shutdown) for $worker:
// queued again in $worker, `lost` counting the workers that stopped without giving it back ($lost: 1 or 0).
// Atomic: the first SET takes the node's write lock before the worker is read (Neo4j; FalkorDB runs writes
// one at a time anyway), so of two processes taking over the same job one gets it. Returns the stored batch
// (null for a job of a version that did not keep it). $id, $old, $worker, $lost, $now
MATCH (j:IngestJob {id: $id})
SET j.updated_at = $now
WITH j, (j.status IN ['queued', 'running'] AND coalesce(j.worker, '') = $old) AS mine
WHERE mine
SET j.status = 'queued', j.worker = $worker, j.heartbeat = null, j.lost = coalesce(j.lost, 0) + $lost
RETURN j.batch AS batch, j.lost AS lost
