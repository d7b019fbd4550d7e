-- LinkBench's addlink (link writes: Zipf 0.741): schema.sql; run by pgbench -D maxid=N
\set u random(0, 999999) / 1000000.0
\set id1 least(:maxid, int(pow(1.0 + :u * (pow(:maxid, 0.259) - 1.0), 3.8610)))
\set k random(0, 9)
SELECT lb_add_link(:id1, :k, :maxid, left(md5(random()::text), 8));
