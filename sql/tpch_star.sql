-- Machine learning over the star join of Galley's TPC-H experiments
-- (Galley section 8.1, issue 21): each line item's features from its
-- supplier, part, order and customer (the customer reached through the
-- order), and four models over them written the naive way, on the feature
-- matrix X as an expression; the optimizer finds the factorized plan (the
-- weights pushed into each feature table, distributivity over the sum of
-- the feature blocks). Needs the TPC-H tables; in the shell, from the
-- repository root:
--
--   CALL dbgen(sf = 0.01);
--   .read sql/tpch_star.sql
--
-- tests/tpch_ml.rs checks every model against numpy on the materialized
-- feature matrix (scripts/record-tpch-ml-answers); scripts/bench-tpch-ml
-- times them. Lines starting with "-- @" mark the sections the benchmark
-- runs one at a time.
--
-- The 139 features j, as Galley's scripts define them: one-hot
-- categoricals, and floor(x) % 100 of the numeric columns.
--   supplier   0 acctbal          1..25   nation
--   part      26 retailprice     27      size          28..32 mfgr
--             33..57 brand       58..97  container
--   orders    98 totalprice      99..101 orderstatus   102..106 orderpriority
--             107 shippriority
--   customer 108 acctbal         109..133 nation       134..138 mktsegment

-- @features
-- L[o,n,s,p,c]: line item n of order o, with its supplier, part and the
-- order's customer.
CREATE TABLE L (o BIGINT, n BIGINT, s BIGINT, p BIGINT, c BIGINT, PRIMARY KEY (o, n, s, p, c));
INSERT INTO L
  SELECT l.l_orderkey, l.l_linenumber, l.l_suppkey, l.l_partkey, ord.o_custkey
  FROM lineitem l JOIN orders ord ON l.l_orderkey = ord.o_orderkey;

-- The one-hot code of every category value.
CREATE TABLE onehot (name VARCHAR, j BIGINT, PRIMARY KEY (name));
INSERT INTO onehot VALUES
  ('Manufacturer#1', 28), ('Manufacturer#2', 29), ('Manufacturer#3', 30),
  ('Manufacturer#4', 31), ('Manufacturer#5', 32),
  ('Brand#11', 33), ('Brand#12', 34), ('Brand#13', 35), ('Brand#14', 36), ('Brand#15', 37),
  ('Brand#21', 38), ('Brand#22', 39), ('Brand#23', 40), ('Brand#24', 41), ('Brand#25', 42),
  ('Brand#31', 43), ('Brand#32', 44), ('Brand#33', 45), ('Brand#34', 46), ('Brand#35', 47),
  ('Brand#41', 48), ('Brand#42', 49), ('Brand#43', 50), ('Brand#44', 51), ('Brand#45', 52),
  ('Brand#51', 53), ('Brand#52', 54), ('Brand#53', 55), ('Brand#54', 56), ('Brand#55', 57),
  ('SM CASE', 58), ('SM BOX', 59), ('SM BAG', 60), ('SM JAR', 61), ('SM PKG', 62),
  ('SM PACK', 63), ('SM CAN', 64), ('SM DRUM', 65),
  ('LG CASE', 66), ('LG BOX', 67), ('LG BAG', 68), ('LG JAR', 69), ('LG PKG', 70),
  ('LG PACK', 71), ('LG CAN', 72), ('LG DRUM', 73),
  ('MED CASE', 74), ('MED BOX', 75), ('MED BAG', 76), ('MED JAR', 77), ('MED PKG', 78),
  ('MED PACK', 79), ('MED CAN', 80), ('MED DRUM', 81),
  ('JUMBO CASE', 82), ('JUMBO BOX', 83), ('JUMBO BAG', 84), ('JUMBO JAR', 85),
  ('JUMBO PKG', 86), ('JUMBO PACK', 87), ('JUMBO CAN', 88), ('JUMBO DRUM', 89),
  ('WRAP CASE', 90), ('WRAP BOX', 91), ('WRAP BAG', 92), ('WRAP JAR', 93), ('WRAP PKG', 94),
  ('WRAP PACK', 95), ('WRAP CAN', 96), ('WRAP DRUM', 97),
  ('F', 99), ('O', 100), ('P', 101),
  ('1-URGENT', 102), ('2-HIGH', 103), ('3-MEDIUM', 104), ('4-NOT SPECIFIED', 105), ('5-LOW', 106),
  ('AUTOMOBILE', 134), ('BUILDING', 135), ('FURNITURE', 136), ('HOUSEHOLD', 137),
  ('MACHINERY', 138);

-- The feature blocks of the dimension tables, disjoint in j.
CREATE TABLE S (s BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (s, j));
INSERT INTO S SELECT s_suppkey, 0, floor(s_acctbal) % 100 FROM supplier;
INSERT INTO S SELECT s_suppkey, 1 + s_nationkey, 1.0 FROM supplier;

CREATE TABLE P (p BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (p, j));
INSERT INTO P SELECT p_partkey, 26, floor(p_retailprice) % 100 FROM part;
INSERT INTO P SELECT p_partkey, 27, p_size % 100 FROM part;
INSERT INTO P SELECT pa.p_partkey, h.j, 1.0 FROM part pa JOIN onehot h ON pa.p_mfgr = h.name;
INSERT INTO P SELECT pa.p_partkey, h.j, 1.0 FROM part pa JOIN onehot h ON pa.p_brand = h.name;
INSERT INTO P SELECT pa.p_partkey, h.j, 1.0 FROM part pa JOIN onehot h ON pa.p_container = h.name;

