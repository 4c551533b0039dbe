"""The rules bench.retrieval_eval measures by, held to small cases so the bench cannot silently
measure the wrong thing: evidence by id, answers in a text, the newer statement first, the
baselines' packing, the LoCoMo reader and the long-chat generator's labels."""

import json
from datetime import UTC, date, datetime
from pathlib import Path

from app.tokens import estimate_tokens
from bench import longconv, retrieval_eval
from bench.retrieval_measures import (
    BaseTurn,
    Bm25,
    answer_in,
    contains,
    evidence_found,
    fts_query,
    newer_first,
    normalise,
    pack,
    positions_in,
    present_turns,
    recall_at,
    recency,
)
from bench.retrieval_sets import (
    Conversation,
    EvalSet,
    Question,
    Turn,
    from_chats,
    locomo,
    properties,
)


def _turn(tid: str, body: str) -> BaseTurn:
    return BaseTurn(tid, "utterance", f"utterance · entity/c · 2023-05-08 13:56 UTC · {tid}", body)


def test_evidence_is_counted_by_event_id_and_leniently_by_the_summary_that_folded_it():
    turn_of_event = {"evt_a": "D1:1", "evt_b": "D1:2", "evt_c": "D2:1"}
    folded = {"mem_s": ["D1:1", "D1:3"]}
    strict = present_turns(["evt_b"], ["mem_s"], turn_of_event)
    lenient = present_turns(["evt_b"], ["mem_s"], turn_of_event, folded)
    assert strict == {"D1:2"}
    assert lenient == {"D1:1", "D1:2", "D1:3"}
    assert evidence_found(["D1:1", "D1:2"], strict) == (False, True)
    assert evidence_found(["D1:1", "D1:2"], lenient) == (True, True)
    assert evidence_found(["D2:1"], lenient) == (False, False)
    assert evidence_found([], lenient) == (False, False)  # no evidence is never "all found"


def test_answers_are_matched_normalised_and_as_whole_words():
    assert normalise("The Copper  Kettle, on 7 May!") == "copper kettle on 7 may"
    text = normalise("Melanie: We went to the Copper-Kettle in May 2023.")
    assert contains(text, "copper kettle")
    assert contains(text, "The Copper Kettle.")
    assert not contains(text, "2022")
    assert not contains(normalise("in 20231 units"), "2023")  # a number inside another
    assert not contains(text, "the")  # an answer of articles alone matches nothing
    assert answer_in(text, ["copper kettle", "may 2023"])
    assert not answer_in(text, ["copper kettle", "june"])  # every item of a list
    assert not answer_in(text, [])


def test_the_newer_statement_must_be_present_and_before_every_older_one():
    assert newer_first("new", ["old"], {"new": 10, "old": 50})
    assert not newer_first("new", ["old"], {"new": 50, "old": 10})
    assert newer_first("new", ["old"], {"new": 10, "old": None})  # the older absent
    assert not newer_first("new", ["old"], {"new": None, "old": 10})  # the newer absent
    assert not newer_first("new", ["old1", "old2"], {"new": 20, "old1": 30, "old2": 5})
    # Both in one summary: ordered by where their values appear.
    assert not newer_first("new", ["old"], {"new": 7, "old": 7})
    assert newer_first("new", ["old"], {"new": 7, "old": 7}, tie=lambda a, b: True)


def test_positions_are_where_the_item_showing_a_turn_first_appears():
    markdown = "## Memory\n### s `mem_s`\n...\n## Recent events\n### e `evt_b`\n"
    at = positions_in(markdown, {"D1:1": "mem_s", "D1:2": "evt_b", "D1:9": "evt_z"})
    assert at["D1:1"] is not None and at["D1:2"] is not None
    assert at["D1:1"] < at["D1:2"]
    assert at["D1:9"] is None


def test_the_bm25_baseline_ranks_by_the_question_and_packs_within_the_budget():
    turns = [
        _turn("D1:1", "Caroline: I went to the LGBTQ support group yesterday."),
        _turn("D1:2", "Melanie: " + "I painted a lake sunrise last year. " * 60),
        _turn("D1:3", "Melanie: The kids loved the camping trip to the beach."),
        _turn("D1:4", "Caroline: Pottery class was fun."),
    ]
    bm25 = Bm25(turns)
    try:
        ranked = bm25.ranked("When did Caroline go to the support group?")
        assert ranked[0].id == "D1:1"
        assert "D1:3" not in [t.id for t in bm25.ranked("pottery")]
        assert bm25.ranked("?!") == []  # no words, no query
    finally:
        bm25.close()
    assert fts_query('Caroline\'s "group"?') == '"caroline" OR "s" OR "group"'
    for budget in (64, 120, 400, 4000):
        packed = pack(turns, budget)
        assert packed.tokens <= budget
        assert estimate_tokens(packed.markdown) <= budget
    # First fit: the long turn does not fit 400 tokens, the short ones after it still go in.
    packed = pack(turns, 400)
    assert packed.turns == ["D1:1", "D1:3", "D1:4"]
    assert all(t.body in packed.markdown for t in turns if t.id in packed.turns)
    assert pack(turns, 10).turns == []
    order = {t.id: i for i, t in enumerate(turns)}
    assert [t.id for t in recency(turns, order)][:2] == ["D1:4", "D1:3"]
    assert recall_at([["D1:4"], ["D1:3"]], ["D1:3"], 2)
    assert not recall_at([["D1:4"], ["D1:3"]], ["D1:3"], 1)


