-- The sample tables of data/ (see data/README.md). In the shell, from the
-- repository root: .read sql/samples.sql

-- A weighted directed graph (Matrix Market): edge src -> dst has a weight.
CREATE TABLE graph AS
  SELECT * FROM read_mtx('data/graph.mtx', keys = ['src', 'dst'], values = ['weight']);

-- Units sold per store and product (CSV with string keys).
CREATE TABLE sales AS
  SELECT * FROM read_csv('data/sales.csv', keys = ['store', 'product'], values = ['units']);

-- A rating per reviewer, movie and week (FROSTT .tns, 1-based coordinates).
CREATE TABLE ratings AS
  SELECT * FROM read_tns('data/ratings.tns', keys = ['reviewer', 'movie', 'week'], values = ['rating']);
