"""Full-text search per backend (fulltext: SQLite FTS5, with its PostgreSQL half in
fulltext_postgres; what a search asks for: spec) and entry vectors in the tenant's database
(vectors)."""