CREATE TABLE O (o BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (o, j));
INSERT INTO O SELECT o_orderkey, 98, floor(o_totalprice) % 100 FROM orders;
INSERT INTO O SELECT od.o_orderkey, h.j, 1.0 FROM orders od JOIN onehot h ON od.o_orderstatus = h.name;
INSERT INTO O SELECT od.o_orderkey, h.j, 1.0 FROM orders od JOIN onehot h ON od.o_orderpriority = h.name;
INSERT INTO O SELECT o_orderkey, 107 + o_shippriority, 1.0 FROM orders;

CREATE TABLE C (c BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (c, j));
INSERT INTO C SELECT c_custkey, 108, floor(c_acctbal) % 100 FROM customer;
INSERT INTO C SELECT c_custkey, 109 + c_nationkey, 1.0 FROM customer;
INSERT INTO C SELECT cu.c_custkey, h.j, 1.0 FROM customer cu JOIN onehot h ON cu.c_mktsegment = h.name;

-- The weights, each from a formula of its indices: theta[j] for the
-- regressions; W1[k,j], W2[k,m] and W3[k] for the network (hidden width 25).
CREATE TABLE idx (i BIGINT, PRIMARY KEY (i));
INSERT INTO idx VALUES
  (0), (1), (2), (3), (4), (5), (6), (7), (8), (9), (10), (11), (12), (13), (14), (15),
  (16), (17), (18), (19), (20), (21), (22), (23), (24), (25), (26), (27), (28), (29),
  (30), (31), (32), (33), (34), (35), (36), (37), (38), (39), (40), (41), (42), (43),
  (44), (45), (46), (47), (48), (49), (50), (51), (52), (53), (54), (55), (56), (57),
  (58), (59), (60), (61), (62), (63), (64), (65), (66), (67), (68), (69), (70), (71),
  (72), (73), (74), (75), (76), (77), (78), (79), (80), (81), (82), (83), (84), (85),
  (86), (87), (88), (89), (90), (91), (92), (93), (94), (95), (96), (97), (98), (99),
  (100), (101), (102), (103), (104), (105), (106), (107), (108), (109), (110), (111),
  (112), (113), (114), (115), (116), (117), (118), (119), (120), (121), (122), (123),
  (124), (125), (126), (127), (128), (129), (130), (131), (132), (133), (134), (135),
  (136), (137), (138);
CREATE TABLE theta (j BIGINT, v DOUBLE, PRIMARY KEY (j));
INSERT INTO theta SELECT i, (i * 7 % 11 - 5) / 100.0 FROM idx;
CREATE TABLE W1 (k BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (k, j));
INSERT INTO W1 SELECT a.i, b.i, ((a.i * 5 + b.i * 3) % 13 - 6) / 500.0 FROM idx a, idx b WHERE a.i < 25;
CREATE TABLE W2 (k BIGINT, m BIGINT, v DOUBLE, PRIMARY KEY (k, m));
INSERT INTO W2 SELECT a.i, b.i, ((a.i * 3 + b.i * 7) % 11 - 4) / 10.0 FROM idx a, idx b WHERE a.i < 25 AND b.i < 25;
CREATE TABLE W3 (k BIGINT, v DOUBLE, PRIMARY KEY (k));
INSERT INTO W3 SELECT i, (i * 4 % 9 - 4) / 2.0 FROM idx WHERE i < 25;

-- @linear_regression
-- y = X theta.
y[o,n] = SUM(s,p,c,j) L[o,n,s,p,c] * (S[s,j] + P[p,j] + O[o,j] + C[c,j]) * theta[j];

-- @logistic_regression
-- sigmoid(X theta), for each line item: sigmoid(0) is not 0, so the
-- prediction is multiplied by 1 for each line item (SUM(s,p,c) L) rather
-- than made for every (o, n).
logistic[o,n] = (SUM(s,p,c) L[o,n,s,p,c]) * sigmoid(SUM(s,p,c,j) L[o,n,s,p,c] * (S[s,j] + P[p,j] + O[o,j] + C[c,j]) * theta[j]);

-- @covariance
-- X^T X.
cov[j,k] = SUM(o,n) (SUM(s,p,c) L[o,n,s,p,c] * (S[s,j] + P[p,j] + O[o,j] + C[c,j]))
  * (SUM(s2,p2,c2) L[o,n,s2,p2,c2] * (S[s2,k] + P[p2,k] + O[o,k] + C[c2,k]));

-- @neural_network
-- sigmoid(W3 relu(W2 relu(W1 X))), one prediction per line item.
h1[o,n,k] = relu(SUM(s,p,c,j) L[o,n,s,p,c] * (S[s,j] + P[p,j] + O[o,j] + C[c,j]) * W1[k,j]);
h2[o,n,k] = relu(SUM(m) h1[o,n,m] * W2[k,m]);
nn[o,n] = (SUM(s,p,c) L[o,n,s,p,c]) * sigmoid(SUM(k) h2[o,n,k] * W3[k]);
