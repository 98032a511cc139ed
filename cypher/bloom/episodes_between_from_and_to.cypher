// Bloom search phrase "episodes between $from and $to": episodes overlapping the interval.
// $from, $to: ISO dates or timestamps ("2023-05-07", "2023-05-07T18:00"). Stored times are ISO
// strings, so comparing a prefix of the length given makes a date cover its whole day.
MATCH (e:Episode)
WHERE substring(e.end, 0, size($from)) >= $from AND substring(e.start, 0, size($to)) <= $to
RETURN e
ORDER BY e.start