def test_locomo_is_read_with_dates_captions_mended_ids_and_without_adversarial_questions(
    tmp_path: Path,
):
    data = [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Caroline",
                "speaker_b": "Melanie",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hi Mel!"},
                    {
                        "speaker": "Melanie",
                        "dia_id": "D1:2",
                        "text": "Look at this.",
                        "blip_caption": "a painting of a sunset",
                    },
                ],
                "session_2_date_time": "10:00 am on 9 June, 2023",
                "session_2": [{"speaker": "Caroline", "dia_id": "D2:1", "text": "Pottery!"}],
            },
            "qa": [
                {
                    "question": "What did Mel paint?",
                    "answer": "a sunset",
                    "evidence": ["D1:2"],
                    "category": 4,
                },
                {
                    "question": "When?",
                    "answer": 2023,
                    "evidence": ["D1:1; D2:1", "D:2:1"],
                    "category": 2,
                },
                {
                    "question": "Tricky?",
                    "adversarial_answer": "x",
                    "evidence": ["D1:1"],
                    "category": 5,
                },
                {"question": "Lost?", "answer": "y", "evidence": ["D9:9"], "category": 1},
            ],
        }
    ]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data))
    s = locomo(path)
    turns = {t.id: t for t in s.conversations["conv-x"].turns}
    assert turns["D1:2"].body == "Melanie: Look at this. [shares a photo of a painting of a sunset]"
    assert turns["D1:1"].at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert turns["D1:2"].at > turns["D1:1"].at  # the session's turns keep their order
    assert turns["D2:1"].kind == "utterance"
    assert [(q.category, q.evidence, q.answers) for q in s.questions] == [
        ("single-hop", ("D1:2",), ("a sunset",)),
        ("temporal", ("D1:1", "D2:1"), ("2023",)),
    ]
    assert any("1 adversarial" in n for n in s.notes)
    assert any("1 questions without a known evidence turn" in n for n in s.notes)


def test_a_generated_chat_is_deterministic_and_its_answers_are_in_its_evidence_turns():
    chat = longconv.generate("tiny", 12_000, seed=7, anchor=date(2026, 6, 1))
    assert chat == longconv.generate("tiny", 12_000, seed=7, anchor=date(2026, 6, 1))
    assert chat != longconv.generate("tiny", 12_000, seed=8, anchor=date(2026, 6, 1))
    assert sum(estimate_tokens(t.body) for t in chat.turns) >= 12_000
    assert chat.turns[-1].at < "2026-06-01"
    assert {t.role for t in chat.turns} == {"user", "assistant"}
    texts = {t.id: normalise(t.body) for t in chat.turns}
    assert chat.questions
    assert {q.category for q in chat.questions} <= set(longconv.CATEGORIES)
    for q in chat.questions:
        for answer in q.answers:
            assert any(contains(texts[e], answer) for e in q.evidence), q
            if q.unique:
                others = [t for t in texts if t not in q.evidence]
                assert not any(contains(texts[t], answer) for t in others), q
        assert set(q.older) < set(q.evidence)
        if q.older:
            assert q.category == "knowledge-update" and q.older_answers
    assert longconv.Chat.from_json(json.loads(json.dumps(chat.to_json()))) == chat


def _turn_key(turn_id: str) -> tuple[int, int]:
    session, turn = turn_id[1:].split(":")
    return int(session), int(turn)


def test_generated_questions_need_several_turns_and_name_one_instance_each():
    chat = longconv.generate("mid", 150_000, seed=3, anchor=date(2026, 6, 1), questions=120)
    role = {t.id: t.role for t in chat.turns}
    session = {t.id: t.id.split(":")[0] for t in chat.turns}
    assert {q.category for q in chat.questions} == set(longconv.CATEGORIES)
    assert len({q.question for q in chat.questions}) == len(chat.questions)  # none ambiguous
    several = [q for q in chat.questions if len(q.evidence) > 1]
    assert len(several) >= 0.4 * len(chat.questions)
    evidence = [e for q in chat.questions for e in q.evidence]
    assert sum(role[e] == "assistant" for e in evidence) >= 0.15 * len(evidence)
    for q in chat.questions:
        assert list(q.evidence) == sorted(q.evidence, key=_turn_key), q
        if q.category == "multi-session":
            assert len({session[e] for e in q.evidence}) >= 2, q
    # A recommendation revised when the user came back: a changed fact told by the assistant.
    assert any(
        q.category == "knowledge-update" and all(role[e] == "assistant" for e in q.evidence)
        for q in chat.questions
    )


def test_a_generated_set_is_several_chats_and_says_how_it_compares_with_the_held_out_set():
    assert set(longconv.SETS) | {"locomo"} == set(retrieval_eval.SETS)
    chats = [longconv.generate(n, 12_000, seed=7, anchor=date(2026, 6, 1)) for n in ("a", "b")]
    s = from_chats("tiny", chats)
    assert list(s.conversations) == ["a", "b"]
    assert {q.conversation for q in s.questions} == {"a", "b"}
    assert len({q.id for q in s.questions}) == len(s.questions)
    line = properties(s)
    assert line.startswith("tiny: 2 conversation(s) of ~")
    for part in (
        "median turn user",
        "of evidence turns are the assistant's",
        "about a changed fact",
        "evidence turns per question mean",
    ):
        assert part in line, line
    # Speakers by name (LoCoMo): no user and assistant to compare.
    speakers = EvalSet(
        "named",
        ("single-hop",),
        {
            "c": Conversation(
                "c",
                (Turn("D1:1", "Caroline", "utterance", datetime(2023, 5, 8, tzinfo=UTC), "C: hi"),),
            )
        },
        [Question("q", "c", "single-hop", "Hi?", ("hi",), ("D1:1",))],
    )
    assert "median turn" not in properties(speakers)
    assert "1 questions, 0 about a changed fact" in properties(speakers)
