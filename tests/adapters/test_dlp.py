"""DLP detection, redaction and blocking: positives and negatives for every kind."""

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.adapters.dlp import DlpFinding, DlpMode, compile_custom, scan


def redact(text: str, custom: tuple[str, ...] = ()) -> str:
    return scan(text, mode=DlpMode.REDACT, custom_patterns=custom).text


def kinds(text: str) -> dict[str, int]:
    return scan(text, mode=DlpMode.REDACT).counts()


POSITIVES = [
    ("email", "jane.doe+crm@example.co.uk"),
    ("email", "ops_team@mail-server.io"),
    ("phone", "+44 20 7946 0958"),
    ("phone", "+1 (555) 123-4567"),
    ("phone", "+33 1 23 45 67 89"),
    ("phone", "+4915123456789"),
    ("phone", "(555) 123-4567"),
    ("phone", "555-123-4567"),
    ("phone", "555.123.4567"),
    ("phone", "020 7946 0958"),
    ("phone", "07700 900123"),
    ("phone", "01 23 45 67 89"),
    ("phone", "0044 20 7946 0958"),  # the "00" dialling prefix instead of "+"
    ("phone", "0033 1 23 45 67 89"),
    ("phone", "004915123456789"),
    ("card", "4111 1111 1111 1111"),
    ("card", "4111-1111-1111-1111"),
    ("card", "5500005555555559"),
    ("card", "3782 822463 10005"),
    ("iban", "GB82WEST12345698765432"),
    ("iban", "GB82 WEST 1234 5698 7654 32"),
    ("iban", "DE89370400440532013000"),
    ("iban", "fr7630006000011234567890189"),  # lowercase: the same account
    ("iban", "de89 3704 0044 0532 0130 00"),
    ("iban", "Gb82 West 1234 5698 7654 32"),
    ("secret", "sk-proj-4f9KxQ2mZ7aB1cD3eF5gH"),
    ("secret", "sk_live_51HxYzAbCdEf0123456789"),
    ("secret", "ghp_" + "aB3dE5fG7h" * 4),
    ("secret", "xoxb-123456789012-abcdefABCDEF"),
    ("secret", "AKIAIOSFODNN7EXAMPLE"),
    ("secret", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9"),
    ("secret", "q8Zr2Lx7Vb4Nm1Kp9Ts3Wd6Yh0Jc5Fg2"),
]


@pytest.mark.parametrize(("kind", "value"), POSITIVES, ids=[v for _, v in POSITIVES])
def test_detects_and_redacts(kind: str, value: str) -> None:
    text = f"Contact: {value}. Then we moved on."
    result = scan(text, mode=DlpMode.REDACT)
    assert result.counts() == {kind: 1}
    assert result.text == f"Contact: [REDACTED:{kind}]. Then we moved on."
    assert value not in result.text
    [finding] = result.findings
    assert text[finding.start : finding.end] == value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abcDEF123456ghiJKL789", "Authorization: Bearer [REDACTED:secret]"),
        ("password=hunter2 and more", "password=[REDACTED:secret] and more"),
        ("db_password: 12345678", "db_password: [REDACTED:secret]"),
        ('{"api_key": "k-1a2b3c4d"}', '{"api_key": "[REDACTED:secret]"}'),
        ("API-KEY = abcd1234efgh", "API-KEY = [REDACTED:secret]"),
        ("client_secret:'s3cr3t!'", "client_secret:'[REDACTED:secret]'"),
    ],
)
def test_assignments_redact_only_the_value(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_private_key_block() -> None:
    text = (
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "QyNTUxOQAAACDm\n-----END OPENSSH PRIVATE KEY-----\ndone"
    )
    assert redact(text) == "key:\n[REDACTED:secret]\ndone"
    truncated = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    assert redact(truncated) == "[REDACTED:secret]"


@pytest.mark.parametrize(
    "text",
    [
        "4111 1111 1111 1112",  # fails Luhn
        "4111111111111112",
        "1234567812345678",
        "GB82WEST12345698765433",  # fails mod-97
        "GB83 WEST 1234 5698 7654 32",
        "gb82west12345698765433",  # lowercase, fails mod-97
        "gb83 west 1234 5698 7654 32",
        "invoice 0012345 paid",  # "00" then too few digits for a phone
        "2000-2024 and 00:30",
        "order 12345678 shipped",
        "2024-03-12 2024-03-13",  # two dates whose digits happen to be 16
        "Bearer authentication is used",
        "max_tokens: 800, token budget: 5000",
        "request id 123e4567-e89b-12d3-a456-426614174000",
        "file quarterly_business_review_2024_q3_final_v2.pdf",
        "commit to CustomerRelationshipManagement2024Roadmap",
        "user@localhost",
    ],
)
def test_negatives_are_left_alone(text: str) -> None:
    assert kinds(text) == {}
    assert redact(text) == text


AMOUNTS_AND_DATES = (
    "The deal closed at $45,000 on 12/03/2025, up 3.5% from 2024. Kickoff 2025-03-31 at "
    "10:30 (01.02.2025 10:30 in Berlin). Total €1,234,567.89; 45000 units; 1,000,000 "
    "users; version 1.2.3; pi 3.14159; Q3 2024 revenue 12,500; £9.99/month; 50% off; "
    "call at 9:00-10:30; ranked 1-2-3; 2019-2024; ISO 27001; +5% QoQ; -12.5%."
)


def test_amounts_dates_and_percentages_survive() -> None:
    result = scan(AMOUNTS_AND_DATES, mode=DlpMode.REDACT)
    assert result.findings == ()
    assert result.text == AMOUNTS_AND_DATES


def test_redacted_text_contains_no_original_secret() -> None:
    secrets = [value for _, value in POSITIVES]
    text = "Notes: " + "; ".join(secrets) + ". Also password=hunter2x."
    out = redact(text)
    for value in [*secrets, "hunter2x"]:
        assert value not in out
    assert out.startswith("Notes: [REDACTED:")


def test_overlapping_findings_are_merged() -> None:
    # The same value is an assignment, an sk- key and a high-entropy token.
    text = "token=sk-proj-4f9KxQ2mZ7aB1cD3eF5gH end"
    result = scan(text, mode=DlpMode.REDACT)
    assert result.text == "token=[REDACTED:secret] end"
    assert len(result.findings) == 1
    # A high-entropy local part inside an email: one finding, the longer kind wins.
    local = "q8Zr2Lx7Vb4Nm1Kp9Ts3Wd6Yh0Jc5Fg2"
    result = scan(f"write to {local}@example.com now", mode=DlpMode.REDACT)
    assert result.text == "write to [REDACTED:email] now"
    assert result.findings == (DlpFinding("email", 9, 9 + len(local) + 12),)


def test_block_mode_reports_without_changing_text() -> None:
    text = "mail jane@example.com, card 4111 1111 1111 1111"
    result = scan(text, mode=DlpMode.BLOCK)
    assert result.blocked and result.text == text
    assert result.counts() == {"email": 1, "card": 1}
    clean = scan("nothing to see, $45,000", mode=DlpMode.BLOCK)
    assert not clean.blocked and clean.findings == ()


def test_off_mode_does_nothing() -> None:
    text = "jane@example.com sk-proj-4f9KxQ2mZ7aB1cD3eF5gH"
    result = scan(text, mode=DlpMode.OFF, custom_patterns=[r"jane"])
    assert result.text == text and result.findings == () and not result.blocked


def test_findings_never_hold_the_matched_text() -> None:
    assert set(DlpFinding.__dataclass_fields__) == {"kind", "start", "end"}


def test_custom_patterns() -> None:
    text = "Project ACME-1234 and ACME-99 and acme-5678"
    result = scan(text, mode=DlpMode.REDACT, custom_patterns=[r"ACME-\d{4}", r"(?i)acme-5\d+"])
    assert result.text == "Project [REDACTED:custom] and ACME-99 and [REDACTED:custom]"
    assert result.counts() == {"custom": 2}


def test_custom_patterns_scan_past_the_window_of_a_long_line() -> None:
    text = "x " * 5000 + "CODENAME-OWL"
    assert redact(text, (r"CODENAME-\w+",)).endswith("[REDACTED:custom]")


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        (["ok", "(unclosed"], "#1 is not a valid regex"),
        (["a*"], "#0 matches the empty string"),
        (["fine", "x", r"(a+)+$"], "#2 repeats a repeated group"),
        ([r"(\w*\s?)*z"], "#0 repeats a repeated group"),
    ],
)
def test_compile_custom_rejects_unusable_patterns(patterns: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        compile_custom(patterns)
    with pytest.raises(ValueError, match=re.escape(message)):
        scan("text", mode=DlpMode.REDACT, custom_patterns=patterns)


def test_compile_custom_accepts_safe_patterns() -> None:
    compiled = compile_custom([r"ACME-\d{4}", r"(?>a+)+b", r"(\d{3}-)+\d{4}", r"(a++)+"])
    assert [p.pattern for p in compiled][0] == r"ACME-\d{4}"


@pytest.mark.parametrize(
    "text",
    ["a" * 200_000, "1 " * 100_000, "a@" * 100_000, "+1" * 100_000, "password=" * 20_000],
    ids=["letters", "spaced-digits", "ats", "pluses", "assignments"],
)
def test_adversarial_input_stays_fast(text: str) -> None:
    # Not a speed claim: linear scanning takes milliseconds, catastrophic backtracking on
    # these inputs takes hours; the bound only has to tell the two apart on a busy machine.
    started = time.monotonic()
    scan(text, mode=DlpMode.REDACT)
    assert time.monotonic() - started < 30


_EMAILISH = st.from_regex(r"[a-z0-9._%+-]{1,12}@[a-z0-9-]{1,8}(\.[a-z]{2,4}){1,2}", fullmatch=True)
_TEXT = st.lists(
    st.one_of(st.text(max_size=30), _EMAILISH, st.sampled_from([" ", ".", "@", "-", "\n"])),
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_redaction_never_leaves_a_found_email(text: str) -> None:
    result = scan(text, mode=DlpMode.REDACT)
    found = [text[f.start : f.end] for f in result.findings if f.kind == "email"]
    for email in found:
        assert email not in result.text


@settings(max_examples=300, deadline=None)
@given(st.text(), st.sampled_from(list(DlpMode)))
def test_scan_never_raises_and_findings_are_ordered(text: str, mode: DlpMode) -> None:
    result = scan(text, mode=mode)
    previous_end = 0
    for finding in result.findings:
        assert previous_end <= finding.start < finding.end <= len(text)
        previous_end = finding.end
    if mode is not DlpMode.REDACT:
        assert result.text == text
