"""The quote: units cut from stored chunk text (sentences, whole steps, whole code blocks, table rows with their
header), chosen by score with what each needs, verbatim; one test with the packaged cross-encoder on the Debian
guide's real USB-stick passage. The widget manual (tests/data/widget-manual.md), loaded and chunked as the answer
path reads it, holds the three cases users hit: a warning under a command, a numbered install procedure, a section
title that scored best."""
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import needs_shared
from thread_rag.agent.answer import Source, number
from thread_rag.agent.quote import QuoteSettings, choose, choose_quote, quote_lines, score_units, units
from thread_rag.agent.reading import source_of
from thread_rag.ingest.chunker import SentenceChunker
from thread_rag.ingest.text import parse_text

GUIDE = """4.3.1 Preparing a USB stick using a hybrid CD/DVD image
The installation image you choose should be written directly to the USB stick, overwriting its current contents. For example, when using an existing GNU/Linux system, the image file can be written to a USB stick as follows, after having made sure that the stick is unmounted:
# cp debian.iso /dev/sdX
# sync
Simply writing the installation image to USB like this should work fine for most users.
To set up the network:
1. Open the file /etc/network/interfaces.
2. Add the line auto eth0 and
   the line iface eth0 inet dhcp.
3. Save the file.
4. Restart the networking service.
| Install Type | RAM (minimum) | Hard Drive |
|---|---|---|
| No desktop | 256 megabytes | 4 gigabytes |
| With Desktop | 1 gigabytes | 10 gigabytes |"""


def test_units_are_slices_of_the_text_and_keep_steps_code_and_rows_whole():
    us = units(GUIDE)
    for u in us:
        assert GUIDE[u.start:u.end] == u.text
    kinds = [(u.kind, u.text.split("\n")[0][:20]) for u in us]
    assert kinds[0] == ("heading", "4.3.1 Preparing a US")
    code = [u for u in us if u.kind == "code"]
    assert [u.text for u in code] == ["# cp debian.iso /dev/sdX\n# sync"]
    lead = next(u for u in us if u.text.startswith("For example"))
    assert lead.kind == "sentence" and lead.lead
    steps = [u for u in us if u.kind == "step"]
    assert [s.text[:2] for s in steps] == ["1.", "2.", "3.", "4."]
    assert steps[1].text == "2. Add the line auto eth0 and\n   the line iface eth0 inet dhcp."  # its continuation line
    assert len({s.block for s in steps}) == 1  # one list
    rows = [u for u in us if u.kind == "row"]
    assert [r.text for r in rows] == ["| No desktop | 256 megabytes | 4 gigabytes |",
                                      "| With Desktop | 1 gigabytes | 10 gigabytes |"]
    assert rows[1].header.startswith("| Install Type | RAM (minimum) | Hard Drive |")


def _source(text, n=1, chunks=None):
    chunks = chunks or [text]
    src = Source(chunk_ids=[f"DOC1_{i:03d}" for i in range(len(chunks))], doc_id="DOC1", doc_name="guide.txt",
                 pages="p.28", heading="Preparing a USB stick", text=text, chunk_pages=["p.28"] * len(chunks),
                 chunk_texts=chunks)
    src.n = n
    return src


def _scorer(wanted: dict):
    """A fake cross-encoder: each unit's logit by the first keyword it holds, else -5."""
    def logits(question, passages):
        return np.asarray([next((v for k, v in wanted.items() if k in p), -5.0) for p in passages])
    return logits


def test_a_lead_in_brings_its_code_block_and_a_code_block_its_lead_in():
    src = _source(GUIDE)
    for best in ("after having made sure", "cp debian.iso"):
        scored = score_units("How do I write the image to a USB stick?", [src], _scorer({best: 6.0}))
        texts = [u.text for u in choose(scored)]
        assert any(t.startswith("For example") for t in texts), texts
        assert "# cp debian.iso /dev/sdX\n# sync" in texts


