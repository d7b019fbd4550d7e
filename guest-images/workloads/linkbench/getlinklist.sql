-- LinkBench's getlinklist (link reads: Zipf 0.8): schema.sql; run by pgbench -D maxid=N
\set u random(0, 999999) / 1000000.0
\set id1 least(:maxid, int(pow(1.0 + :u * (pow(:maxid, 0.200) - 1.0), 5.0000)))
\set lt random(1, 2)
SELECT id1, id2, link_type, visibility, data, time, version FROM linktable
    WHERE id1 = :id1 AND link_type = :lt AND visibility = 1
    ORDER BY time DESC LIMIT 10000;
