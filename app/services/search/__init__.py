"""Search: a question to the words a full-text search looks for and a hit's score (analysis),
the entry search by words (keywords), search by meaning fused with it (fusion, over the
vectors held in the process: vector_matrix), which embedder a tenant uses (embedders,
gateway_embedding), the background indexer (indexer) and the search page cache
(page_cache)."""
