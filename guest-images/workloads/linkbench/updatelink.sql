-- LinkBench's updatelink (link writes: Zipf 0.741; one of the links the load made): schema.sql; run by pgbench -D maxid=N
\set u random(0, 999999) / 1000000.0
\set id1 least(:maxid, int(pow(1.0 + :u * (pow(:maxid, 0.259) - 1.0), 3.8610)))
\set r random(0, 9)
SELECT lb_update_link(:id1, :r, :maxid, left(md5(random()::text), 8));