def test_no_hole_inside_a_procedure_and_a_row_comes_with_its_header():
    src = _source(GUIDE)
    scored = score_units("How do I set up the network?", [src], _scorer({"1. Open": 5.0, "4. Restart": 4.5}))
    steps = [u.text[:2] for u in choose(scored) if u.kind == "step"]
    assert steps == ["1.", "2.", "3.", "4."]
    scored = score_units("How much RAM does a desktop need?", [src], _scorer({"With Desktop": 6.0}))
    lines = quote_lines(choose(scored), [src])
    assert [x.kind for x in lines] == ["row"]
    assert lines[0].shown().splitlines()[0] == "| Install Type | RAM (minimum) | Hard Drive |"
    assert lines[0].shown().splitlines()[-1] == "| With Desktop | 1 gigabytes | 10 gigabytes |"


def test_the_word_budget_and_the_margin_keep_a_quote_short_but_never_drop_the_best():
    long = " ".join(f"Sentence {i} says something about disks and memory at length." for i in range(30))
    src = _source(long)
    scored = score_units("q", [src], lambda q, ps: np.linspace(5, 4, len(ps)))
    chosen = choose(scored, QuoteSettings(margin=3.0, words=40))
    assert sum(len(u.text.split()) for u in chosen) <= 40 and chosen[0].text.startswith("Sentence 0")
    assert len(choose(scored, QuoteSettings(margin=0.0, words=1000))) == 1  # only ties with the best
    huge = _source("A single sentence of many words " * 40 + ".")
    one = choose(score_units("q", [huge], lambda q, ps: np.full(len(ps), 3.0)), QuoteSettings(words=10))
    assert len(one) == 1  # the best stays, whatever its length


def test_overlapping_chunks_quote_a_sentence_once_and_each_line_names_its_chunk():
    a = "Alpha line one is here. Beta line two is here."
    b = "Beta line two is here. Gamma line three is here."
    src = _source(a + " Gamma line three is here.", chunks=[a, b])
    scored = score_units("q", [src], _scorer({"Beta": 5.0, "Gamma": 4.0}))
    assert sum("Beta" in u.text for u in scored) == 1
    lines = quote_lines(choose(scored), [src])
    assert [(x.text, x.chunk_id) for x in lines] == [("Beta line two is here.", "DOC1_000"),
                                                     ("Gamma line three is here.", "DOC1_001")]


@needs_shared
@pytest.mark.slow
def test_the_packaged_cross_encoder_quotes_the_guides_usb_commands(debian_pdf):
    """The Debian guide's own answer (p.28: the lead-in, then `# cp debian.iso /dev/sdX` and `# sync` as lines of their
    own in the PDF) is quoted, verbatim, from a reading that also holds other passages."""
    from thread_rag.retrieve.rerank import OnnxCrossEncoder

    blocks = [b.text for b in debian_pdf.blocks if b.page in (27, 28)]
    text = "\n".join(blocks)
    assert "# cp debian.iso /dev/sdX\n# sync" in text  # the PDF's code lines kept as lines
    ce = OnnxCrossEncoder(max_tokens=128)
    src = _source(text)
    scored = score_units("How do I write the installer image to a USB stick from Linux?", [src],
                         lambda q, ps: ce.logits(q, ps, 128))
    lines = quote_lines(choose(scored, QuoteSettings(words=120)), [src])
    shown = "\n".join(x.shown() for x in lines)
    assert "# cp debian.iso /dev/sdX\n# sync" in shown, shown
    assert len(shown.split()) <= 120
    flat = re.sub(r"\s+", " ", text)
    for x in lines:  # never invents: every quoted line is in the source as stored
        assert x.text in text and " ".join(x.text.split()) in flat


