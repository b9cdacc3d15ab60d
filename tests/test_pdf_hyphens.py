"""A word a PDF broke at a line's end is joined as the document prints it elsewhere (issue 59: the quote of the
Debian guide read "netboot/debian-installer/amd64/- linux")."""
from __future__ import annotations

from thread_rag.ingest.loaders import load_document
from thread_rag.ingest.pdf import printed_words, reflow

from table_pdf import write_pdf

LINES = [
    "The network boot files are netboot/debian-installer/amd64/linux and its initrd, with the non-free",
    "firmware and the preseeding file. Preseeding answers the questions at install time.",
    "",
    "To boot from the hard disk, download the kernel netboot/debian-installer/amd64/-",
    "linux and the initrd. Some cards need non-",
    "free firmware for their laptop-",
    "specific functions. The distri-",
    "bution is unique, and the pre-",
    "seeding file is read first. Some routers drop keep-",
    "alive packets; see the Debian GNU/-",
    "Linux FAQ. The EEP-",
    "ROM holds the firmware.",
]


def test_a_pdf_joins_a_broken_word_as_the_document_prints_it(tmp_path):
    items = [(72, 720 - 12 * i, text, 10) for i, text in enumerate(LINES) if text]
    pdf = write_pdf(tmp_path / "guide.pdf", [items])
    text = " ".join(b.text for b in load_document(pdf).blocks)
    assert "netboot/debian-installer/amd64/linux and the initrd" in text  # a path broken after its "/"
    assert "non-free firmware for their laptop-specific functions" in text  # printed so elsewhere; two words
    assert "The distribution is unique" in text and "the preseeding file is read first" in text
    assert "drop keep-alive packets" in text and "the Debian GNU/Linux FAQ" in text
    assert "The EEP-ROM holds" in text  # no word evidence: the hyphen stays before a capital (never "EEP- ROM")
    assert "/- " not in text and "- " not in text.replace(" - ", "")


def test_the_page_view_finds_a_quoted_line_whose_broken_word_kept_its_hyphen(tmp_path):
    """The web page draws a quoted line's box on the PDF page: "keep-alive" (kept by the loader) is found whole where
    the page prints "keep-" at a line's end, and so is the path the loader joined."""
    from thread_rag.page_view import locate

    items = [(72, 720 - 12 * i, text, 10) for i, text in enumerate(LINES) if text]
    pdf = write_pdf(tmp_path / "guide.pdf", [items])
    quoted = [b.text for b in load_document(pdf).blocks]
    lines = ["Some routers drop keep-alive packets; see the Debian GNU/Linux FAQ.",
             "download the kernel netboot/debian-installer/amd64/linux and the initrd."]
    assert all(any(x in q for q in quoted) for x in lines)
    found, missing = locate(pdf, lines, range(1, 2))
    assert not missing and all(f.whole and f.boxes for f in found)


def test_reflow_without_the_document_s_words_reads_english():
    assert reflow(["The distri-", "bution is unique."]) == "The distribution is unique."
    assert reflow(["a well-", "known tool"]) == "a well-known tool"  # two English words
    assert reflow(["the disk is un-", "bootable now"]) == "the disk is unbootable now"  # "un" is a prefix
    assert reflow(["the frobni-", "cator runs"]) == "the frobnicator runs"  # no evidence: joined, as before
    assert reflow(["pages 10-", "12 and the EEP-", "ROM"]) == "pages 10-12 and the EEP-ROM"
    assert reflow(["boot-", "able and head-", "less, to over-", "write"]) == "bootable and headless, to overwrite"
    assert reflow(["the A-", "B testing"]) == "the A-B testing"  # a whole word only across lower case or capitals
    assert reflow(["it is--", "not"]) == "it is-- not" and reflow(["THE PAR-", "TICULAR"]) == "THE PARTICULAR"


def test_reflow_rejoins_words_of_any_alphabet():
    assert reflow(["при-", "мер текста"]) == "пример текста"
    assert reflow(["ist ge-", "öffnet die", "Fundamental-", "gruppen"]) == "ist geöffnet die Fundamentalgruppen"
    assert reflow(["dé-", "marrer"], printed_words([["fundamental gruppen démarrer"]])) == "démarrer"
    assert reflow(["die Fundamental-", "gruppen"], printed_words([["die Fundamental und gruppen"]])) == \
        "die Fundamentalgruppen"  # halves the document prints are no evidence of two words


def test_reflow_reads_the_evidence_in_order():
    words = printed_words([["the non-free firmware and a uploaded file", "see the laptop manual"]])
    assert reflow(["some non-", "free firmware"], words) == "some non-free firmware"   # printed with its hyphen
    assert reflow(["the up-", "loaded file"], words) == "the uploaded file"             # printed whole
    assert reflow(["the up-to-", "date list"], words) == "the up-to-date list"          # a compound already
    assert reflow(["the laptop-", "specific keys"], words) == "the laptop-specific keys"  # two known words
    assert reflow(["in amd64/-", "linux"], words) == "in amd64/linux"                    # a path's break
    cut = printed_words([["the Wider-", "spruchsbeweis holds"]])
    assert "spruchsbeweis" not in cut and "wider" not in cut and "holds" in cut  # the pieces of a break are no words
    assert reflow(["- item one", "- item two"], words) == "- item one - item two"       # no word broken
