// Person and Location names of a memory, for matching the elements a query names.
MATCH (x:Element)
WHERE x.memory_id = $memory_id AND (x:Person OR x:Location)
RETURN x.id AS id, x.name AS name, x.salience AS salience, CASE WHEN x:Person THEN 'Person' ELSE 'Location' END AS kind