def test_review_findings_code_between_steps_repeated_steps_continued_tables_and_data_lines():
    """A maintainer's review: the code under a step between two quoted steps was left out; a step repeated in a second
    procedure was dropped as if it were chunk overlap; a table going on from the chunk before took its first row for a
    header; "2 GB RAM recommended" was read as a section heading; a lead-in brought a block of any length."""
    text = "1. Insert the stick.\n2. Run:\n    dd if=x of=y\n3. Wait for it.\nLater:\n1. Open it.\n2. Click OK.\n3. Close."
    src = _source(text)
    scored = score_units("q", [src], _scorer({"Insert": 5.0, "Wait": 4.9}))
    chosen = [u.text for u in choose(scored)]
    assert chosen == ["1. Insert the stick.", "2. Run:", "    dd if=x of=y", "3. Wait for it."]
    assert sum(u.text == "2. Click OK." for u in scored) == 1  # the second procedure keeps its own step 2
    b = "| 3 | 4 |\n| 5 | 6 |\nAfter the table."  # a table continued from the chunk before: no header row
    rows = [u for u in units(b) if u.kind == "row"]
    assert [r.text for r in rows] == ["| 3 | 4 |", "| 5 | 6 |"] and not any(r.header for r in rows)
    assert [u.kind for u in units("2 GB RAM recommended\n512 MB (minimum)")] == ["sentence", "sentence"]
    steps = "Do all of this:\n" + "\n".join(f"{i}. Step number {i} of the long procedure." for i in range(1, 60))
    scored = score_units("q", [_source(steps)], _scorer({"Do all": 6.0}))
    assert 100 < sum(len(u.text.split()) for u in choose(scored, QuoteSettings(words=120))) <= 130


def test_two_sources_of_one_document_are_quoted_in_the_documents_order():
    """Issue 43: the walk's sources are passages; two of one document were quoted best-first, so step 3 (in the
    later passage, scoring best) came before steps 1 and 2. Sources of one document keep its order; documents
    come best first."""
    first = Source(chunk_ids=["DOC1_010"], doc_id="DOC1", doc_name="guide.txt", pages="p.3", heading="Install",
                   text="1. Insert the USB stick.\n2. Open the installer.", chunk_pages=["p.3"],
                   chunk_texts=["1. Insert the USB stick.\n2. Open the installer."])
    later = Source(chunk_ids=["DOC1_011"], doc_id="DOC1", doc_name="guide.txt", pages="p.4", heading="Install",
                   text="3. Choose the target disk.", chunk_pages=["p.4"], chunk_texts=["3. Choose the target disk."])
    other = Source(chunk_ids=["DOC2_000"], doc_id="DOC2", doc_name="notes.txt", pages="", heading="Notes",
                   text="Backups are kept for a week.", chunk_pages=[""], chunk_texts=["Backups are kept for a week."])
    for n, s in enumerate((later, other, first), start=1):  # the walk numbered the later passage first
        s.n = n
    scored = score_units("q", [later, other, first], _scorer({"3. Choose": 6.0, "1. Insert": 5.0, "2. Open": 5.0,
                                                             "Backups": 4.0}))
    lines = quote_lines(choose(scored, QuoteSettings(margin=3.0)), [later, other, first])
    assert [x.text[:2] for x in lines] == ["1.", "2.", "3.", "Ba"]


WIDGET = Path(__file__).parent / "data" / "widget-manual.md"


def _widget(target=200, markdown=True):
    """The widget manual as the answer path reads it: loaded, chunked (a word a token), its chunks one walked source
    (``source_of``: the overlap removed from the text, each chunk's own text kept)."""
    doc = parse_text(WIDGET.read_text(encoding="utf-8"), WIDGET.name, markdown=markdown)
    drafts = SentenceChunker(lambda ts: [len(t.split()) for t in ts], target=target, overlap=8).chunk(doc)
    chunks = [SimpleNamespace(chunk_id=f"DOC1_{i:03d}", doc_id="DOC1", pages_label="", text=d.text,
                              page_start=d.page_start, page_end=d.page_end, heading_path=d.heading_path,
                              char_start=d.char_start, char_end=d.char_end) for i, d in enumerate(drafts)]
    return number([source_of(chunks, WIDGET.name, "entry", count=lambda t: len(t.split()))])[0]


