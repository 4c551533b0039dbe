"""Domain operations. No HTTP, no GraphQL: the edge, the worker and the CLI all call these.

One public service call is one transaction.
"""
