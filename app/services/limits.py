"""The documented limits: part of the API contract (docs/limits.md), enforced by services."""

EVENT_BODY_MAX_BYTES = 65_536
ENTRY_SUMMARY_MAX_BYTES = 32_768
TITLE_MAX_CHARS = 200
KIND_MAX_CHARS = 64
REF_MAX_CHARS = 200  # scopeRef, source, sourceRef, idempotencyKey
TAGS_MAX = 20
TAG_MAX_CHARS = 64
SEARCH_MAX_CHARS = 1_000
PAGE_MAX = 100
BATCH_MAX = 1_000
FUTURE_SKEW_HOURS = 24  # occurredAt may be at most this far in the future
# Values in one filter list (kinds, sources, tags): a list is bound as one parameter, so
# the cap bounds the work of one request, not the statement's size.
FILTER_VALUES_MAX = 100

# GraphQL operations (enforced by the schema's extensions, app/graphql/schema.py): bounds on
# the work one document can ask for. Introspection fields do not count towards the depth.
GRAPHQL_MAX_DEPTH = 10  # nested selections; the deepest useful query here is about 6
GRAPHQL_MAX_ALIASES = 20  # per document; each alias can be a separate search
GRAPHQL_MAX_TOKENS = 5_000  # lexical tokens of a document (GraphiQL's introspection: ~180)
# Checked before validation (app/graphql/document_cost.py), so that no document costs more
# than a bounded walk: fields count once per expansion of the fragments that hold them.
GRAPHQL_MAX_FIELDS = 1_000  # selected fields with every fragment spread expanded
GRAPHQL_MAX_FRAGMENTS = 30  # fragment definitions per document
GRAPHQL_MAX_SPREADS = 100  # fragment spreads written in a document
GRAPHQL_MAX_DIRECTIVES = 50  # directives written in a document
GRAPHQL_MAX_OPERATIONS = 20  # operation definitions per document (one of them runs)
GRAPHQL_MAX_FIELD_PAIRS = 1_000  # same-named fields compared by field merging, weighted
GRAPHQL_MAX_VARIABLES = 50  # variable definitions per document
GRAPHQL_MAX_VALUES = 500  # literal values written in a document (arguments, list items...)
# Events one erasure over the API may remove (one transaction holds the tenant's write
# lock meanwhile); an operator's CLI erasure has no cap.
ERASURE_EVENTS_MAX = 100_000