def _quoted(question, src, best, words=200):
    """The quote's lines as shown, and its note, with the line a reader would pick (``best``) scoring best."""
    scored = score_units(question, [src], _scorer({best: 6.0}))
    chosen, cut = choose_quote(question, scored, QuoteSettings(words=words))
    return [x.shown() for x in quote_lines(chosen, [src])], cut


def test_a_warning_beside_a_quoted_command_is_quoted_with_it():
    """Asked how to reset the database, the quote held `# widgetctl reset --all` without the line under it, "This
    deletes every stored widget. There is no undo." A warning beside a quoted command comes with it, also when a
    chunk boundary falls between them; an ordinary line beside a command does not."""
    for src in (_widget(), _widget(target=52)):
        assert src.chunk_texts[-1].startswith("# widgetctl reset --all") == (len(src.chunk_ids) > 3)
        lines, _ = _quoted("How do I reset the database?", src, "widgetctl reset")
        assert lines == ["To remove every widget and start from an empty catalogue, run:", "# widgetctl reset --all",
                         "This deletes every stored widget.", "There is no undo."], lines
    lines, _ = _quoted("Which command enables the service at boot?", _widget(), "systemctl enable")
    assert lines == ["# systemctl enable --now widget-server"]  # "The server listens on port 8080 ..." stays out
    text = "Warning: this erases the whole disk. Unplug other drives first.\nTo write the image, run:\n" \
           "# dd if=debian.iso of=/dev/sdX\nThe copy takes a few minutes."
    lines, _ = _quoted("How do I write the image?", _source(text), "dd if=")
    assert lines == ["Warning: this erases the whole disk.", "Unplug other drives first.", "To write the image, run:",
                     "# dd if=debian.iso of=/dev/sdX"], lines  # a labelled warning before, whole


def test_a_procedure_question_quotes_the_whole_list_with_its_commands():
    """Asked how to install it, the quote held step 1 only. A quoted step of a procedure brings its list, first step
    to last, each with its command; what the word budget leaves out is named, not silently dropped."""
    src = _widget()
    steps = ["Install the server as root, in this order:", "1. Add the Widget package repository.",
             "# widgetctl repo add https://packages.example.com/widget", "2. Install the server package.",
             "# apt install widget-server", "3. Start the service and enable it at boot.",
             "# systemctl enable --now widget-server"]
    assert _quoted("how do I install it?", src, "1. Add the Widget") == (steps, "")
    assert _quoted("how do I install it?", src, "Install the server as root") == (steps, "")  # from its lead-in
    cut = _widget(target=52)  # a chunk ends inside the list, after a "2." the chunker split from its step
    assert cut.chunk_texts[1].endswith("\n2.") and cut.chunk_texts[2].startswith("# widgetctl repo add")
    assert _quoted("how do I install it?", cut, "3. Start the service") == (steps, "")
    # a procedure may fill twice the word budget (PROCEDURE_ROOM): 10 words leave room for 20
    assert _quoted("how do I install it?", src, "1. Add the Widget", words=10) == (
        steps[:3], "steps 2-3 of 3 not shown (word budget)")
    lines, _ = _quoted("Which repository is the server package in?", src, "1. Add the Widget")
    assert lines == ["1. Add the Widget package repository."]  # not a procedure question: the step alone


def test_a_section_title_is_never_quoted_alone():
    """Asked how to change the port, the quote was the title line "Changing the port" (a Markdown heading the
    loader keeps without its '#', cut as a sentence). A quoted title brings the section's body; a heading kept
    with its '#' (the manual read as plain text) is a heading unit, never scored."""
    body = ["The server reads its port from /etc/widget/server.conf.", "Set the new port on the port line:",
            "port = 8443", "Then restart the service for the change to take effect:",
            "# systemctl restart widget-server"]
    for target in (200, 52):
        lines, _ = _quoted("How do I change the port?", _widget(target), "Changing the port")
        assert lines == ["Changing the port"] + body, lines
    lines, _ = _quoted("How do I change the port?", _widget(), "Changing the port", words=12)
    assert lines == ["Changing the port", body[0]]  # the budget cuts the body, never to nothing
    plain = _widget(markdown=False)
    assert "## Changing the port" in plain.text
    scored = score_units("How do I change the port?", [plain], _scorer({"Changing the port": 9.0, "port = 8443": 6.0}))
    assert not any(u.text.startswith("## ") for u in scored)  # a heading line is not scored, so never quoted
    assert [x.shown() for x in quote_lines(choose(scored), [plain])] == ["port = 8443"]


