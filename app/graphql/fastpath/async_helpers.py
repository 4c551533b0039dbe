"""graphql-core's resolver helpers (`info.async_helpers`) without the executor's reference
cycle, so a request's executor and all it holds are freed at once, not by the collector.
"""

import weakref
from asyncio import gather as asyncio_gather
from asyncio import get_running_loop, iscoroutine
from collections.abc import Sequence
from typing import Any

from graphql import GraphQLResolveInfoHelpers
from graphql.pyutils import is_awaitable as default_is_awaitable
from graphql.pyutils.gather_with_cancel import gather_with_cancel


def weak_async_helpers(executor: Any) -> GraphQLResolveInfoHelpers:
    """`GraphQLResolveInfoHelpers(gather=executor.gather_async_work,
    track=executor.track_async_work)`, graphql-core's, without a strong reference back.

    While the executor lives (all through its execution) each call is the executor's own.
    After, nothing waits for tracked work any more: a helper called then (by a resolver
    that kept its info) does what those methods do without tracking: `gather` is
    `gather_with_cancel`, `track` settles the awaitables among the values in the
    background (or closes pending coroutines when no event loop runs).
    """
    ref = weakref.ref(executor)

    def gather(values: Sequence[Any]) -> Any:
        alive = ref()
        return gather_with_cancel(*values) if alive is None else alive.gather_async_work(values)

    def track(values: Sequence[Any]) -> None:
        alive = ref()
        if alive is not None:
            alive.track_async_work(values)
            return
        awaitables = [value for value in values if default_is_awaitable(value)]
        if not awaitables:
            return
        try:
            get_running_loop()
        except RuntimeError:
            for awaitable in awaitables:
                if iscoroutine(awaitable):
                    awaitable.close()
            return
        _settling.add(future := asyncio_gather(*awaitables, return_exceptions=True))
        future.add_done_callback(_settling.discard)

    return GraphQLResolveInfoHelpers(gather=gather, track=track)


# Work tracked after its executor went (see `weak_async_helpers`), kept until settled.
_settling: set[Any] = set()
