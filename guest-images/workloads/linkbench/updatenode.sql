-- LinkBench's updatenode (node updates: Zipf 0.606, a new 128-byte payload): schema.sql; run by pgbench -D maxid=N
\set u random(0, 999999) / 1000000.0
\set id least(:maxid, int(pow(1.0 + :u * (pow(:maxid, 0.394) - 1.0), 2.5381)))
UPDATE nodetable SET version = version + 1, time = extract(epoch FROM now())::int,
    data = convert_to(repeat(md5(random()::text), 4), 'UTF8') WHERE id = :id;
