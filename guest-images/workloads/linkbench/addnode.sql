-- LinkBench's addnode (a new node, 128-byte payload): schema.sql; run by pgbench -D maxid=N
INSERT INTO nodetable (type, version, time, data)
    VALUES (1, 0, extract(epoch FROM now())::int,
            convert_to(repeat(md5(random()::text), 4), 'UTF8'));
