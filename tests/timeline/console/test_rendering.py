"""timeline.console.rendering: item values as readable, escaped HTML (no database)."""

from __future__ import annotations

import html
import re

from django.utils.html import strip_tags

from timeline.console.rendering import (
    MAX_RENDERED_CHARS,
    TOOL_FOLD_AFTER_LINES,
    TOOL_TAIL_LINES,
    json_block,
    json_line,
    marked,
    one_line,
    search_pattern,
    text_block,
    value_block,
)


def plain(fragment: str) -> str:
    """What the browser shows of ``fragment``."""
    return html.unescape(strip_tags(fragment))


def marks(fragment: str) -> list[str]:
    return re.findall(r'<mark class="tl-mark">(.*?)</mark>', fragment)


class TestText:
    def test_keeps_its_line_breaks_and_folds_the_middle_keeping_the_end(self):
        block = value_block("output", "\n".join(f"line {n}" for n in range(1, 21)) + "\n")
        assert block.kind == "text" and "\\n" not in block.head
        assert plain(block.head).split("\n") == [f"line {n}" for n in range(1, TOOL_FOLD_AFTER_LINES + 1)]
        folded = 20 - TOOL_FOLD_AFTER_LINES - TOOL_TAIL_LINES
        assert block.folded_lines == folded, "the final newline is no line of its own"
        assert plain(block.rest).split("\n") == [
            f"line {n}" for n in range(TOOL_FOLD_AFTER_LINES + 1, 21 - TOOL_TAIL_LINES)
        ]
        assert plain(block.tail).split("\n") == [f"line {n}" for n in range(21 - TOOL_TAIL_LINES, 21)]

    def test_a_text_that_fits_head_and_tail_does_not_fold(self):
        lines = [f"line {n}" for n in range(TOOL_FOLD_AFTER_LINES + TOOL_TAIL_LINES)]
        block = value_block("output", "\n".join(lines))
        assert block.folded_lines == 0 and block.tail == "" and plain(block.head).split("\n") == lines

    def test_a_message_folds_its_end_and_keeps_no_tail(self):
        block = text_block("", "\n".join(f"line {n}" for n in range(30)))
        assert block.folded_lines == 10 and block.tail == ""

    def test_a_short_text_does_not_fold(self):
        block = text_block("", "one\ntwo")
        assert block.folded_lines == 0 and block.rest == "" and plain(block.head) == "one\ntwo"

    def test_markup_in_a_value_is_shown_never_run(self):
        block = value_block("output", "<script>alert('x')</script>\n<img src=x onerror=alert(1)>")
        assert "<script" not in block.head and "<img" not in block.head
        assert "&lt;script&gt;" in block.head and plain(block.head).startswith("<script>alert('x')</script>")

    def test_a_huge_value_is_cut(self):
        block = value_block("output", "y" * (MAX_RENDERED_CHARS + 10))
        assert block.truncated and len(plain(block.head)) == MAX_RENDERED_CHARS


class TestJson:
    def test_an_object_is_indented_and_coloured_by_token(self):
        block = value_block("input", {"cmd": "make <all>", "n": -2.5, "ok": True, "none": None})
        assert block.kind == "json"
        assert plain(block.head) == '{\n  "cmd": "make <all>",\n  "n": -2.5,\n  "none": null,\n  "ok": true\n}'
        assert '<span class="tl-j-key">&quot;cmd&quot;</span>' in block.head
        assert '<span class="tl-j-str">&quot;make &lt;all&gt;&quot;</span>' in block.head
        assert '<span class="tl-j-num">-2.5</span>' in block.head
        assert '<span class="tl-j-lit">true</span>' in block.head and '<span class="tl-j-lit">null</span>' in block.head

    def test_a_text_that_holds_json_is_pretty_printed(self):
        block = value_block("output", '{"files": ["a.py", "b.py"], "count": 2}')
        assert block.kind == "json" and plain(block.head).startswith('{\n  "count": 2,\n  "files": [')

    def test_a_text_that_only_looks_like_json_stays_text(self):
        for text in ("{not json", "[1, 2", "42", '"quoted"'):
            assert value_block("output", text).kind == "text"

    def test_long_json_folds(self):
        block = json_block("input", {f"k{n}": n for n in range(30)})
        assert block.folded_lines == 32 - TOOL_FOLD_AFTER_LINES
        assert plain(block.head + "\n" + block.rest).endswith('"k9": 9\n}')

    def test_a_string_with_quotes_and_digits_is_one_token(self):
        line = json_line('  "say": "he said \\"42\\" true",')
        assert line.count("<span") == 2 and "tl-j-num" not in line and "tl-j-lit" not in line

    def test_scalars_are_one_token(self):
        assert value_block("exitCode", 0).kind == "value" and value_block("exitCode", 0).head == (
            '<span class="tl-j-num">0</span>'
        )
        assert value_block("ok", False).head == '<span class="tl-j-lit">false</span>'


class TestDiff:
    def test_a_unified_diff_is_coloured_by_line(self):
        block = value_block("unifiedDiff", "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old <b>\n+new\n same")
        assert block.kind == "diff"
        assert '<span class="tl-d-del">-old &lt;b&gt;</span>' in block.head
        assert '<span class="tl-d-add">+new</span>' in block.head and '<span class="tl-d-hunk">' in block.head
        assert block.head.endswith("\n same")

    def test_a_text_that_starts_like_a_diff_is_one(self):
        assert value_block("output", "diff --git a/x b/x\n+1").kind == "diff"
        assert value_block("output", "+1 is not a diff").kind == "text"


class TestMarks:
    def test_whole_words_in_any_case(self):
        pattern = search_pattern("zebra")
        assert marks(marked("Zebra, zebras and a ZEBRA; zebra_crossing", pattern)) == ["Zebra", "ZEBRA"]

    def test_a_phrase_is_its_words_in_order_across_punctuation(self):
        pattern = search_pattern('"foo bar" baz')
        assert marks(marked("foo.bar and bar foo, baz", pattern)) == ["foo.bar", "baz"]

    def test_marks_never_break_the_escaping(self):
        pattern = search_pattern("script lt amp")
        fragment = marked("<script> & lt", pattern)
        assert fragment == '&lt;<mark class="tl-mark">script</mark>&gt; &amp; <mark class="tl-mark">lt</mark>'

    def test_a_query_without_words_marks_nothing(self):
        assert search_pattern("  ...  ") is None
        assert marked("a <b>", None) == "a &lt;b&gt;"

    def test_json_values_are_marked_keys_are_not(self):
        block = value_block("input", {"zebra": "a zebra"}, pattern=search_pattern("zebra"))
        assert marks(block.head) == ["zebra"] and '<span class="tl-j-key">&quot;zebra&quot;</span>' in block.head

    def test_a_mark_in_the_folded_lines_is_known(self):
        text = "\n".join(["plain"] * 10 + ["the okapi"] + ["plain"] * TOOL_TAIL_LINES)
        block = value_block("output", text, pattern=search_pattern("okapi"))
        assert block.marked and block.rest_marked and not marks(block.head)
        assert not value_block("output", "okapi", pattern=search_pattern("okapi")).rest_marked


def test_one_line_previews_the_first_line():
    assert one_line("make test\nmore") == "make test"
    assert one_line({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'
    assert one_line("x" * 200, 10) == "x" * 9 + "…"