@pytest.mark.slow
def test_the_packaged_cross_encoder_quotes_the_widget_manual_whole():
    """The three questions users asked of the widget manual, scored by the packaged cross-encoder (which ranks the
    section titles first): each quote holds the section's commands, the reset its warning, the install every step."""
    from thread_rag.retrieve.rerank import OnnxCrossEncoder

    ce = OnnxCrossEncoder(max_tokens=128, threads=2)
    for src in (_widget(), _widget(target=52)):
        quotes = {}
        for q in ("How do I reset the database?", "how do I install it?", "How do I change the port?"):
            scored = score_units(q, [src], lambda q, ps: ce.logits(q, ps, 128))
            chosen, cut = choose_quote(q, scored, QuoteSettings())
            lines = [x.shown() for x in quote_lines(chosen, [src])]
            assert not cut and len(lines) == len(set(lines)) and lines[-1] not in ("Installing", "Changing the port")
            quotes[q] = "\n".join(lines)
        reset, install, port = quotes.values()
        assert "# widgetctl reset --all\nThis deletes every stored widget.\nThere is no undo." in reset, reset
        assert all(c in install for c in ("# widgetctl repo add", "# apt install", "# systemctl enable")), install
        assert "1. Add" in install and "3. Start" in install and "8080" not in install, install
        assert "port = 8443" in port and "# systemctl restart widget-server" in port, port


def test_a_chunk_that_opens_with_a_code_blocks_closing_fence_is_not_read_as_code():
    """Asked how to disable an Extras topic, the quote was one "code" unit running from a chunk's first line (the
    closing ``` of the previous chunk's code block) over the note and lead-in after it. A chunk that opens with a
    fence closing a block begun before it starts outside the code; the lead-in then brings its command, and the
    warning after the command ("intended for advanced users", "could cause ... conflicts") comes with it."""
    chunks = ["To list the available topics, use the following command:\n```\n[ec2-user ~]$ amazon-linux-extras list",
              "```\n**Note** This command does not remove packages that were installed as dependencies.\n"
              "To disable a topic and make the packages inaccessible to yum, use the following command:\n```\n"
              "[ec2-user ~]$ sudo amazon-linux-extras disable topic\n```\n"
              "This command is intended for advanced users. Improper usage of this command could cause package "
              "compatibility conflicts.\nThe Extras library also holds kernels."]
    kinds = [u.kind for u in units(chunks[1])]
    assert kinds[:2] == ["sentence", "sentence"] and "code" in kinds, kinds
    lines, _ = _quoted("How do I disable an Extras topic?", _source("\n".join(chunks), chunks=chunks),
                       "To disable a topic")
    assert lines == ["To disable a topic and make the packages inaccessible to yum, use the following command:",
                     "```\n[ec2-user ~]$ sudo amazon-linux-extras disable topic\n```",
                     "This command is intended for advanced users.",
                     "Improper usage of this command could cause package compatibility conflicts."], lines


