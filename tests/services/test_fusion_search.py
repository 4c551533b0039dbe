"""Search by meaning fused with keywords (app/services/search/fusion.py) and the background
indexer (app/services/search/indexer.py), through the services on both backends: a paraphrase with
no word in common ranks first, entries not embedded yet are found by their words, vectors
are per tenant and go with their entry, and the switches turn meaning off."""

import asyncio
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from app.deps import Container
from app.services import entries
from app.services.context import loader
from app.services.records import EntryFilter, EntryIn, EntryPatch, Scope
from app.services.search import fusion, indexer
from app.storage.models import entry_vectors_table
from app.storage.search import vectors
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement, write_transaction
from tests.conftest import make_tenant

PARAPHRASE = EntryIn(
    Scope.ENTITY,
    "acme",
    "Client wants their money back",
    "- The customer asked us to return the payment for the cancelled order.",
)
OTHERS = [
    EntryIn(Scope.ENTITY, "acme", f"Weekly report {i}", f"- pacing and creative notes {i}")
    for i in range(8)
] + [EntryIn(Scope.ENTITY, "acme", "Refund policy", "- refunds need the finance lead's approval")]
QUESTION = "reimbursement request from a purchaser"


def _semantic(container: Container) -> fusion.Semantic:
    assert container.semantic is not None, "the local embedder is installed by make"
    return container.semantic


def _use(container: Container, embedder: Any) -> None:
    """Every local-model tenant embeds with `embedder` from now on (searches and indexers)."""
    assert container.embedders is not None
    container.embedders.local = embedder


async def _embed_all(container: Container, db: TenantDb) -> int:
    embedder = await _semantic(container).embedder_for(db.tenant_id)
    assert embedder is not None
    return await indexer.catch_up(db, embedder, batch=4, owner="test")


async def _loaded(db: TenantDb) -> list[str]:
    """The titles of the entries the context loader packs for QUESTION in acme's scope."""
    result = await loader.load_context(
        db,
        scope=Scope.ENTITY,
        scope_ref="acme",
        query=QUESTION,
        max_tokens=400,
        include_institutional=False,
    )
    return [e.title for e in result.entries]


async def _search(db: TenantDb, text: str, **kw: Any) -> list[str]:
    page = await entries.list_entries(db, EntryFilter(search=text, **kw), first=5, after=None)
    return [e.node.title for e in page.edges]


async def test_a_paraphrase_with_no_word_in_common_ranks_first(
    container: Container, db: TenantDb
) -> None:
    for e in [*OTHERS, PARAPHRASE]:
        await entries.create_entry(db, e)
    # Not embedded yet: the keyword search alone, which cannot find the paraphrase.
    assert PARAPHRASE.title not in await _search(db, QUESTION + " refund")
    assert await _embed_all(container, db) >= 3
    page = await entries.list_entries(db, EntryFilter(search=QUESTION), first=5, after=None)
    assert page.edges[0].node.title == PARAPHRASE.title
    assert page.edges[0].matched_terms == [] and page.edges[0].similarity is not None
    assert page.edges[0].similarity > 0.2
    # Per request: keywords only finds nothing with these words.
    assert await _search(db, QUESTION, keyword_only=True) == []


async def test_without_the_local_model_a_search_goes_by_keywords(
    container: Container, db: TenantDb
) -> None:
    _use(container, None)  # what a process without the embedder's wheel holds
    for e in [*OTHERS, PARAPHRASE]:
        await entries.create_entry(db, e)
    page = await entries.list_entries(db, EntryFilter(search="money back"), first=5, after=None)
    assert [e.node.title for e in page.edges] == [PARAPHRASE.title]
    assert page.edges[0].similarity is None and page.edges[0].matched_terms


async def test_unrelated_words_find_nothing_by_meaning(container: Container, db: TenantDb) -> None:
    for e in [*OTHERS, PARAPHRASE]:
        await entries.create_entry(db, e)
    await _embed_all(container, db)
    # Every entry is some distance away; none is near enough to count as a hit.
    assert await _search(db, "zebra migration patterns in kenya") == []
    assert (await _search(db, QUESTION))[0] == PARAPHRASE.title
    # With no floor, the nearest entries come back whatever the words (another search: the
    # page cache keeps the first one's empty page).
    sem = _semantic(container)
    floor, zero = sem.min_similarity, sem.zero
    sem.min_similarity = sem.zero = -1.0
    try:
        assert len(await _search(db, "giraffes of the savanna at night")) == 5
    finally:
        sem.min_similarity, sem.zero = floor, zero


