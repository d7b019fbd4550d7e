-- LinkBench's countlink (link reads: Zipf 0.8): schema.sql; run by pgbench -D maxid=N
\set u random(0, 999999) / 1000000.0
\set id1 least(:maxid, int(pow(1.0 + :u * (pow(:maxid, 0.200) - 1.0), 5.0000)))
\set lt random(1, 2)
SELECT count FROM counttable WHERE id = :id1 AND link_type = :lt;
