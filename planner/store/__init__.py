"""The DuckDB store: the connection and its schema, and what lives in it (cards,
curves, points, saved plans, demand profiles, calibrations). Other packages keep their own
tables through the store's public read and write transactions."""
