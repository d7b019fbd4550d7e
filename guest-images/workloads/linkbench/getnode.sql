-- LinkBench's getnode (node reads: Zipf 0.625): schema.sql; run by pgbench -D maxid=N
\set u random(0, 999999) / 1000000.0
\set id least(:maxid, int(pow(1.0 + :u * (pow(:maxid, 0.375) - 1.0), 2.6667)))
SELECT id, type, version, time, data FROM nodetable WHERE id = :id;
