"""The conversation sets bench.retrieval_eval asks: LoCoMo (public, read at run time from a path,
never copied into the repository) and the generated long chats of bench/longconv.py.

Each set becomes the same shape: conversations of dated turns (one scope each) and questions
with their category, gold answers and evidence turn ids.
"""

import hashlib
import json
import re
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

from app.tokens import estimate_tokens
from bench import longconv, longconv_text

LOCOMO_MIRROR = Path("/work/.mirror/snap-research+LoCoMo/repo")
LOCOMO_FILE = "data/locomo10.json"
# task_eval/evaluation.py in the LoCoMo repository: 1 is scored by sub-answers (multi-hop),
# 2 is asked with the conversation's dates (temporal), 3 keeps the answer before ';'
# (open-domain), 4 is single-hop, 5 is adversarial (no gold answer: left out).
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ROLES = ("user", "assistant")
CACHE_VERSION = 2  # of the cached generated sets' layout (a list of chats since 2)


@dataclass(frozen=True, slots=True)
class Turn:
    id: str
    role: str  # a LoCoMo speaker's name, or "user" / "assistant"
    kind: str  # the event kind it is appended as
    at: datetime
    body: str


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str  # the scopeRef
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    conversation: str
    category: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[str, ...]
    older: tuple[str, ...] = ()  # a changed fact's superseded statements (newer: the rest)
    answer_unique: bool = True  # False: the answer is also said in turns that are not evidence


@dataclass
class EvalSet:
    name: str
    categories: tuple[str, ...]
    conversations: dict[str, Conversation]
    questions: list[Question]
    notes: list[str] = field(default_factory=list)

    def subset(self, conversations: int | None, questions: int | None) -> "EvalSet":
        """The first `conversations`, and up to `questions` of theirs spread evenly over the
        categories and over each category's questions (for --quick)."""
        keep = list(self.conversations)[: conversations or None]
        qs = [q for q in self.questions if q.conversation in keep]
        if questions is not None and len(qs) > questions:
            by_cat: dict[str, list[Question]] = {}
            for q in qs:
                by_cat.setdefault(q.category, []).append(q)
            share = {c: 0 for c in by_cat}
            while sum(share.values()) < questions:
                for c, group in by_cat.items():
                    if share[c] < len(group) and sum(share.values()) < questions:
                        share[c] += 1
            picked = {
                id(group[i * len(group) // share[c]])
                for c, group in by_cat.items()
                for i in range(share[c])
            }
            qs = [q for q in qs if id(q) in picked]
        return EvalSet(
            self.name,
            self.categories,
            {k: self.conversations[k] for k in keep},
            qs,
            list(self.notes),
        )


# ---------------------------------------------------------------------------------- LoCoMo


def read_locomo_json(source: Path) -> list[dict[str, Any]]:
    """locomo10.json from a file, or from a git repository (bare or not) at its HEAD."""
    if source.is_file():
        data: list[dict[str, Any]] = json.loads(source.read_text())
        return data
    out = subprocess.run(
        ["git", "--git-dir", str(_git_dir(source)), "show", f"HEAD:{LOCOMO_FILE}"],
        capture_output=True,
        check=True,
    ).stdout
    data = json.loads(out)
    return data


def _git_dir(path: Path) -> Path:
    return path / ".git" if (path / ".git").exists() else path


_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D(\d+):(\d+)")


def _session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' (LoCoMo's session_N_date_time), as UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _evidence_ids(raw: Sequence[str], known: set[str], fixes: Counter[str]) -> tuple[str, ...]:
    """LoCoMo's evidence ids, mended where the annotation is malformed ('D8:6; D9:17',
    'D:11:26', 'D30:05'); ids of turns that do not exist are dropped (and counted)."""
    out: list[str] = []
    for item in raw:
        parts = re.split(r"[;,\s]+", item.strip())
        for part in parts:
            if not part:
                continue
            m = _DIA.fullmatch(part.replace("D:", "D"))
            if m is None:
                fixes["unreadable"] += 1
                continue
            turn = f"D{int(m.group(1))}:{int(m.group(2))}"
            if turn != part or len(parts) > 1:
                fixes["mended"] += 1
            if turn in known:
                out.append(turn)
            else:
                fixes["unknown"] += 1
    return tuple(dict.fromkeys(out))


def locomo(source: Path = LOCOMO_MIRROR) -> EvalSet:
    """LoCoMo's ten conversations: each turn one event (kind `utterance`, body 'Speaker: text'
    and the shared photo's caption), at its session's time plus a minute per turn so the turns
    keep their order; every question but the adversarial ones (no gold answer)."""
    conversations: dict[str, Conversation] = {}
    questions: list[Question] = []
    fixes: Counter[str] = Counter()
    adversarial = no_evidence = 0
    for sample in read_locomo_json(source):
        conv = sample["conversation"]
        turns: list[Turn] = []
        sessions = sorted(
            (int(m.group(1)), k) for k in conv if (m := _SESSION.fullmatch(k)) is not None
        )
        for _, key in sessions:
            start = _session_time(conv[f"{key}_date_time"])
            for i, t in enumerate(conv[key]):
                body = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    body += f" [shares a photo of {t['blip_caption']}]"
                turns.append(
                    Turn(t["dia_id"], t["speaker"], "utterance", start + timedelta(minutes=i), body)
                )
        cid = sample["sample_id"]
        conversations[cid] = Conversation(cid, tuple(turns))
        known = {t.id for t in turns}
        for i, qa in enumerate(sample["qa"]):
            if qa["category"] == 5:
                adversarial += 1
                continue
            evidence = _evidence_ids(qa.get("evidence", []), known, fixes)
            if not evidence:
                no_evidence += 1
                continue
            questions.append(
                Question(
                    f"{cid}-{i}",
                    cid,
                    LOCOMO_CATEGORIES[qa["category"]],
                    qa["question"],
                    (str(qa["answer"]),),
                    evidence,
                )
            )
    notes = [
        f"{adversarial} adversarial questions (category 5) left out: they have no gold answer",
        f"{no_evidence} questions without a known evidence turn left out",
        f"evidence ids mended: {fixes['mended']}, unknown turns dropped: {fixes['unknown']}, "
        f"unreadable: {fixes['unreadable']}",
    ]
    return EvalSet("locomo", tuple(LOCOMO_CATEGORIES.values()), conversations, questions, notes)


# ------------------------------------------------------------------------- generated chats


def _source_hash() -> str:
    """Of the generator's two modules: a changed generator never reads an old cached chat."""
    digest = hashlib.sha256()
    for module in (longconv, longconv_text):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:12]


