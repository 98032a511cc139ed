// Nodes per label of one memory (a label it has none of gives 0), each label through its memory_id index: a
// label-less MATCH would scan every node of the store. Elements count under Person / Time / Location.
MATCH (n:Turn) WHERE n.memory_id = $memory_id RETURN 'Turn' AS label, count(n) AS count
UNION ALL
MATCH (n:Episode) WHERE n.memory_id = $memory_id RETURN 'Episode' AS label, count(n) AS count
UNION ALL
MATCH (n:Topic) WHERE n.memory_id = $memory_id RETURN 'Topic' AS label, count(n) AS count
UNION ALL
MATCH (n:Fact) WHERE n.memory_id = $memory_id RETURN 'Fact' AS label, count(n) AS count
UNION ALL
MATCH (n:Person) WHERE n.memory_id = $memory_id RETURN 'Person' AS label, count(n) AS count
UNION ALL
MATCH (n:Time) WHERE n.memory_id = $memory_id RETURN 'Time' AS label, count(n) AS count
UNION ALL
MATCH (n:Location) WHERE n.memory_id = $memory_id RETURN 'Location' AS label, count(n) AS count
UNION ALL
MATCH (n:Hyperedge) WHERE n.memory_id = $memory_id RETURN 'Hyperedge' AS label, count(n) AS count
UNION ALL
MATCH (n:IngestState) WHERE n.memory_id = $memory_id RETURN 'IngestState' AS label, count(n) AS count
UNION ALL
MATCH (n:IngestJob) WHERE n.memory_id = $memory_id RETURN 'IngestJob' AS label, count(n) AS count
UNION ALL
MATCH (n:QueryRecord) WHERE n.memory_id = $memory_id RETURN 'QueryRecord' AS label, count(n) AS count
UNION ALL
MATCH (n:MemoryOwner) WHERE n.memory_id = $memory_id RETURN 'MemoryOwner' AS label, count(n) AS count
UNION ALL
MATCH (n:ApiKey) WHERE n.memory_id = $memory_id RETURN 'ApiKey' AS label, count(n) AS count
UNION ALL
MATCH (n:MemoryLock) WHERE n.memory_id = $memory_id RETURN 'MemoryLock' AS label, count(n) AS count
UNION ALL
MATCH (n:Term) WHERE n.memory_id = $memory_id RETURN 'Term' AS label, count(n) AS count
UNION ALL
MATCH (n:CorpusStats) WHERE n.memory_id = $memory_id RETURN 'CorpusStats' AS label, count(n) AS count
