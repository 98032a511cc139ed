// Nodes per label of one memory. Elements count under Person / Time / Location.
MATCH (n)
WHERE n.memory_id = $memory_id
RETURN [l IN labels(n) WHERE l <> 'Element'][0] AS label, count(n) AS count