async def test_the_tenant_switch_and_changed_entries(container: Container, db: TenantDb) -> None:
    made = [await entries.create_entry(db, e) for e in [*OTHERS, PARAPHRASE]]
    await _embed_all(container, db)
    assert (await _search(db, QUESTION))[0] == PARAPHRASE.title
    async with write_transaction(db.engine) as conn:
        await vectors.set_keyword_only(conn, True)
    assert await _search(db, QUESTION) == []
    async with write_transaction(db.engine) as conn:
        await vectors.set_keyword_only(conn, False)
    # A changed entry's vector is stale until embedded again; nothing else is re-embedded.
    await entries.update_entry(
        db, made[-1].id, EntryPatch(title="Lunch menu", summary="- pasta on friday"), by="test"
    )
    async with read_statement(db.engine) as conn:
        model = (await _semantic(container).embedder_for(db.tenant_id)).model  # type: ignore[union-attr]
        assert len(await vectors.pending(conn, model, 100)) == 1
    assert await _embed_all(container, db) == 1
    assert (await _search(db, QUESTION))[:1] != [PARAPHRASE.title]


async def test_vectors_are_per_tenant_and_go_with_their_entry(
    container: Container, db: TenantDb
) -> None:
    other = await make_tenant(container, "globex")
    async with container.tenants.lease(other.id) as db_b:
        await entries.create_entry(db_b, PARAPHRASE)
        await _embed_all(container, db_b)
        for e in OTHERS:
            await entries.create_entry(db, e)
        await _embed_all(container, db)
        # Tenant A's search never sees B's entry, by words or by meaning.
        assert PARAPHRASE.title not in await _search(db, QUESTION)
        assert (await _search(db_b, QUESTION)) == [PARAPHRASE.title]
        async with read_statement(db_b.engine) as conn:
            n = await conn.execute(select(func.count()).select_from(entry_vectors_table))
            assert n.scalar() == 1
        (found,) = (
            await entries.list_entries(db_b, EntryFilter(search=QUESTION), first=1, after=None)
        ).edges
        await entries.delete_entry(db_b, found.node.id, by="test")
        async with read_statement(db_b.engine) as conn:
            n = await conn.execute(select(func.count()).select_from(entry_vectors_table))
            assert n.scalar() == 0


def test_score_fusion() -> None:
    sem = fusion.Semantic(embedder_for=_no_embedder, weight=0.2, zero=0.0, min_similarity=0.3)
    # bm25 ranks (lower is better) and similarities, each side scaled so its best is 1.
    keyword = [(1, -10.0), (2, -9.0), (3, -2.0)]
    dense = [(3, 0.6), (4, 0.5), (2, 0.3), (5, 0.2)]
    ranked = fusion.fuse(keyword, dense, sem)
    # 2 is on both sides and overtakes 1; 3, far behind on words, stays behind 1;
    # 4 (meaning alone, near enough) joins; 5 (meaning alone, under the floor) does not.
    assert [seq for seq, _ in ranked] == [2, 1, 3, 4]
    assert ranked[0][1] == pytest.approx(0.8 * 0.9 + 0.2 * 0.5)
    # A tag named in the search lifts its entries by the boost.
    boosted = fusion.fuse(keyword, dense, sem, boosted={1})
    assert boosted[0][0] == 1 and boosted[0][1] == pytest.approx(0.8 + sem.tag_boost)
    # Keywords only (nothing near enough): the keyword order, exactly.
    assert [s for s, _ in fusion.fuse(keyword, [], sem)] == [1, 2, 3]


async def _no_embedder(_tenant: str) -> None:
    return None


@pytest.mark.parametrize(
    ("text", "entity", "sent"),
    [("what did Alice approve", {"Alice"}, "what did approve"), ("Alice", {"Alice"}, "Alice")],
)
def test_entity_words_are_not_sent_to_the_embedder(text: str, entity: set[str], sent: str) -> None:
    assert " ".join(fusion._dense_text(text, entity).split()) == sent


class Renamed:
    """The local model under another name: what a changed model looks like to the indexer."""

    def __init__(self, inner: Any, model: str) -> None:
        self.inner, self.model, self.texts = inner, model, 0

    async def embed(self, texts: Any) -> Any:
        self.texts += len(texts)
        return await self.inner.embed(texts)


