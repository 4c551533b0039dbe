"""Call summary skill: summarise a call transcript and remember it through Jet Memory's REST API.

Copy it into a skill: it needs only httpx and the standard library. It appends a
`call_summary` event scoped to the client entity (`POST /memory/events`, with an
Idempotency-Key derived from the transcript, so a retry or a re-run never stores the
call twice) and, with --curate, also creates a curated entry (`POST /memory`).

    JET_URL=http://127.0.0.1:8000 JET_API_KEY=jm_... \\
        python examples/call_summary_skill.py call.txt --entity ent_acme --curate

Summariser: an OpenAI-compatible chat-completions endpoint when OPENAI_BASE_URL is set
(with OPENAI_API_KEY and OPENAI_MODEL), else a small extractive fallback (no network).
Exit status: 0 remembered (or already remembered), 1 the API refused, 2 bad usage.
"""

import argparse
import hashlib
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import httpx

KIND = "call_summary"
PROMPT = (
    "Summarise this call transcript for a colleague who was not there. Markdown: a short "
    "paragraph of what was said and decided, then '**Action items**' as a bullet list "
    "(owner, what, when). Keep names, numbers, amounts and dates verbatim. No preamble."
)
# What commits someone to something, in a transcript line.
ACTION = re.compile(
    r"\b(?:I'll|I will|we'll|we will|you'll|will send|will share|action item|follow[- ]up|"
    r"next step|by (?:mon|tues|wednes|thurs|fri|satur|sun)day|by the end of|deadline)\b",
    re.IGNORECASE,
)
SPEAKER = re.compile(r"^\s*(?:([\w .'()&-]{1,60}?):\s+)?(.*)$")
STOP = set(
    "a an and are as at be but by for from has have i in is it its of on or our so that the "
    "their them then there they this to us was we were what will with you your yes no okay "
    "ok yeah just also can do not".split()
)


def summarise_extractive(transcript: str, sentences: int = 4) -> str:
    """The sentences richest in the call's frequent words, in call order, then the action
    items (sentences that commit someone), each with its speaker."""
    units: list[tuple[str, str]] = []  # (speaker, sentence)
    for line in transcript.splitlines():
        found = SPEAKER.match(line)
        speaker, text = found.groups() if found else (None, line)
        units += [(speaker or "", u) for u in re.split(r"(?<=[.!?])\s+", text.strip()) if u]
    if not units:
        return "(empty transcript)"
    words = Counter(w for _, u in units for w in re.findall(r"\w+", u.lower()) if w not in STOP)

    def weight(unit: str) -> float:
        found = [words[w] for w in re.findall(r"\w+", unit.lower()) if w not in STOP]
        return sum(found) / (len(found) + 3) if len(found) >= 3 else 0.0  # no "Thanks."

    def said(i: int) -> str:
        speaker, sentence = units[i]
        return f"{speaker}: {sentence}" if speaker else sentence

    actions = [i for i, (_, u) in enumerate(units) if ACTION.search(u)]
    rest = [i for i in range(len(units)) if i not in actions]
    ranked = sorted(rest, key=lambda i: -weight(units[i][1]))
    best = sorted([i for i in ranked if weight(units[i][1]) > 0][:sentences] or rest[:sentences])
    text = "\n".join(f"- {said(i)}" for i in best)
    if actions:
        text += "\n\n**Action items**\n" + "\n".join(f"- {said(i)}" for i in actions)
    return text


def summarise_llm(transcript: str, base_url: str, api_key: str, model: str) -> str:
    response = httpx.post(
        base_url.rstrip("/") + "/chat/completions",
        headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
        json={
            "model": model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": transcript},
            ],
        },
        timeout=60,
    )
    response.raise_for_status()
    content = response.json()["choices"][0]["message"]["content"]
    if not isinstance(content, str) or not content.strip():
        raise ValueError("the model answered nothing")
    return content.strip()