def test_wrapped_bullet_steps_stay_whole_and_a_procedure_question_gets_every_step():
    """The Debian guide's text edition wraps its bullet steps ("  • Boot the installer ... This will" then lines
    indented to the text); the continuation lines were cut as code, so "the steps to install over PPPoE" quoted two
    first lines of five steps. A continuation at the step's text column belongs to the step; a command under it
    (a prompt) stays code."""
    text = ("Installing over PPPoE is mostly the same as any other installation. The following steps explain the "
            "differences.\n"
            "  • Boot the installer with the boot parameter modules=ppp-udeb. This will\n"
            "    ensure the component responsible for PPPoE will be\n    loaded and run automatically.\n"
            "  • Follow the regular initial steps of the installation (language, country and\n"
            "    keyboard selection).\n"
            "  • The easiest case is for volumes holding /home. First register them by running:\n"
            "# /etc/init.d/cryptdisks start\n"
            "    This will scan all volumes mentioned in /etc/crypttab.\n"
            "  • At this point the installer will use the provided information to establish\n"
            "    the PPPoE connection.")
    steps = [u for u in units(text) if u.kind == "step"]
    assert [s.text.split("\n")[-1].strip() for s in steps] == [
        "loaded and run automatically.", "keyboard selection).",
        "• The easiest case is for volumes holding /home. First register them by running:",
        "the PPPoE connection."], [s.text for s in steps]
    assert any(u.kind == "code" and u.text == "# /etc/init.d/cryptdisks start" for u in units(text))
    for question in ("What are the steps to install Debian over PPPoE?", "What do I do in each case?"):
        lines, cut = _quoted(question, _source(text), "Follow the regular")
        assert [x.split("\n")[0] for x in lines if x.lstrip().startswith("•")] == [
            s.text.split("\n")[0] for s in steps], lines
        assert "# /etc/init.d/cryptdisks start" in lines and cut == ""


def test_a_labelled_warning_a_paragraph_or_two_after_a_command_or_an_instruction_comes_with_it():
    """The Debian guide prints "Important / The image must be written to the whole-disk device and not a partition"
    two paragraphs under `# cp debian.iso /dev/sdX`, and "Warning / Be aware: the new LVM setup will destroy all
    data" right under the sentence that says what to select; both quotes left the warning out. A labelled warning
    within two paragraphs after a quoted command, or right after a quoted instruction, in the same section, comes
    with it; an unlabelled line that far does not."""
    text = ("The image file can be written to a USB stick as follows:\n# cp debian.iso /dev/sdX\n# sync\n"
            "Simply writing the image like this should work fine for most users.\n"
            "Information about other operating systems can be found in the FAQ.\nImportant\n"
            "The image must be written to the whole-disk device and not a partition.\n"
            "Make sure the stick is unplugged from other machines.")
    lines, _ = _quoted("How do I write the image to a USB stick?", _source(text), "cp debian.iso")
    assert lines[-2:] == ["Important", "The image must be written to the whole-disk device and not a partition."]
    assert not any(x.startswith(("Simply", "Information", "Make sure")) for x in lines), lines
    text = ("First, you have to mark the partitions to be used as physical volumes for LVM. This is done in the "
            "Partition settings menu where you should select Use as: physical volume for LVM.\nWarning\n"
            "Be aware: the new LVM setup will destroy all data on all partitions marked with an LVM type code.\n"
            "LVM setup is completely supported inside partman.")
    lines, _ = _quoted("How do I mark partitions as physical volumes for LVM?", _source(text), "select Use as")
    assert lines[-2:] == ["Warning", "Be aware: the new LVM setup will destroy all data on all partitions marked "
                                     "with an LVM type code."], lines


