from conftest import needs_shared
from thread_rag.ingest.chunker import (ParentChildChunker, SemanticChunker, SentenceChunker, semantic_breaks,
                                       text_for_embedding)
from thread_rag.ingest.text import parse_text

PROC = """# Installing the widget

## Before you start
Make sure the power is off. Unplug the device from the wall. Read the safety notes first.

## Steps
Step 1: open the case with the supplied screwdriver. Step 2: remove the old widget carefully.
Step 3: insert the new widget until it clicks. Step 4: close the case and tighten all four screws.
Step 5: plug the device in and switch it on. Step 6: check that the green light blinks twice.

## Troubleshooting
If the light stays red, the widget is not seated. Open the case again and repeat step 3.
"""


def test_sentence_chunker_respects_sentences_and_limits(embedder):
    doc = parse_text(PROC * 6, "proc.md", markdown=True)
    ch = SentenceChunker(embedder.count_tokens, target=60, overlap=12, min_tokens=10).chunk(doc)
    assert len(ch) > 3
    for c in ch:
        assert c.n_tokens <= 60
        assert embedder.count_tokens([text_for_embedding(c.text)])[0] <= 64  # joiners may add a token or two
    sentences = set(u.text for c in ch for u in c.units)
    for c in ch:  # every chunk is whole sentences: its text is built only from units
        assert all(u.text in c.text for u in c.units)
    assert "Step 3: insert the new widget until it clicks." in sentences


def test_overlap_and_heading_breaks(embedder):
    doc = parse_text(PROC, "proc.md", markdown=True)
    ch = SentenceChunker(embedder.count_tokens, target=40, overlap=15, min_tokens=5).chunk(doc)
    starts = [c.text.split("\n")[0] for c in ch]
    assert "Steps" in starts and "Troubleshooting" in starts  # headings open chunks
    shared = [a for a, b in zip(ch, ch[1:]) if a.units[-1] in b.units]
    assert shared, "no overlap carried between consecutive chunks"


def test_chunk_text_keeps_the_lines_of_code_lists_and_tables(embedder):
    """A chunk's text keeps the line breaks inside a block (a code block's lines, list items, table rows: the LLM
    and `fetch` read them as written; they were joined into one line). Sentences of one line still join with a
    space; the embedded text is the same either way."""
    doc = parse_text("Run these commands:\n\n```bash\nsudo apt update\nsudo apt install nginx\n```\n\n"
                     "1. First step. It is short.\n2. Second step\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "x.md",
                     markdown=True)
    (c,) = SentenceChunker(embedder.count_tokens, target=200, overlap=10).chunk(doc)
    assert c.text == ("Run these commands:\n```bash\nsudo apt update\nsudo apt install nginx\n```\n"
                      "1. First step. It is short.\n2. Second step\n| a | b |\n|---|---|\n| 1 | 2 |"), c.text


def test_joined_thread_keeps_a_code_blocks_lines_across_chunk_boundaries(embedder):
    """Review finding: join_thread decided the joint between two chunks by the case of the next word, so a chunk
    boundary between two lines of one code block joined them with a space. The chunk itself says (the separator it
    has after the overlap it repeats). Indentation is kept too (a YAML block lost it)."""
    from thread_rag.threads.passages import join_thread

    code = "\n".join(f"    sudo apt install pkg{k} now" for k in range(12))
    doc = parse_text("Install:\n\n```\n" + code + "\n```\n", "x.md", markdown=True)
    ch = SentenceChunker(embedder.count_tokens, target=20, overlap=5, min_tokens=5).chunk(doc)
    assert len(ch) > 3
    assert join_thread(ch) == "Install:\n```\n" + code + "\n```"
    yaml = parse_text("```yaml\nserver:\n  port: 80\n  hosts:\n    - a\n```\n", "y.md", markdown=True)
    (c,) = SentenceChunker(embedder.count_tokens, target=200, overlap=10).chunk(yaml)
    assert c.text == "```yaml\nserver:\n  port: 80\n  hosts:\n    - a\n```"
    plain = parse_text("Install it:\n\n  curl -LO https://x/y.tgz\n    tar xzf y.tgz\n", "p.txt", markdown=False)
    (c,) = SentenceChunker(embedder.count_tokens, target=200, overlap=10).chunk(plain)
    assert c.text == "Install it:\n  curl -LO https://x/y.tgz\n    tar xzf y.tgz", c.text  # its first line too


def test_long_sentence_is_split_only_when_needed(embedder):
    long = "word " * 600 + "end."
    doc = parse_text(long, "x.txt", markdown=False)
    ch = SentenceChunker(embedder.count_tokens, target=100, overlap=10).chunk(doc)
    assert len(ch) >= 6 and all(c.n_tokens <= 100 for c in ch)


def test_semantic_and_parent_child(embedder):
    doc = parse_text(PROC * 3, "proc.md", markdown=True)
    sem = SemanticChunker(embedder.count_tokens, embedder.embed, percentile=80, target=80, overlap=10).chunk(doc)
    assert sem and all(c.n_tokens <= 80 for c in sem)
    pc = ParentChildChunker(embedder.count_tokens, parent_tokens=160, target=50, overlap=10).chunk(doc)
    parents = [c.parent for c in pc]
    assert parents == sorted(parents) and len(set(parents)) > 1
    assert semantic_breaks(["a cat sat.", "a cat sat.", "quantum chromodynamics of quarks."], embedder.embed, 50) == {2}


def test_markdown_links_stripped_for_embedding_only():
    assert text_for_embedding("see [the guide](https://x/y.html) and \\_id\\_") == "see the guide and _id_"
    assert text_for_embedding("![logo](a.png)  alt\n text") == "logo alt text"
    assert text_for_embedding("  no  link\there (x) ") == "no link here (x)"  # the path without the patterns


@needs_shared
def test_debian_pdf_chunks_have_pages(embedder, debian_pdf):
    ch = SentenceChunker(embedder.count_tokens).chunk(debian_pdf)
    assert 300 < len(ch) < 900
    assert all(c.page_start is not None and 1 <= c.page_start <= c.page_end <= 113 for c in ch)


def test_a_sentence_of_megabytes_is_cut_at_spaces_before_it_is_tokenised():
    """A 17 MB line with no full stop was tokenised whole: 36 s and 2.4 GB to chunk. It is cut into pieces of at
    most LONG_PIECE characters, each after a space, that together are the line."""
    from thread_rag.ingest.chunker import LONG_PIECE, _spans

    text = ("reset the pump " * 10_000).strip()
    spans = _spans(text, 0, len(text))
    assert len(spans) > 1 and all(b - a <= LONG_PIECE for a, b in spans)
    assert "".join(text[a:b] for a, b in spans) == text and all(text[b - 1] == " " for a, b in spans[:-1])
    assert _spans("x" * (LONG_PIECE + 5), 0, LONG_PIECE + 5) == [(0, LONG_PIECE), (LONG_PIECE, LONG_PIECE + 5)]
    assert _spans("short", 0, 5) == [(0, 5)]
