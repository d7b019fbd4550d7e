-- The Linkbench-like graph of scripts/bench-dblog's "linkbench" engine, loaded into the
-- database linkdb by psql -v maxid=N (dblog-bench-guest.py beside this folder).  LinkBench's MySQL schema
-- (nodes, links with their id1_type index, per-node link counts), its link types (2) and median
-- payloads (nodes 128 bytes, links 8), on PostgreSQL; the transactions are the other files here.
--
-- Links are found again by their index: link k of node id1 (k = 0..9) has type 1 + k % 2 and
-- id2 = lb_id2(id1, k, maxid), so a writer that draws k finds an existing link about as often
-- as the load made one (out-degree uniform in 0..9, mean 4.5), without a lookup.  LinkBench's
-- empirical, heavy-tailed out-degree is not reproduced.
--
-- Invariant kept by lb_add_link and lb_delete_link under any concurrency (and checked after
-- runs and power cuts, lb_check): counttable.count is the number of visible links of its
-- (id1, link_type).
\set ON_ERROR_STOP on

CREATE TABLE nodetable (
    id bigserial PRIMARY KEY,
    type int NOT NULL,
    version bigint NOT NULL,
    time int NOT NULL,
    data bytea NOT NULL);

CREATE TABLE linktable (
    id1 bigint NOT NULL,
    id2 bigint NOT NULL,
    link_type bigint NOT NULL,
    visibility smallint NOT NULL,
    data varchar(255) NOT NULL,
    time bigint NOT NULL,
    version int NOT NULL,
    PRIMARY KEY (link_type, id1, id2));

CREATE TABLE counttable (
    id bigint NOT NULL,
    link_type bigint NOT NULL,
    count int NOT NULL,
    time bigint NOT NULL,
    version bigint NOT NULL,
    PRIMARY KEY (id, link_type));

CREATE OR REPLACE FUNCTION lb_id2(id1 bigint, k int, maxid bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS $$ SELECT 1 + abs(hashint8(id1 * 1024 + k)::bigint) % maxid $$;

-- How many links the load gave node id1.
CREATE OR REPLACE FUNCTION lb_degree(id1 bigint) RETURNS int
    LANGUAGE sql IMMUTABLE AS $$ SELECT (abs(hashint8(id1)) % 10)::int $$;

CREATE OR REPLACE FUNCTION lb_now() RETURNS bigint
    LANGUAGE sql AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

-- Add link k of id1, or make it visible again with new data; the count follows a link that was
-- absent or hidden.  The row lock (FOR UPDATE, or the insert's unique entry) orders concurrent
-- writers of one link; a concurrent insert of the same link is retried as an update.
CREATE OR REPLACE FUNCTION lb_add_link(a bigint, k int, maxid bigint, d varchar)
    RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    lt bigint := 1 + k % 2;
    b bigint := lb_id2(a, k, maxid);
    old smallint;
BEGIN
    LOOP
        SELECT visibility INTO old FROM linktable
            WHERE link_type = lt AND id1 = a AND id2 = b FOR UPDATE;
        IF FOUND THEN
            UPDATE linktable SET visibility = 1, data = d, time = lb_now(), version = version + 1
                WHERE link_type = lt AND id1 = a AND id2 = b;
            EXIT;
        END IF;
        BEGIN
            INSERT INTO linktable VALUES (a, b, lt, 1, d, lb_now(), 0);
            old := 0;
            EXIT;
        EXCEPTION WHEN unique_violation THEN
            -- another writer added it first: lock it and update it
        END;
    END LOOP;
    IF old = 0 THEN
        INSERT INTO counttable VALUES (a, lt, 1, lb_now(), 0)
            ON CONFLICT (id, link_type) DO UPDATE
            SET count = counttable.count + 1, time = EXCLUDED.time,
                version = counttable.version + 1;
    END IF;
END $$;

-- Hide link k of id1 (LinkBench's default delete); the count follows a link that was visible.
CREATE OR REPLACE FUNCTION lb_delete_link(a bigint, k int, maxid bigint)
    RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    lt bigint := 1 + k % 2;
BEGIN
    UPDATE linktable SET visibility = 0, time = lb_now(), version = version + 1
        WHERE link_type = lt AND id1 = a AND id2 = lb_id2(a, k, maxid) AND visibility = 1;
    IF FOUND THEN
        UPDATE counttable SET count = count - 1, time = lb_now(), version = version + 1
            WHERE id = a AND link_type = lt;
    END IF;
END $$;

-- New data for one of the links the load made for id1 (LinkBench's updatelink picks an existing
-- link); nothing when that link is hidden or the node has none.  The count does not change.
CREATE OR REPLACE FUNCTION lb_update_link(a bigint, r int, maxid bigint, d varchar)
    RETURNS void LANGUAGE sql AS $$
    UPDATE linktable SET data = d, time = lb_now(), version = version + 1
        WHERE link_type = 1 + r % greatest(1, lb_degree(a)) % 2 AND id1 = a
          AND id2 = lb_id2(a, r % greatest(1, lb_degree(a)), maxid) AND visibility = 1 $$;

-- The (id1, link_type) pairs whose count is not their number of visible links.
CREATE OR REPLACE VIEW lb_check AS
    SELECT coalesce(c.id, l.id1) AS id1, coalesce(c.link_type, l.link_type) AS link_type,
           coalesce(c.count, 0) AS count, coalesce(l.visible, 0) AS visible
    FROM counttable c
    FULL JOIN (SELECT id1, link_type, count(*) AS visible FROM linktable
               WHERE visibility = 1 GROUP BY id1, link_type) l
        ON c.id = l.id1 AND c.link_type = l.link_type
    WHERE coalesce(c.count, 0) <> coalesce(l.visible, 0);

INSERT INTO nodetable (type, version, time, data)
    SELECT 1, 0, 0, convert_to(repeat(md5(n::text), 4), 'UTF8') FROM generate_series(1, :maxid) n;
INSERT INTO linktable
    SELECT n, lb_id2(n, k, :maxid), 1 + k % 2, 1, left(md5((n * 16 + k)::text), 8), 0, 0
    FROM generate_series(1, :maxid) n, generate_series(0, 9) k
    WHERE k < lb_degree(n)
    ON CONFLICT DO NOTHING;
INSERT INTO counttable
    SELECT id1, link_type, count(*), 0, 0 FROM linktable GROUP BY id1, link_type;
CREATE INDEX id1_type ON linktable (id1, link_type, visibility, time, id2, version, data);
VACUUM ANALYZE;