async def test_a_changed_model_is_re_embedded_in_the_background(
    container: Container, db: TenantDb
) -> None:
    for e in [*OTHERS, PARAPHRASE]:
        await entries.create_entry(db, e)
    local = await _semantic(container).embedder_for(db.tenant_id)
    current: dict[str, Any] = {"embedder": Renamed(local, "model-a")}
    _use(container, current["embedder"])
    tick = container.indexer()
    assert tick is not None
    assert await tick.tick() >= 1 and current["embedder"].texts == len(OTHERS) + 1
    assert await tick.tick() == 0  # caught up: nothing is embedded twice
    current["embedder"] = Renamed(local, "model-b")
    _use(container, current["embedder"])
    # Until model-b has embedded anything: keywords alone (model-a's vectors are not used).
    assert await _search(db, QUESTION) == []
    assert await tick.tick() >= 1 and current["embedder"].texts == len(OTHERS) + 1
    assert (await _search(db, QUESTION))[0] == PARAPHRASE.title
    async with read_statement(db.engine) as conn:
        models = {m for (m,) in await conn.execute(select(entry_vectors_table.c.model))}
    assert models == {"model-b"}
    # The tenant's switch: the indexer embeds nothing for a keyword-only tenant.
    await indexer.set_keyword_only(db, True)
    await entries.create_entry(db, PARAPHRASE)
    embedded = current["embedder"].texts
    assert await tick.tick() == 0 and current["embedder"].texts == embedded


SEARCH = """
query($search: String!, $keywordOnly: Boolean!) {
  memoryEntries(filter: {search: $search, keywordOnly: $keywordOnly}, first: 3) {
    edges { node { title } score matchedTerms similarity }
  }
}"""


async def test_graphql_and_rest_explain_each_hit(container: Container, db: TenantDb) -> None:
    from app.edge.app import create_app
    from app.graphql.request_context import Context
    from app.graphql.schema import schema

    for e in [*OTHERS, PARAPHRASE]:
        await entries.create_entry(db, e)
    await _embed_all(container, db)
    ctx = Context(container=container, db=db, request_id="test-request")
    fused = await schema.execute(
        SEARCH, variable_values={"search": QUESTION, "keywordOnly": False}, context_value=ctx
    )
    assert fused.errors is None and fused.data is not None
    (top, *_) = fused.data["memoryEntries"]["edges"]
    assert top["node"]["title"] == PARAPHRASE.title and top["matchedTerms"] == []
    assert top["score"] == 0 and 0 < top["similarity"] <= 1
    plain = await schema.execute(
        SEARCH, variable_values={"search": "refund", "keywordOnly": True}, context_value=ctx
    )
    assert plain.data is not None
    assert [e["similarity"] for e in plain.data["memoryEntries"]["edges"]] == [None]

    tenant = await container.control.tenants()
    key = await tenants_key(container, tenant[0].id)
    transport = httpx.ASGITransport(app=create_app(container=container))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        headers = {"Authorization": f"Bearer {key}"}
        r = await http.get("/memory", params={"search": QUESTION}, headers=headers)
        assert r.status_code == 200, r.text
        assert r.json()["items"][0]["title"] == PARAPHRASE.title
        assert r.json()["items"][0]["similarity"] > 0
        r = await http.get(
            "/memory", params={"search": QUESTION, "keywordOnly": "true"}, headers=headers
        )
        assert r.status_code == 200 and r.json()["items"] == []


async def tenants_key(container: Container, tenant_id: str) -> str:
    from app.services import tenants

    return (await tenants.create_key(container.control, tenant_id)).secret


async def test_the_context_loader_fuses_too(container: Container, db: TenantDb) -> None:
    many = [
        EntryIn(
            Scope.ENTITY,
            "acme",
            f"Banner request {i}",
            f"- design request {i}: new sizes",
            importance=5,
        )
        for i in range(40)
    ]
    for e in [*many, PARAPHRASE]:
        await entries.create_entry(db, e)

    assert PARAPHRASE.title not in await _loaded(db)  # words alone: it shares none
    await _embed_all(container, db)
    assert PARAPHRASE.title in await _loaded(db)


async def test_erasing_a_subject_removes_its_vectors(container: Container, db: TenantDb) -> None:
    from app.services.data_rights import erasure

    await entries.create_entry(db, PARAPHRASE)
    await entries.create_entry(db, EntryIn(Scope.ENTITY, "globex", "Other client", "- kept"))
    await _embed_all(container, db)
    await erasure.erase_subject(db, Scope.ENTITY, "acme", by="test")
    async with read_statement(db.engine) as conn:
        rows = await conn.execute(select(entry_vectors_table.c.entry_seq))
        assert len(list(rows)) == 1  # globex's alone
    assert await _search(db, QUESTION) in ([], ["Other client"])


async def test_the_page_cache_and_the_question_vector_are_kept(
    container: Container, db: TenantDb
) -> None:
    for e in [*OTHERS, PARAPHRASE]:
        await entries.create_entry(db, e)
    sem = _semantic(container)
    counting = Renamed(await sem.embedder_for(db.tenant_id), "counted")
    _use(container, counting)
    await indexer.catch_up(db, counting, batch=64, owner="test")
    embedded = counting.texts
    first = await _search(db, QUESTION)
    assert counting.texts == embedded + 1  # the question, once
    assert await _search(db, QUESTION) == first  # a cached page: nothing embedded
    await entries.create_entry(db, EntryIn(Scope.ENTITY, "acme", "Lunch", "- pasta"))
    assert (await _search(db, QUESTION))[0] == PARAPHRASE.title  # searched again...
    assert counting.texts == embedded + 1  # ...with the question's kept vector