def long_chats(name: str, cache: Path, seed: int, anchor: date) -> tuple[longconv.Chat, ...]:
    """The generated set `name` (long100k, long500k: see longconv.SETS), from the cache when
    the generator, seed and anchor are the same."""
    path = cache / f"{name}-v{CACHE_VERSION}-{seed}-{anchor.isoformat()}-{_source_hash()}.json"
    if path.exists():
        return tuple(longconv.Chat.from_json(c) for c in json.loads(path.read_text()))
    chats = longconv.generate_set(name, seed, anchor)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([c.to_json() for c in chats]))
    tmp.replace(path)
    return chats


def from_chats(name: str, chats: Sequence[longconv.Chat]) -> EvalSet:
    """A set of generated chats: each chat one conversation (one scope)."""
    conversations: dict[str, Conversation] = {}
    questions: list[Question] = []
    notes: list[str] = []
    for chat in chats:
        turns = tuple(
            Turn(
                t.id,
                t.role,
                f"{t.role}_turn",
                datetime.fromisoformat(t.at.replace("Z", "+00:00")),
                t.body,
            )
            for t in chat.turns
        )
        conversations[chat.id] = Conversation(chat.id, turns)
        questions += [
            Question(
                q.id, chat.id, q.category, q.question, q.answers, q.evidence, q.older, q.unique
            )
            for q in chat.questions
        ]
        notes.append(
            f"{chat.id}: seed {chat.seed}, anchor {chat.anchor}, {len(turns)} turns, "
            f"{turns[0].at:%Y-%m-%d} to {turns[-1].at:%Y-%m-%d}"
        )
    return EvalSet(name, longconv.CATEGORIES, conversations, questions, notes)


def from_chat(chat: longconv.Chat) -> EvalSet:
    return from_chats(chat.id, [chat])


def properties(evalset: EvalSet) -> str:
    """What a set is like, in the terms the outside held-out set is described in: turn
    lengths by role, the assistant's share of evidence turns, questions about a changed
    fact, evidence turns per question."""
    turns = [t for c in evalset.conversations.values() for t in c.turns]
    role = {(c.id, t.id): t.role for c in evalset.conversations.values() for t in c.turns}
    tokens = sum(estimate_tokens(t.body) for t in turns)
    per_conv = tokens / max(1, len(evalset.conversations))
    parts = [
        f"{evalset.name}: {len(evalset.conversations)} conversation(s) of ~{per_conv:,.0f} "
        f"tokens, {len(turns)} turns"
    ]
    lengths = {r: [len(t.body.split(": ", 1)[-1]) for t in turns if t.role == r] for r in ROLES}
    if all(lengths.values()):
        parts.append(
            "median turn "
            + ", ".join(f"{r} {median(v):,.0f}" for r, v in lengths.items())
            + " characters"
        )
    evidence = [(q.conversation, e) for q in evalset.questions for e in q.evidence]
    if evidence and all(lengths.values()):
        share = sum(role.get(e) == "assistant" for e in evidence) / len(evidence)
        parts.append(f"{share:.0%} of evidence turns are the assistant's")
    counts = [len(q.evidence) for q in evalset.questions]
    if counts:
        parts.append(
            f"{len(counts)} questions, {sum(bool(q.older) for q in evalset.questions)} about "
            f"a changed fact; evidence turns per question mean {sum(counts) / len(counts):.2f}"
            f", {sum(n > 1 for n in counts) / len(counts):.0%} with two or more, max "
            f"{max(counts)}"
        )
    return "; ".join(parts)
