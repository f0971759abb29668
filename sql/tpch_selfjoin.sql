-- Machine learning over the self-join of Galley's TPC-H experiments
-- (Galley section 8.1, issue 21): one row for each pair of line items of
-- the same part, with the features of both suppliers and of the part, and
-- three models over them written the naive way. Needs the tables of the
-- features section of sql/tpch_star.sql (the supplier and part features,
-- the weights theta); in the shell, from the repository root:
--
--   CALL dbgen(sf = 0.01);
--   .read sql/tpch_star.sql
--   .read sql/tpch_selfjoin.sql
--
-- X[o1,n1,o2,n2,j] = SUM(s1,s2,p) L2[o1,n1,s1,p] * L2[o2,n2,s2,p]
--                      * (SA[s1,j] + SB[s2,j] + PB[p,j])
-- with 124 features j, disjoint blocks as Galley's scripts define them:
--   0..25    the first line item's supplier (S's features)
--   26..51   the second line item's supplier (S's features, shifted)
--   52..123  the part (P's features, shifted)
-- Lines starting with "-- @" mark the sections scripts/bench-tpch-ml runs
-- one at a time.

-- @features
-- L2[o,n,s,p]: line item n of order o, with its supplier and part.
CREATE TABLE L2 (o BIGINT, n BIGINT, s BIGINT, p BIGINT, PRIMARY KEY (o, n, s, p));
INSERT INTO L2 SELECT l_orderkey, l_linenumber, l_suppkey, l_partkey FROM lineitem;

-- The blocks, copied from S and P. A computed column (j + 26) is a value,
-- not a key, in einsql's SQL, so each copy selects one row per supplier
-- or part (one feature group at a time).
CREATE TABLE SA (s BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (s, j));
INSERT INTO SA SELECT s, j, v FROM S;
CREATE TABLE SB (s BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (s, j));
INSERT INTO SB SELECT s, j + 26, v FROM S WHERE j = 0;
INSERT INTO SB SELECT s, j + 26, v FROM S WHERE j > 0;
CREATE TABLE PB (p BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (p, j));
INSERT INTO PB SELECT p, j + 26, v FROM P WHERE j = 26;
INSERT INTO PB SELECT p, j + 26, v FROM P WHERE j = 27;
INSERT INTO PB SELECT p, j + 26, v FROM P WHERE j BETWEEN 28 AND 32;
INSERT INTO PB SELECT p, j + 26, v FROM P WHERE j BETWEEN 33 AND 57;
INSERT INTO PB SELECT p, j + 26, v FROM P WHERE j BETWEEN 58 AND 97;

-- @linear_regression
-- y2 = X theta, one prediction per pair (theta's first 124 weights).
y2[o1,n1,o2,n2] = SUM(s1,s2,p,j) L2[o1,n1,s1,p] * L2[o2,n2,s2,p]
  * (SA[s1,j] + SB[s2,j] + PB[p,j]) * theta[j];

-- @logistic_regression
-- sigmoid(X theta), for each pair of line items of the same part.
logistic2[o1,n1,o2,n2] = (SUM(s1,s2,p) L2[o1,n1,s1,p] * L2[o2,n2,s2,p])
  * sigmoid(SUM(s1,s2,p,j) L2[o1,n1,s1,p] * L2[o2,n2,s2,p]
    * (SA[s1,j] + SB[s2,j] + PB[p,j]) * theta[j]);

-- @covariance
-- X^T X.
cov2[j,k] = SUM(o1,n1,o2,n2)
  (SUM(s1,s2,p) L2[o1,n1,s1,p] * L2[o2,n2,s2,p] * (SA[s1,j] + SB[s2,j] + PB[p,j]))
  * (SUM(t1,t2,q) L2[o1,n1,t1,q] * L2[o2,n2,t2,q] * (SA[t1,k] + SB[t2,k] + PB[q,k]));
