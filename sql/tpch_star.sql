-- The star-join feature matrix of Galley's TPC-H experiments (issue 21),
-- begun: the TPC-H tables at a scale factor, each line item's features
-- from its supplier, part, order and customer, and linear-regression
-- inference over them, written the naive way. In the shell, from the
-- repository root: .read sql/tpch_star.sql (tests/tpch.rs runs it at SF
-- 0.001 and checks X and y against the tables' rows).
--
-- Features j (disjoint blocks):
--   0       s_acctbal          1..25   supplier's nation, one-hot
--   26      p_retailprice      27..76  p_size (1..50), one-hot
--   77      o_totalprice
--   78      c_acctbal          79..103 customer's nation, one-hot

CALL dbgen(sf = 0.001);

-- L[o,n,s,p,c]: line item n of order o, with its supplier, part and
-- customer (a bag: one row per line item).
CREATE TABLE L (o BIGINT, n BIGINT, s BIGINT, p BIGINT, c BIGINT, PRIMARY KEY (o, n, s, p, c));
INSERT INTO L
  SELECT l.l_orderkey, l.l_linenumber, l.l_suppkey, l.l_partkey, ord.o_custkey
  FROM lineitem l JOIN orders ord ON l.l_orderkey = ord.o_orderkey;

-- The feature blocks of each dimension table.
CREATE TABLE S (s BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (s, j));
INSERT INTO S SELECT s_suppkey, 0, s_acctbal FROM supplier;
INSERT INTO S SELECT s_suppkey, 1 + s_nationkey, 1.0 FROM supplier;

CREATE TABLE P (p BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (p, j));
INSERT INTO P SELECT p_partkey, 26, p_retailprice FROM part;
INSERT INTO P SELECT p_partkey, 26 + p_size, 1.0 FROM part;

CREATE TABLE O (o BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (o, j));
INSERT INTO O SELECT o_orderkey, 77, o_totalprice FROM orders;

CREATE TABLE C (c BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (c, j));
INSERT INTO C SELECT c_custkey, 78, c_acctbal FROM customer;
INSERT INTO C SELECT c_custkey, 79 + c_nationkey, 1.0 FROM customer;

-- The feature matrix, materialized: one row (o, n) per line item.
X[o,n,j] = SUM(s,p,c) L[o,n,s,p,c] * (S[s,j] + P[p,j] + O[o,j] + C[c,j]);

-- Linear-regression inference with fixed weights theta, written without
-- X: the optimizer may push theta into each feature block.
CREATE TABLE theta (j BIGINT, v DOUBLE, PRIMARY KEY (j));
INSERT INTO theta VALUES
  (0, -0.05), (1, -0.01), (2, 0.03), (3, -0.04), (4, 0.0), (5, 0.04), (6,
  -0.03), (7, 0.01), (8, 0.05), (9, -0.02), (10, 0.02), (11, -0.05), (12,
  -0.01), (13, 0.03), (14, -0.04), (15, 0.0), (16, 0.04), (17, -0.03), (18,
  0.01), (19, 0.05), (20, -0.02), (21, 0.02), (22, -0.05), (23, -0.01), (24,
  0.03), (25, -0.04), (26, 0.0), (27, 0.04), (28, -0.03), (29, 0.01), (30,
  0.05), (31, -0.02), (32, 0.02), (33, -0.05), (34, -0.01), (35, 0.03), (36,
  -0.04), (37, 0.0), (38, 0.04), (39, -0.03), (40, 0.01), (41, 0.05), (42,
  -0.02), (43, 0.02), (44, -0.05), (45, -0.01), (46, 0.03), (47, -0.04),
  (48, 0.0), (49, 0.04), (50, -0.03), (51, 0.01), (52, 0.05), (53, -0.02),
  (54, 0.02), (55, -0.05), (56, -0.01), (57, 0.03), (58, -0.04), (59, 0.0),
  (60, 0.04), (61, -0.03), (62, 0.01), (63, 0.05), (64, -0.02), (65, 0.02),
  (66, -0.05), (67, -0.01), (68, 0.03), (69, -0.04), (70, 0.0), (71, 0.04),
  (72, -0.03), (73, 0.01), (74, 0.05), (75, -0.02), (76, 0.02), (77, -0.05),
  (78, -0.01), (79, 0.03), (80, -0.04), (81, 0.0), (82, 0.04), (83, -0.03),
  (84, 0.01), (85, 0.05), (86, -0.02), (87, 0.02), (88, -0.05), (89, -0.01),
  (90, 0.03), (91, -0.04), (92, 0.0), (93, 0.04), (94, -0.03), (95, 0.01),
  (96, 0.05), (97, -0.02), (98, 0.02), (99, -0.05), (100, -0.01), (101,
  0.03), (102, -0.04), (103, 0.0);
y[o,n] = SUM(s,p,c,j) L[o,n,s,p,c] * (S[s,j] + P[p,j] + O[o,j] + C[c,j]) * theta[j];