def summarise(transcript: str) -> tuple[str, str]:
    """(summary, how): the LLM when one is configured and answers, else extractive."""
    base_url = os.environ.get("OPENAI_BASE_URL")
    if base_url:
        model = os.environ.get("OPENAI_MODEL", "")
        try:
            return summarise_llm(
                transcript, base_url, os.environ.get("OPENAI_API_KEY", ""), model
            ), f"llm:{model}"
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            print(
                f"LLM summary failed ({type(exc).__name__}); using the extractive one",
                file=sys.stderr,
            )
    return summarise_extractive(transcript), "extractive"


def problem(response: httpx.Response) -> str:
    """One line from an application/problem+json answer (or whatever came back)."""
    try:
        body = response.json()
        fields = ", ".join(
            f"{e['field']}: {e['message']}" for e in body.get("errors", []) if e.get("field")
        )
        return f"{response.status_code} {body.get('detail', '')}" + (
            f" ({fields})" if fields else ""
        )
    except (ValueError, AttributeError, TypeError, KeyError):
        return f"{response.status_code} {response.text[:200]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("transcript", type=Path, help="the call transcript, a text file")
    parser.add_argument("--entity", required=True, help="the client entity id, e.g. ent_acme")
    parser.add_argument("--curate", action="store_true", help="also create a curated entry")
    parser.add_argument("--title", help="title of the curated entry")
    parser.add_argument("--occurred-at", help="when the call happened, ISO 8601 with a zone")
    parser.add_argument("--url", default=os.environ.get("JET_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--api-key", default=os.environ.get("JET_API_KEY"))
    args = parser.parse_args(argv)
    if not args.api_key:
        parser.error("give --api-key or set JET_API_KEY")
    try:
        transcript = args.transcript.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"cannot read {args.transcript}: {exc}")

    # The same transcript for the same client is the same call, whatever the summary says.
    digest = hashlib.sha256(f"{args.entity}\n{transcript}".encode()).hexdigest()
    summary, how = summarise(transcript)
    body = f"{summary}\n\n_Summarised ({how}) from {args.transcript.name}._"
    event = {
        "scope": "entity",
        "scopeRef": args.entity,
        "kind": KIND,
        "body": body,
        "source": "call_summary_skill",
        "sourceRef": f"transcript:{digest[:16]}",
    }
    if args.occurred_at:
        event["occurredAt"] = args.occurred_at
    result: dict[str, object] = {"summariser": how}
    headers = {"Authorization": f"Bearer {args.api_key}"}
    with httpx.Client(base_url=args.url, headers=headers, timeout=30) as api:
        r = api.post(
            "/memory/events", json=event, headers={"Idempotency-Key": f"{KIND}:{digest[:40]}"}
        )
        if r.status_code == 409:
            # Remembered before, with another summary (an LLM rarely says it twice alike):
            # the first one stands.
            result["event"] = "already-recorded"
        elif r.status_code in (200, 201):
            result["event"] = r.json()["id"]
            result["replayed"] = r.status_code == 200
        else:
            print(f"appending the event failed: {problem(r)}", file=sys.stderr)
            return 1

        if args.curate:
            tag = f"call-{digest[:16]}"  # finds the entry a previous run curated
            found = api.get(
                "/memory", params={"scope": "entity", "scopeRef": args.entity, "tag": tag}
            )
            if found.status_code != 200:
                print(f"looking for the entry failed: {problem(found)}", file=sys.stderr)
                return 1
            if found.json()["items"]:
                result["entry"] = found.json()["items"][0]["id"]
            else:
                first = next((line for line in summary.splitlines() if line.strip()), "Call")
                title = args.title or "Call: " + re.sub(r"^[-*\s]+|[*_#`]", "", first)[:150].strip()
                created = api.post(
                    "/memory",
                    json={
                        "scope": "entity",
                        "scopeRef": args.entity,
                        "title": title,
                        "summary": body,
                        "tags": [KIND, tag],
                        "source": "call",
                    },
                )
                if created.status_code != 201:
                    print(f"creating the entry failed: {problem(created)}", file=sys.stderr)
                    return 1
                result["entry"] = created.json()["id"]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
