// Time elements of a memory whose ISO value starts with one of $prefixes ("2023-05" matches May 2023).
MATCH (x:Time)
WHERE x.memory_id = $memory_id AND any(p IN $prefixes WHERE x.value STARTS WITH p)
RETURN x.id AS id, x.name AS name, x.salience AS salience
