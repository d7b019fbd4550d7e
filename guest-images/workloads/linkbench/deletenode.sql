-- LinkBench's deletenode (node deletes: uniform (LinkBench: a node is deleted once, and not the hot ones)): schema.sql; run by pgbench -D maxid=N
\set id random(1, :maxid)
DELETE FROM nodetable WHERE id = :id;