async def test_concurrent_context_loads_never_wait_on_their_own_pool(
    container: Container, db: TenantDb
) -> None:
    """More context loads than the tenant's pool has connections, each needing the vectors
    read again: each reads in the connection it holds (a second one from the same pool would
    wait forever once every connection is held by a load waiting for the read)."""
    for e in [*OTHERS, PARAPHRASE]:
        await entries.create_entry(db, e)
    await _embed_all(container, db)
    await entries.create_entry(db, EntryIn(Scope.ENTITY, "acme", "Lunch", "- pasta"))
    await _embed_all(container, db)  # the revision moved: the next loads read again

    loads = await asyncio.wait_for(asyncio.gather(*(_loaded(db) for _ in range(16))), timeout=20)
    assert all(PARAPHRASE.title in titles for titles in loads)


async def test_a_slow_matrix_is_refreshed_in_the_background(
    container: Container, db: TenantDb
) -> None:
    """A tenant with many vectors is searched with the matrix it has while one
    read runs in the background; the entries embedded since are found by their words."""
    sem = _semantic(container)
    for e in OTHERS:
        await entries.create_entry(db, e)
    await _embed_all(container, db)
    assert PARAPHRASE.title not in await _search(db, QUESTION)  # the matrix is read
    sem.matrices.background_rows, sem.matrices.refresh_gap = 0, 0.0  # every matrix is big
    await entries.create_entry(db, PARAPHRASE)
    await _embed_all(container, db)
    assert PARAPHRASE.title not in await _search(db, QUESTION)  # the old matrix, at once
    # ...and one read under way (on a fast database it may have ended with the search).
    refreshing = sem.matrices._refreshing.get(db.tenant_id)
    if refreshing is not None:
        await refreshing
    assert (await _search(db, QUESTION))[0] == PARAPHRASE.title


async def test_meaning_keeps_to_the_searched_scope_and_filters(
    container: Container, db: TenantDb
) -> None:
    """The dense side filters scope and scopeRef in memory and the other filters (tags,
    importance) in the database on its nearest candidates: neither lets an entry through."""
    elsewhere = EntryIn(Scope.ENTITY, "globex", PARAPHRASE.title, PARAPHRASE.summary)
    untagged = EntryIn(Scope.ENTITY, "acme", "Money back", PARAPHRASE.summary, importance=2)
    for e in [*OTHERS, elsewhere, untagged]:
        await entries.create_entry(db, e)
    await _embed_all(container, db)
    in_acme = await _search(db, QUESTION, scope=Scope.ENTITY, scope_ref="acme")
    assert in_acme[0] == "Money back" and PARAPHRASE.title not in in_acme
    assert await _search(db, QUESTION, scope_ref="globex") == [PARAPHRASE.title]
    assert await _search(db, QUESTION, scope=Scope.PROJECT) == []
    assert "Money back" not in await _search(db, QUESTION, scope_ref="acme", min_importance=3)
    assert await _search(db, QUESTION, scope_ref="acme", tags=["nothing"]) == []


async def test_tag_answers_are_kept_once_per_question(container: Container, db: TenantDb) -> None:
    """Whether a search word is a tag in the searched scope is kept per question, the latest
    answer only: writes moving the entries revision on replace the answers rather than add
    to them (which once piled them up to TAG_ANSWERS_MAX under a steady write load), and a
    tag a write adds is seen by the next search."""
    for e in [*OTHERS, PARAPHRASE]:
        await entries.create_entry(db, e)
    await _embed_all(container, db)
    sem = _semantic(container)
    sem._tags.clear()
    question = "refund finance"  # probed as refund, Refund, finance, Finance
    await _search(db, question, scope=Scope.ENTITY, scope_ref="acme")
    assert len(sem._tags) == 4
    for i in range(5):
        await entries.create_entry(db, EntryIn(Scope.ENTITY, "acme", f"Note {i}", "- lunch"))
        await _search(db, question, scope=Scope.ENTITY, scope_ref="acme")
    assert len(sem._tags) == 4
    refund = (db.tenant_id, "entity", "acme", "refund")
    assert sem._tags[refund][1] is False
    await entries.create_entry(
        db, EntryIn(Scope.ENTITY, "acme", "Refunds", "- finance approves", tags=["refund"])
    )
    await _search(db, question, scope=Scope.ENTITY, scope_ref="acme")
    assert sem._tags[refund][1] is True and len(sem._tags) == 4