def test_a_sentence_naming_the_following_command_brings_it_and_a_procedure_gets_room_first():
    """"You can securely remove all of these files with the following command." ends in a full stop, so the
    shred command under it was not quoted. A sentence that announces the following command leads into it. And a
    procedure asked for takes the budget before lines that only scored well: a step 2 of 3 was cut to keep them."""
    text = ("You can securely remove all of these files with the following command.\n```\n"
            "$ sudo shred -u /etc/ssh/*_key /etc/ssh/*_key.pub\n```\n"
            "**Warning** Secure deletion utilities such as shred may not remove all copies of a file.")
    lines, _ = _quoted("How do I securely delete the host keys?", _source(text), "securely remove")
    assert "```\n$ sudo shred -u /etc/ssh/*_key /etc/ssh/*_key.pub\n```" in lines, lines
    assert lines[-1].startswith("**Warning** Secure deletion"), lines  # a bold label is a label
    filler = "If you have a public DNS name registered you can set the hostname."
    text = (filler + "\nTo change the hostname without a public DNS name:\n"
            "1. Use the hostnamectl command to set the hostname to the name you want.\n"
            "2. Open the hosts file and change the entry for the loopback address to the new name.\n"
            "3. Reboot the instance to pick up the new hostname and log in to check it.")
    scored = score_units("How do I change the hostname?", [_source(text)],
                         _scorer({"public DNS name registered": 6.0, "2. Open the hosts": 7.0}))
    chosen, cut = choose_quote("How do I change the hostname?", scored, QuoteSettings(words=30))
    texts = [u.text for u in chosen]
    assert cut == "" and [t[:2] for t in texts if t[0].isdigit()] == ["1.", "2.", "3."], (texts, cut)
    assert filler not in texts  # it fit the budget by score, and gave way to the steps


def test_a_first_chunk_opening_with_a_fence_is_paired_the_way_its_code_reads():
    """Review finding: a text that opens with a fence followed by a capitalised sentence was always taken to start
    inside a block, so program output ("The authenticity of host ... cannot be established.") turned the prose
    after it into code. The fences are paired both ways and the way whose code holds commands, not prose, wins."""
    out = "```\nThe authenticity of host example.com cannot be established.\n```\nType yes to continue.\n" \
          "Then run the next command:\n```\n$ ssh host\n```"
    assert [u.kind for u in units(out)] == ["code", "sentence", "sentence", "code"], units(out)
    tail = "```\n**Note** This command does not remove packages.\nTo disable a topic, use the following command:\n" \
           "```\n[ec2-user ~]$ sudo amazon-linux-extras disable topic\n```\nThe Extras library holds kernels."
    assert [u.kind for u in units(tail)] == ["sentence", "sentence", "code", "sentence"], units(tail)


STATEMENT = """Cash flow figures for the year follow.
| Consolidated Statement of Cash Flows (Millions) | 2023 | 2022 |
| --- | --- | --- |
| Net cash provided by (used in) operating activities | 2023: 4,210 | 2022: 3,980 |
| Purchases of property, plant and equipment (PP&E) | 2023: (1,204) | 2022: (1,118) |
| Proceeds from sale of PP&E | 2023: 61 | 2022: 40 |
| Net cash used in investing activities | 2023: (2,310) | 2022: (1,900) |
Capital spending rose with the new plant.
| Five-year summary (Millions) | 2019 | 2018 |
| --- | --- | --- |
| Capital expenditures | 2019: 800 | 2018: 700 |"""


def test_a_figure_question_quotes_the_row_printing_the_metric_under_its_header():
    """Asked for "FY2023 capital expenditure", the quote held a sentence about capital spending and the operating
    cash row beside it, never the row that prints the figure: statements print capex as "Purchases of property,
    plant and equipment". The row under a label the metric is printed by (metrics.json) is quoted with its header,
    a row of a table holding the asked year before one that does not."""
    src = _source(STATEMENT)
    scorer = _scorer({"Capital spending": 6.0, "Net cash provided": 4.0, "Capital expenditures": 1.0})
    q = "What is the FY2023 capital expenditure amount (in USD millions)?"
    shown = "\n".join(x.shown() for x in quote_lines(choose(score_units(q, [src], scorer), question=q), [src]))
    assert "| Purchases of property, plant and equipment (PP&E) | 2023: (1,204) | 2022: (1,118) |" in shown, shown
    assert "| Consolidated Statement of Cash Flows (Millions) | 2023 | 2022 |" in shown
    assert "| Capital expenditures | 2019: 800 |" not in shown  # the asked year's table is read, not the summary's
    q2 = "What did the new plant change in FY2023?"  # a period but no metric named: the quote stays as scored
    plain = [u.text for u in choose(score_units(q2, [src], scorer), question=q2)]
    assert not any("Purchases of property" in t for t in plain)
