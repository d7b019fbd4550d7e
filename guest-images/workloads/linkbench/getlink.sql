-- LinkBench's getlink (link reads: Zipf 0.8; three links of one type, where LinkBench's
-- multiget asks for 2.6 on average): schema.sql; run by pgbench -D maxid=N
\set u random(0, 999999) / 1000000.0
\set id1 least(:maxid, int(pow(1.0 + :u * (pow(:maxid, 0.200) - 1.0), 5.0000)))
\set p random(0, 1)
\set k1 2 * random(0, 4) + :p
\set k2 2 * random(0, 4) + :p
\set k3 2 * random(0, 4) + :p
SELECT id1, id2, link_type, visibility, data, time, version FROM linktable
    WHERE link_type = 1 + :p AND id1 = :id1
      AND id2 IN (lb_id2(:id1, :k1, :maxid), lb_id2(:id1, :k2, :maxid),
                  lb_id2(:id1, :k3, :maxid));
