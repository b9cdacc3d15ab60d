"""Issue 17: compare two versions of a document step by step (thread alignment, labels, CLI, REPL, agent tool)."""
from __future__ import annotations

import hashlib
import io
import json
import re
import time
import tracemalloc

import numpy as np
import pytest
from rich.console import Console

from conftest import write
from thread_rag.compare import align as align_mod
from thread_rag.compare.align import AlignParams, align, heading_ids
from thread_rag.compare.labels import (CHANGED, ONLY_A, ONLY_B, SAME, Keyed, Labeller, ignore_pattern, keyed_thread,
                                       label_rows, match_mask, tokens, word_key)


def align_full(vec_a, vec_b, heads_a=None, heads_b=None, params: AlignParams | None = None) -> tuple[list, float]:
    """The alignment objective solved with the whole n x m table (the reference for Hirschberg; small inputs)."""
    prob = align_mod._prepare(vec_a, vec_b, heads_a, heads_b, params)
    return prob.full(np.arange(len(prob.a)), np.arange(len(prob.b)))


def path_score(vec_a, vec_b, pairs: list, heads_a=None, heads_b=None, params: AlignParams | None = None) -> float:
    """The objective's value for a given alignment."""
    prob = align_mod._prepare(vec_a, vec_b, heads_a, heads_b, params)
    score = 0.0
    for i, j in pairs:
        if i is None or j is None:
            score -= prob.p.gap
        else:
            score += float(prob.weights(np.array([i]), np.array([j]))[0, 0])
    return score


def bow(texts, dim: int = 512) -> np.ndarray:
    """A deterministic stand-in embedder for pure alignment tests: hashed bag of words, unit length."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for r, t in enumerate(texts):
        for w in re.findall(r"\w+", t.lower()):
            out[r, int(hashlib.md5(w.encode()).hexdigest(), 16) % dim] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


P = [
    "Debian runs on many computers. This manual explains how to install it step by step and what to prepare first.",
    "Back up your existing data before you start. Write down the network settings the installer will ask about.",
    "The partitioner needs at least 512 MB of free disk space for a minimal system without a desktop environment.",
    "Configure the network interface with DHCP, or type a static address, netmask, gateway and name servers.",
    "Braille displays and speech synthesis are supported during installation through the accessibility menu.",
    "The boot loader is installed to the first hard disk so that the new system starts after a reboot.",
    "Appendix: the GNU General Public License grants you the freedom to share and change free software.",
]
NEW = "Secure boot requires signed shim and kernel images; firmware keys are enrolled from the setup utility."


def rows_of(texts_a, texts_b, **kw):
    va, vb = bow(texts_a), bow(texts_b)
    return label_rows(texts_a, texts_b, align(va, vb), vectors=(va, vb), **kw)


# ------------------------------------------------------------------------------------- pure alignment
def test_synthetic_insert_delete_edit_move_exact_labels():
    a = P
    b = [P[6], P[0], P[1], P[2].replace("512 MB", "1024 MB"), P[3], NEW, P[5]]
    rows = rows_of(a, b)
    got = [(r.label, r.a, r.b) for r in rows]
    assert got == [(ONLY_B, None, 0), (SAME, 0, 1), (SAME, 1, 2), (CHANGED, 2, 3), (SAME, 3, 4),
                   (ONLY_A, 4, None), (ONLY_B, None, 5), (SAME, 5, 6), (ONLY_A, 6, None)]
    edit = rows[3]
    assert edit.removed == ["512"] and edit.added == ["1024"]  # the word-level diff, nothing else
    assert "[-512-]{+1024+}" in Labeller(a, b).diff(2, 3)
    moved_a, moved_b = rows[-1], rows[0]  # the appendix moved to the front: same text, pointed at both ways
    assert moved_a.moved == 0 and moved_b.moved == 6
    assert rows[5].moved is None and rows[6].moved is None  # deleted / inserted sections are not "moved"


def test_identical_text_cut_at_other_places_is_same():
    sentences = [f"Step {k}: run the command number {k} and check that the output says ok {k}." for k in range(30)]
    a = [" ".join(sentences[i:i + 3]) for i in range(0, 30, 3)]            # 10 chunks of 3 sentences
    b = [" ".join(sentences[i:i + 4]) for i in range(0, 30, 4)]            # 8 chunks of 4, other boundaries
    rows = rows_of(a, b)
    assert {r.label for r in rows} == {SAME}
    assert sorted(r.a for r in rows if r.a is not None and r.merged != "b") == list(range(10))
    assert sorted(r.b for r in rows if r.b is not None and r.merged != "a") == list(range(8))
    assert any(r.merged for r in rows)  # 10 vs 8 chunks: two of A's have no counterpart of their own


def test_normalisation_is_not_a_change_but_a_number_is():
    a = ("The in-\nstaller reads the “preseed” file; see Section 6.4, \"Loading Missing Firmware\" for de-\ntails "
         "on /usr/ share/doc and Alt F1.")
    b = "The installer reads the \"preseed\" file; see Section 6.4 for details on /usr/share/doc and AltF1."
    ign = ignore_pattern()
    ka, kb = Keyed.of(a, ign), Keyed.of(b, ign)
    assert all(match_mask(ka, [kb])) and all(match_mask(kb, [ka]))
    c = b.replace("6.4", "6.5")
    assert not all(match_mask(Keyed.of(c, ign), [kb]))


# ------------------------------------------------ rendering differences (one edition as TXT and as PDF)
def labels_of(texts_a, texts_b, pairs, **kw) -> list[str]:
    return [r.label for r in label_rows(texts_a, texts_b, pairs, **kw)]


FILLER = [" ".join(f"{w}{k}" for w in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"))
          + f" paragraph {k} ends here." for k in range(8)]


def test_box_drawn_table_rules_are_not_words():
    assert tokens("│Install Type│RAM (minimum)│\n├────┼────┤") == ["Install", "Type", "RAM", "(minimum)"]


def test_table_cells_in_another_order_are_same_across_renderings_only():
    drawn = ("Recommended minimum system requirements.\n┌───────┬──────┐ │Install│RAM   │ ├───────┼──────┤ "
             "│None   │256 MB│ ├───────┼──────┤ │Desktop│1 GB  │ └───────┴──────┘")
    by_column = "Recommended minimum system requirements.\nInstall None Desktop RAM 256 MB 1 GB"
    assert labels_of([drawn], [by_column], [(0, 0)]) == [SAME]
    assert labels_of([drawn], [by_column.replace("256", "512")], [(0, 0)]) == [CHANGED]
    rows_swapped = drawn.replace("│None   │256 MB│ ├───────┼──────┤ │Desktop│1 GB  │",
                                 "│Desktop│1 GB  │ ├───────┼──────┤ │None   │256 MB│")
    assert labels_of([drawn], [rows_swapped], [(0, 0)]) == [CHANGED]  # one rendering: the order counts


def test_pipe_rows_are_a_drawn_table_too():
    """The TXT loader now writes a box-drawn table as pipe rows, a line each: the same rule holds for them (the
    Debian TXT/PDF pairs' false changes rose from 1.5% to 2.2% without it)."""
    piped = "Recommended minimum system requirements.\n| Install | RAM |\n| None | 256 MB |\n| Desktop | 1 GB |"
    by_column = "Recommended minimum system requirements.\nInstall None Desktop RAM 256 MB 1 GB"
    assert labels_of([piped], [by_column], [(0, 0)]) == [SAME]
    assert labels_of([piped], [by_column.replace("256", "512")], [(0, 0)]) == [CHANGED]
    assert Keyed.of("cat a | grep b | sort").cell == [False] * 7  # a shell pipeline is no table


def test_footnote_marks_broken_across_lines_and_letter_marks():
    keys = Keyed.of("for more than one country^\n[4], you will see │yes^[a]│").keys
    assert [k for k in keys if k] == ["for", "more", "than", "one", "country", "you", "will", "see", "yes"]


def test_footnote_at_the_foot_of_the_page_or_the_end_of_the_chapter_is_same():
    body = "Select the country where you live^[4] before the keyboard layout is chosen."
    note = "In technical terms: where multiple locales exist for that language with differing country codes."
    txt = [body] + FILLER[:6] + ["For details see the wiki.\n━━━━━━━━━━\n^[4] " + note]    # end of the chapter
    pdf = [body.replace("^[4]", "¹") + "\n¹" + note] + FILLER[:6] + ["For details see the wiki."]  # foot of page
    pairs = [(k, k) for k in range(8)]
    assert labels_of(txt, pdf, pairs) == [SAME] * 8
    edited = [pdf[0].replace("differing country codes", "differing region codes")] + pdf[1:]
    assert labels_of(txt, edited, pairs)[0] == CHANGED


def test_table_of_contents_only_one_version_prints_is_not_a_change():
    toc = ("Chapter 2. System Requirements\nTable of Contents\n2.1. Supported Hardware 2.1.1. Three different ARM "
           "ports 2.1.2. Multiple Processors 2.2. Devices Requiring Firmware 2.3. Purchasing Hardware 2.3.1. Avoid "
           "Proprietary or Closed Hardware 2.4. Installation Media 2.4.1. USB Memory Stick")
    # the chunker cut the table of contents; the second chunk repeats the end of the first (its overlap)
    txt = [toc, "2.4. Installation Media 2.4.1. USB Memory Stick 2.4.2. Network 2.5. Memory and Disk Space "
                "Requirements\nThis section contains information about what hardware you need."]
    pdf = ["Chapter 2 System Requirements", "This section contains information about what hardware you need."]
    assert labels_of(txt, pdf, [(0, 0), (1, 1)]) == [SAME, SAME]
    assert [k.toks for k in keyed_thread(txt)] == [tokens(t) for t in txt]  # the thread's overlap taken out, not lost
    # both versions print it: an entry that changed is a change
    toc_b = toc.replace("2.1.2. Multiple Processors", "2.1.2. Graphics Hardware Support")
    assert labels_of([toc, txt[1]], [toc_b, txt[1]], [(0, 0), (1, 1)]) == [CHANGED, SAME]


def test_running_headers_stay_on_their_line_and_need_a_section_number_with_a_dot():
    a = "The list of partitions might look like this:\nSCSI1 (0,0,0) (sda) - 6.4 GB WDC AC36400L #1 primary"
    assert labels_of([a], [a.replace("AC36400L", "AC99999X")], [(0, 0)]) == [CHANGED]  # a listing, no header
    h = "It can be used to netboot.\nAPPENDIX A. INSTALLATION HOWTO\nA.2.4 Booting from hard disk\nIt is possible."
    h += "\nMore text.\nAPPENDIX A. INSTALLATION HOWTO\nAnd more."  # the header repeats (another page)
    assert labels_of([h], [h.replace("A.2.4", "A.2.5")], [(0, 0)]) == [CHANGED]  # the next line is no header
    assert labels_of([h], [h.replace("APPENDIX A. INSTALLATION HOWTO\n", "")], [(0, 0)]) == [SAME]


def test_running_header_cut_by_a_chunk_boundary_is_not_a_change():
    pdf = ["Only be done with care. APPENDIX B. AUTOMATING THE INSTALLATION … B.2.",
           "AUTOMATING THE INSTALLATION … B.2. USING PRESEEDING The preconfiguration file is read first.",
           "It is read by the installer.\nAPPENDIX B. AUTOMATING THE INSTALLATION … B.2. USING PRESEEDING"]
    txt = ["Only be done with care.", "The preconfiguration file is read first.", "It is read by the installer."]
    assert labels_of(pdf, txt, [(0, 0), (1, 1), (2, 2)]) == [SAME, SAME, SAME]


def test_cross_reference_with_a_one_word_title():
    a = "More about this document may be found in Appendix E, Administrivia. That chapter explains it."
    b = "More about this document may be found in Appendix E. That chapter explains it."
    assert labels_of([a], [b], [(0, 0)], titles={"Administrivia"}) == [SAME]


def test_a_path_broken_elsewhere_at_the_end_of_a_chunk():
    tail = " ".join(f"word{k}" for k in range(150))
    end = "To submit bugs, look at /usr/share/doc/debian/bug*."
    a = ["There is lots of documentation. " + end, end + " " + tail]
    b = [x.replace("/usr/share", "/usr/ share") for x in a]
    assert labels_of(a, b, [(0, 0), (1, 1)]) == [SAME, SAME]


def test_word_diff_never_shows_hidden_text():
    from thread_rag.compare.run import Side, compare_sides

    a = 'For details see Section 6.4, "Loading Missing Firmware" on the 512 MB of memory the installer needs.'
    b = "For details see Section 6.4 on the 1024 MB of memory the installer needs."
    chunks = [type("C", (), dict(chunk_id=f"D_{k}", text=t, heading_path=[], page_start=None, page_end=None,
                                 pages_label=""))() for k, t in enumerate((a, b))]
    res = compare_sides(Side("A", "a", [chunks[0]], bow([a])), Side("B", "b", [chunks[1]], bow([b])))
    (row,) = res.rows
    assert row["label"] == CHANGED and "[-512-]{+1024+}" in row["diff"] and "Loading" not in row["diff"]


STEPS = ["1. Open the lid", "2. Remove the battery", "3. Unplug the cable", "4. Replace the fan"]


def test_a_deleted_procedure_step_is_a_change():
    a = "To replace the fan:\n" + "\n".join(STEPS)
    b = "To replace the fan:\n" + "\n".join(s for s in STEPS if not s.startswith("2."))
    (row,) = label_rows([a], [b], [(0, 0)])
    assert row.label == CHANGED and row.removed == ["2. Remove the battery"]
    # the steps are a procedure, not a table of contents: no evidence (heading, nested numbers, page numbers)
    assert not any(Keyed.of(a).toc)


def test_a_deleted_procedure_is_a_change():
    intro, outro = "To replace the fan, switch the machine off first.", "Close the lid and switch it on again."
    a = [intro + "\n" + "\n".join(STEPS), outro]
    b = [intro, outro]
    assert labels_of(a, b, [(0, 0), (1, 1)]) == [CHANGED, SAME]
    # the procedure in a chunk of its own, without counterpart: only in A, not "cut elsewhere"
    a = [intro, "\n".join(STEPS), outro]
    assert labels_of(a, b, [(0, 0), (1, None), (2, 1)]) == [SAME, ONLY_A, SAME]


def test_what_makes_a_table_of_contents():
    def toc(text):
        k = Keyed.of(text)
        return [t for t, x in zip(k.toks, k.toc) if x]

    assert toc("Contents\n" + "\n".join(STEPS)) == " ".join(STEPS).split()  # a Contents heading just before
    assert toc("Table of Contents\n1. Welcome\n2. Requirements") == ["1.", "Welcome", "2.", "Requirements"]
    assert toc("2.4. Media\n2.4.1. USB Stick\n2.5. Memory") == ["2.4.", "Media", "2.4.1.", "USB", "Stick", "2.5.",
                                                                 "Memory"]  # nested numbers
    paged = "1. Welcome ..... 1\n2. System Requirements ..... 5\n3. Before Installing 10"
    assert toc(paged) == paged.split()  # page numbers and dot leaders
    assert toc(paged.replace(" .....", "")) == paged.replace(" .....", "").split()  # page numbers: 1, 5, 10
    assert toc("1. Set the volume to 5\n2. Set the brightness to 3") == []  # steps that end with a value
    assert toc("1. Set the volume to 5\n2. Wait 9\n3. Set the brightness to 3") == []  # not page order
    assert toc("Read the table of contents.\n1. Open the lid\n2. Remove the battery") == []  # no heading line


def test_table_of_contents_running_to_the_end_of_the_text():
    (k,) = keyed_thread(["Contents\n2.1. Intro\n2.2. Setup\n2.3. a b c d e f g h i j k l"])
    assert all(k.toc[1:])


def test_decimal_points_and_minus_signs_belong_to_the_number():
    assert word_key("1.5") == "1.5" and word_key("15") == "15"
    assert word_key("-5") == "-5" and word_key("(-5),") == "-5" and word_key("\u22125") == "-5"
    assert word_key("10.0.0.1.") == "10.0.0.1" and word_key("100.0.1") == "100.0.1"
    assert word_key("1,000,") == "1,000" and word_key("2.4.5.") == "2.4.5"
    assert word_key("“preseed”;") == "preseed" and word_key("in-staller") == "installer"  # rendering, as before
    for a, b in (("Wait 1.5 s before you press the key.", "Wait 15 s before you press the key."),
                 ("Set the offset to -5 here.", "Set the offset to 5 here."),
                 ("Ping 10.0.0.1 to test it.", "Ping 100.0.1 to test it."),
                 ("It costs 1,5 units.", "It costs 15 units.")):
        assert labels_of([a], [b], [(0, 0)]) == [CHANGED], (a, b)


def test_a_running_header_repeats_and_contents_in_a_sentence_is_a_word():
    a = "Type the new password twice.\n3.2. SET THE ROOT PASSWORD TO ADMIN\nThen reboot the machine."
    assert labels_of([a], [a.replace("ADMIN", "SECRET")], [(0, 0)]) == [CHANGED]  # once: content, not a header
    s = "Check the\nCONTENTS of the archive before you unpack it."
    assert labels_of([s], [s.replace("CONTENTS ", "")], [(0, 0)]) == [CHANGED]
    assert labels_of(["See CONTENTS first."], ["See first."], [(0, 0)]) == [CHANGED]
    # a header on every page of a PDF (and one printed beside it on the same line once) is rendering
    head = "\nAPPENDIX B. AUTOMATING THE INSTALLATION … B.4. CONTENTS OF THE FILE"
    txt = [f"Body text of page {k} goes on here and ends." for k in range(4)]
    pdf = [txt[0] + head, txt[1] + head, txt[2] + "\nAPPENDIX B. AUTOMATING THE INSTALLATION … B.3. CREATING A FILE",
           txt[3]]
    assert labels_of(pdf, txt, [(k, k) for k in range(4)]) == [SAME] * 4
    assert labels_of(pdf, txt[:1] + ["Body text of page 7 goes on here and ends."] + txt[2:],
                     [(k, k) for k in range(4)]) == [SAME, CHANGED, SAME, SAME]


def test_heading_ids_ignore_numbering_and_break_ties():
    ha, hb = heading_ids([["Guide", "2.1.4. Multiple Processors"], [], ["Laptops"]],
                         [["Guide", "2.1.5 Multiple Processors"], ["Laptops"]])
    assert ha[0] == hb[0] and ha[1] == -1 and ha[2] == hb[1] and ha[0] != ha[2]
    # two B chunks with equal vectors: the heading decides which one A's chunk pairs with
    va = np.array([[1.0, 0.0]])
    vb = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert (0, 1) in align(va, vb, np.array([7]), np.array([3, 7]))
    assert (0, 0) in align(va, vb, np.array([3]), np.array([3, 7]))


def test_hirschberg_matches_the_full_table_optimum():
    rng = np.random.default_rng(1)
    p = AlignParams(base_cells=8)  # force deep recursion on small inputs
    for _ in range(60):
        n, m = (int(x) for x in rng.integers(0, 30, 2))
        a = rng.normal(size=(n, 6))
        b = rng.normal(size=(m, 6))
        k = min(n, m) // 2
        if k:
            b[:k] = a[:k] + 0.1 * rng.normal(size=(k, 6))
        ha, hb = rng.integers(-1, 3, n), rng.integers(-1, 3, m)
        pairs = align(a, b, ha, hb, p)
        _, best = align_full(a, b, ha, hb, p)
        assert path_score(a, b, pairs, ha, hb, p) == pytest.approx(best, abs=1e-6)
        assert [i for i, _ in pairs if i is not None] == list(range(n))
        assert [j for _, j in pairs if j is not None] == list(range(m))


def test_long_threads_align_in_linear_memory():
    rng = np.random.default_rng(0)
    n = 5000
    a = rng.normal(size=(n, 32)).astype(np.float32)
    b = np.concatenate([a[:2500], rng.normal(size=(300, 32)), a[2600:]]).astype(np.float32)  # 100 out, 300 in
    tracemalloc.start()
    t0 = time.perf_counter()
    pairs = align(a, b)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    full_table = n * len(b) * 8
    assert peak < full_table / 8, f"peak {peak / 2**20:.0f} MiB vs a {full_table / 2**20:.0f} MiB table"
    assert seconds < 30
    matched = {(i, j) for i, j in pairs if i is not None and j is not None}
    truth = {(i, i) for i in range(2500)} | {(i, i + 200) for i in range(2600, n)}
    assert truth <= matched  # every unchanged chunk found its counterpart (the replaced stretch may pair up)


def test_bad_vectors_are_rejected():
    with pytest.raises(ValueError):
        align(np.zeros(3), np.zeros((2, 3)))
    with pytest.raises(ValueError):
        align(np.zeros((2, 3)), np.zeros((2, 4)))
    assert align(np.zeros((0, 3)), np.zeros((2, 3))) == [(None, 0), (None, 1)]


# ------------------------------------------------------------------- real documents, real embedder
V1 = """# Install Guide

## Introduction

This guide explains how to install the system on a personal computer. Read it once before you begin, and keep
it at hand while the installer runs.

## Getting the Media

Download the image for your architecture from the project's web site and write it to a USB stick or a disc.

## Verifying the Image

Compare the checksum of the downloaded image with the published list. A wrong checksum means a damaged
download: fetch the image again.

## Requirements

You need a computer with at least 2 GB of memory and a network connection. Check that the firmware of the
machine is up to date before you start, and write down the name of the network card.

## Partitioning

The installer offers guided partitioning. Choose the whole disk, then one partition for all files. The root
partition needs at least 512 MB of space; a separate home partition keeps your files when you reinstall.

## Network

The installer configures the network with DHCP. If there is no DHCP server, type the address, the netmask,
the gateway and the name servers by hand when the installer asks for them.

## Booting

After the installation the boot loader starts the new system. Remove the installation medium and reboot the
machine; log in with the user name and password chosen during the installation.

## Localisation

Choose the language, the country and the keyboard layout at the start. They decide the default time zone and
the language of the installed system.

## Upgrading

Later releases are installed with the package manager: update the package lists, then upgrade the whole
system, then reboot into the new kernel.

## Troubleshooting

If the installer stops, switch to the second console and read the log file. Most problems come from missing
firmware or a damaged installation image.
"""
PRINTER = """# Printer Manual

## Loading Paper

Open the paper tray, fan the stack of sheets and slide it under the guides. The tray holds 250 sheets of plain
A4 paper; do not fill it above the mark.

## Replacing the Toner

When the status light blinks orange, lift the front cover, pull the old toner cartridge out and shake the new
one gently before you push it in.
"""
V2 = (V1.replace("at least 512 MB of space", "at least 1024 MB of space")
      .replace("## Booting", "## Secure Boot\n\nSecure boot needs a signed shim. Enroll the distribution key in the "
               "firmware setup utility, then enable secure boot again and save the settings.\n\n## Booting"))


@pytest.fixture(scope="module")
def pair_home(tmp_path_factory, embedder):
    """Two versions of a small guide and an unrelated manual, indexed once with the real embedder (DOC1 = v1,
    DOC2 = v2, DOC3 = a printer manual)."""
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    root = tmp_path_factory.mktemp("compare")
    v1 = write(root / "v1" / "guide.md", V1)
    v2 = write(root / "v2" / "guide.md", V2)
    printer = write(root / "printer" / "printer.md", PRINTER)
    settings = load_settings({"HOME": str(root / "home"), "CACHE_PATH": str(root / "cache"), "CHUNK_TOKENS": 80,
                              "CHUNK_OVERLAP": 8, "CHUNK_MIN_TOKENS": 16},  # a chunk per section
                             env={}, config_file=False)
    engine = Engine(settings, embedder=embedder)
    assert [r.status for r in engine.index_paths([v1, v2, printer])] == ["indexed"] * 3
    return root, settings


@pytest.fixture
def pair_engine(pair_home, embedder):
    from thread_rag.engine import Engine

    class NoLLM:  # the default comparison must never reach a model
        metadata = {"model": "none"}

        def invoke(self, *a, **kw):
            raise AssertionError("the default comparison called the LLM")

    return Engine(pair_home[1], embedder=embedder, chat_model=NoLLM())


def test_real_pair_one_changed_section_one_new_section(pair_engine):
    from thread_rag import tools

    res = tools.compare_documents(pair_engine, "DOC1", "DOC2")
    labels = [r["label"] for r in res["rows"]]
    changed = [r for r in res["rows"] if r["label"] == CHANGED]
    only_b = [r for r in res["rows"] if r["label"] == ONLY_B]
    assert len(changed) == 1 and len(only_b) == 1 and labels.count(ONLY_A) == 0
    c = changed[0]
    assert c["removed"] == ["512"] and c["added"] == ["1024"]
    assert "[-512-]{+1024+}" in c["diff"]
    assert c["a"]["heading_path"][-1] == "Partitioning" and c["b"]["heading_path"][-1] == "Partitioning"
    assert only_b[0]["b"]["heading_path"][-1] == "Secure Boot" and "signed shim" in only_b[0]["b"]["text"]
    assert res["counts"]["same"] == labels.count(SAME) >= 3
    assert json.loads(json.dumps(res))["doc_a"]["doc_id"] == "DOC1"


def test_topic_keeps_the_region_around_the_hits(pair_engine):
    from thread_rag import tools

    res = tools.compare_documents(pair_engine, "DOC1", "DOC2", topic="secure boot signed shim key")
    assert res["topic"] and res["focus"]["b"] is not None
    assert any(r["label"] == ONLY_B for r in res["rows"])
    full = tools.compare_documents(pair_engine, "DOC1", "DOC2")
    assert 0 < len(res["rows"]) < len(full["rows"])  # a 13-section guide: the region is a part of it
    skipped = sum(r.get("skipped_before", 0) + r.get("skipped_after", 0) for r in res["rows"])
    assert skipped > 0 and len(res["rows"]) + skipped == len(full["rows"])  # every left-out row is accounted for
    assert res["rows"][-1].get("skipped_after")  # the guide goes on after the region: said, not silently cut
    buf = io.StringIO()
    from thread_rag.compare.view import render_comparison

    render_comparison(Console(file=buf, width=140), res)
    assert "rows outside the topic's region" in buf.getvalue()


def test_a_topic_below_the_relevance_floor_is_said_not_shown(pair_engine):
    """A topic one document does not treat: one clear line instead of the region around an unrelated hit;
    neither document treats it: a one-line error."""
    from thread_rag import tools
    from thread_rag.compare.view import render_comparison
    from thread_rag.errors import ThreadRagError

    res = tools.compare_documents(pair_engine, "DOC1", "DOC3", topic="guided partitioning of the root partition")
    assert res["topic_missing"] == ["DOC3"] and res["focus"]["b"] is None and res["focus"]["a"] is not None
    assert res["note"] == "nothing about 'guided partitioning of the root partition' in DOC3"
    assert any(r["a"] and r["a"]["heading_path"][-1] == "Partitioning" for r in res["rows"])
    buf = io.StringIO()
    render_comparison(Console(file=buf, width=140), res)
    assert "nothing about 'guided partitioning of the root partition' in DOC3" in buf.getvalue()
    with pytest.raises(ThreadRagError, match="nothing about 'chocolate cake with cherries' in DOC1 or DOC2"):
        tools.compare_documents(pair_engine, "DOC1", "DOC2", topic="chocolate cake with cherries")
    full = tools.compare_documents(pair_engine, "DOC1", "DOC2", topic="guided partitioning of the root partition")
    assert "note" not in full and full["topic_missing"] == []  # both documents treat it


def test_cli_compare_json_text_and_one_line_errors(pair_home, capsys):
    from thread_rag.cli import main

    home = str(pair_home[1].home)
    assert main(["--data-dir", home, "compare", "DOC1", "DOC2", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["counts"]["changed"] == 1 and res["counts"]["only-in-B"] == 1
    assert main(["--data-dir", home, "compare", "DOC1", "DOC2"]) == 0  # not a tty: printed, never paged
    out = capsys.readouterr().out
    assert "DOC1" in out and "changed" in out and "1024" in out and "only in DOC2" in out
    for bad, words in ((["DOC1", "DOC9"], "DOC9"), (["DOC1", "doc1"], "twice"),
                       (["DOC1", "DOCX"], "not a document id")):
        assert main(["--data-dir", home, "compare", *bad]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ") and words in err, err


def test_explain_is_cached_and_off_by_default(pair_engine, tmp_path):
    from thread_rag import tools
    from thread_rag.compare.explain import ChangeExplainer
    from thread_rag.compare.run import Side, compare_sides

    class Counting:
        metadata = {"model": "counting-fake"}
        calls = 0

        def invoke(self, messages, **kw):
            Counting.calls += 1
            assert "512" in messages[-1].content and "1024" in messages[-1].content

            class R:
                content = "The minimum root partition grows from 512 MB to 1024 MB. Extra words."
            return R()

    sides = []
    for d in ("DOC1", "DOC2"):
        rec = pair_engine.document(d)
        ch, vec = pair_engine.store.load(rec.serial, rec.generation, with_embeddings=True)
        sides.append(Side(rec.doc_id, rec.name, ch, vec, rec.content_hash))
    for _ in range(2):
        ex = ChangeExplainer(Counting(), tmp_path / "cache")
        res = compare_sides(*sides, explain=ex.for_docs(*sides))
        (c,) = [r for r in res.rows if r["label"] == CHANGED]
        assert c["explanation"] == "The minimum root partition grows from 512 MB to 1024 MB."
    assert Counting.calls == 1  # the second run read the cache
    assert "explanation" not in json.dumps(tools.compare_documents(pair_engine, "DOC1", "DOC2"))


def test_repl_compare_side_by_side(pair_engine):
    from thread_rag.repl import Repl

    buf = io.StringIO()
    repl = Repl(pair_engine, console=Console(file=buf, width=140, force_terminal=False))
    assert repl.handle("/compare DOC1 DOC2")
    assert repl.handle("/compare DOC1")  # usage error: one line, the session goes on
    out = buf.getvalue()
    assert "same" in out and "1024" in out and "Secure Boot" in out
    assert "usage: /compare DOC1 DOC2" in out


def test_repl_compare_takes_the_cli_options(pair_engine):
    """The chat's /compare read `--limit 1` and `--all` as its topic (the view's own hint names --limit)."""
    from thread_rag.repl import Repl

    buf = io.StringIO()
    repl = Repl(pair_engine, console=Console(file=buf, width=140, force_terminal=False))
    assert repl.handle("/compare DOC1 DOC2 --limit 1 --all")
    out = buf.getvalue()
    assert "topic" not in out and "error" not in out, out
    assert "1 more changed/only rows not shown (--limit N)" in out  # the chat has no --json
    folded = io.StringIO()
    Repl(pair_engine, console=Console(file=folded, width=140, force_terminal=False)).handle("/compare DOC1 DOC2")
    assert len(out.splitlines()) > len(folded.getvalue().splitlines())  # --all: the same rows one by one
    bad = io.StringIO()
    repl = Repl(pair_engine, console=Console(file=bad, width=140, force_terminal=False))
    assert repl.handle("/compare DOC1 DOC2 --limit 0")
    assert "--limit 0: must be 1 or more" in bad.getvalue()  # as the CLI says; it became 20
    seen = []
    repl.wait_for_model = lambda: None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("thread_rag.repl.tools.compare_documents", lambda *a, **kw: seen.append((a, kw)) or 1 / 0)
        repl.handle("/compare DOC1 DOC2 --limit 30 --explain")
        repl.handle("/compare DOC1 DOC2 -- --all")
    assert seen[0][1] == {"topic": None, "explain": True, "explain_limit": 30, "explain_within": 30}  # it explained 10
    assert seen[1][1]["topic"] == "--all"  # after --, words are the topic (docs/05)


def test_agent_tool_argument_validation_and_intent(pair_engine):
    from fakes import ScriptedChatModel
    from thread_rag.agent.loop import Agent
    from thread_rag.agent.tools import call_tool, make_tools

    t = make_tools(pair_engine)
    assert "bad arguments" in call_tool(t, "compare_documents", {"doc_a": "DOC1"}).error
    assert "bad arguments" in call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "DOCX"}).error
    assert "bad arguments" in call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "DOC2", "x": 1}).error
    assert "bad arguments" in call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "DOC2", "topic": ""}).error
    assert "twice" in call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "doc1"}).error
    assert "DOC7" in call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "DOC7"}).error
    ok = call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "DOC2", "topic": "partitioning"})
    assert ok.ok and ok.result["topic"] == "partitioning"

    text = "What changed between DOC1 and DOC2 about partitioning?"
    assert compare_args(text) == {"doc_a": "DOC1", "doc_b": "DOC2", "topic": "partitioning"}
    model = ScriptedChatModel(action="compare_documents")
    model.calls = []
    model.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    ans = Agent(pair_engine, chat_model=model).ask(text)
    assert ans.tool_trace[0]["tool"] == "compare_documents" and ans.tool_trace[0]["ok"]
    assert "changed: DOC1_" in ans.answer and "-512" in ans.answer and "+1024" in ans.answer


def test_documents_indexed_with_different_embedders_are_not_compared(pair_engine, monkeypatch):
    from dataclasses import replace

    from thread_rag import tools
    from thread_rag.errors import EmbedderMismatchError

    real = pair_engine.document
    stored = {"DOC1": "packaged:all-MiniLM-L6-v2", "DOC2": "packaged:bge-small-en-v1.5"}
    monkeypatch.setattr(pair_engine, "document", lambda d: replace(real(d), embedder=stored[real(d).doc_id]))
    with pytest.raises(EmbedderMismatchError) as err:
        tools.compare_documents(pair_engine, "DOC1", "DOC2")
    msg = str(err.value)
    assert "\n" not in msg and "DOC1" in msg and "DOC2" in msg
    assert "packaged:all-MiniLM-L6-v2" in msg and "packaged:bge-small-en-v1.5" in msg
    assert f"thread-rag index {real('DOC2').path}" in msg
    stored["DOC1"] = ""  # a record written before the recipe was stored: the packaged MiniLM
    with pytest.raises(EmbedderMismatchError):
        tools.compare_documents(pair_engine, "DOC1", "DOC2")
    stored["DOC2"] = "packaged:all-MiniLM-L6-v2"
    assert tools.compare_documents(pair_engine, "DOC1", "DOC2")["counts"]["changed"] == 1


def test_explain_limit_counts_the_rows_the_view_shows():
    """``--explain --limit N`` explains the changed rows among the N changed-or-only rows shown, no others."""
    from thread_rag.compare.run import Side, compare_sides
    from thread_rag.compare.view import comparison_table

    a = P[:4]
    b = [NEW, P[0], P[1], P[2].replace("512 MB", "1024 MB"), P[3]]

    def side(doc, texts):
        chunks = [type("C", (), dict(chunk_id=f"{doc}_{k:03d}", text=t, heading_path=[], page_start=None,
                                     page_end=None, pages_label=""))() for k, t in enumerate(texts)]
        return Side(doc, doc.lower(), chunks, bow(texts))

    asked = []

    def explain(row, x, y):
        asked.append((row.a, row.b))
        return "The minimum grows."

    sa, sb = side("DOC1", a), side("DOC2", b)
    res = compare_sides(sa, sb, explain=explain, explain_limit=1, explain_within=1)
    assert [r["label"] for r in res.rows] == [ONLY_B, SAME, SAME, CHANGED, SAME]
    assert asked == [] and res.counts["explained"] == 0  # the one row shown is the only-in-B row
    res = compare_sides(sa, sb, explain=explain, explain_limit=2, explain_within=2)
    assert asked == [(2, 3)] and res.counts["explained"] == 1
    table, left_out = comparison_table({"doc_a": sa.info(), "doc_b": sb.info(), "rows": res.rows}, limit=2,
                                       show_same=True)
    assert left_out == 0  # with --all the same rows are shown but never count against --limit


def test_cli_explain_limit_is_the_view_limit(pair_home, monkeypatch, capsys):
    from thread_rag import tools
    from thread_rag.cli import main

    real, seen = tools.compare_documents, {}

    def spy(engine, a, b, **kw):
        seen.update(kw)
        return real(engine, a, b, **{**kw, "explain": False})  # no model here: only the arguments are checked

    monkeypatch.setattr(tools, "compare_documents", spy)
    assert main(["--data-dir", str(pair_home[1].home), "compare", "DOC1", "DOC2", "--explain", "--limit", "1"]) == 0
    assert seen["explain"] and seen["explain_limit"] == 1 and seen["explain_within"] == 1
    capsys.readouterr()


def compare_args(text: str) -> dict:
    """The arguments the chat gives compare_documents for ``text`` (two documents DOC1, DOC2 indexed)."""
    from thread_rag.agent import intent

    docs = [("DOC1", "guide-a.md"), ("DOC2", "guide-b.md")]
    args, missing = intent.arguments("compare_documents", text, [], intent.named_documents(text, docs), docs)
    assert not missing, text
    return args


def test_compare_intent_finds_the_topic_before_the_documents():
    docs = {"doc_a": "DOC1", "doc_b": "DOC2"}
    for text, topic in (("How does partitioning differ between DOC1 and DOC2?", "partitioning"),
                        ("How do the network settings differ in DOC1 and DOC2?", "network settings"),
                        ("What are the differences in secure boot between DOC1 and DOC2?", "secure boot"),
                        ("What changed in the boot loader between DOC1 and DOC2?", "boot loader"),
                        ("Compare the partitioning in DOC1 and DOC2", "partitioning"),
                        ("What changed between DOC1 and DOC2 about partitioning?", "partitioning")):
        assert compare_args(text) == {**docs, "topic": topic}, text
    for text in ("What are the differences between DOC1 and DOC2?", "Compare DOC1 and DOC2",
                 "What changed between DOC1 and DOC2?", "How does it differ between DOC1 and DOC2?"):
        assert compare_args(text) == docs, text


# ---------------------------------------------------------------------- the benchmark's ground truth
def test_bench_truth_from_the_txt_diff(tmp_path):
    from types import SimpleNamespace as NS

    from bench.compare import chunk_truth, diff_truth, map_chunks, predictions, prf, true_counterparts

    lines = [f"line{k} alpha{k} beta{k} gamma{k} delta{k} epsilon{k} zeta{k} eta{k}" for k in range(40)]
    a = write(tmp_path / "a.txt", "\n".join(lines))
    b_lines = lines[:10] + ["line10 alpha10 beta10 GAMMA delta10 epsilon10 zeta10 eta10"] + lines[11:30] + lines[35:]
    b = write(tmp_path / "b.txt", "\n".join(b_lines))
    t = diff_truth(a, b)
    ka, kb = t["keys"]
    chunks_a = [NS(text="\n".join(lines[i:i + 5])) for i in range(0, 40, 5)]
    chunks_b = [NS(text="\n".join(b_lines[i:i + 5])) for i in range(0, len(b_lines), 5)]
    sa, sb = map_chunks(chunks_a, ka), map_chunks(chunks_b, kb)
    assert all(s is not None for s in sa + sb)
    truth_a = chunk_truth(sa, t["changed"][0])
    assert truth_a == [True, True, False, True, True, True, False, True]  # line 10 edited, lines 30-34 removed
    cps = true_counterparts(sa, sb, t["map"][0], t["changed"][0])
    assert cps[0] == {0} and cps[3] == {3}
    rows = [{"label": "same", "a": {"chunk_id": f"DOC1_{i:03d}"}, "b": {"chunk_id": f"DOC2_{i:03d}"},
             "coverage_a": 1.0, "coverage_b": 1.0} for i in range(7)]
    same_a, _, cp_a, _ = predictions(rows, 8, 7)
    assert same_a[:7] == [True] * 7 and same_a[7] is None and cp_a[3] == 3
    assert prf([True, False, True], [True, True, False], True)["f1"] == pytest.approx(0.5)


def test_a_short_topic_named_word_for_word_is_found(pair_engine):
    """A topic of a word or two that a section names word for word ("shim", "toner cartridge") stayed under the
    cosine floor against a whole chunk: "nothing about 'pgbouncer'" where a step said `pgbouncer -R` (review
    finding, ninth session). Named in every word, it is about that section; unnamed, the floor decides as before."""
    from thread_rag import tools
    from thread_rag.errors import ThreadRagError

    res = tools.compare_documents(pair_engine, "DOC1", "DOC2", topic="shim")
    assert res["topic_missing"] == ["DOC1"] and res["focus"]["b"] is not None
    assert any(r["label"] == ONLY_B and "signed shim" in r["b"]["text"] for r in res["rows"])
    res = tools.compare_documents(pair_engine, "DOC3", "DOC1", topic="toner cartridge")
    assert res["topic_missing"] == ["DOC1"] and res["focus"]["a"] is not None
    with pytest.raises(ThreadRagError, match="nothing about 'pgbouncer' in DOC1 or DOC2"):
        tools.compare_documents(pair_engine, "DOC1", "DOC2", topic="pgbouncer")  # named nowhere


def test_compare_of_a_document_whose_chunks_the_store_lost_says_so(make_engine, tmp_path):
    """With its chunks gone from the store (a deleted chroma folder), compare said "same 0 · changed 0" (0 chunks),
    exit 0, where search, fetch and nested name the loss and the repair."""
    from thread_rag import tools
    from thread_rag.errors import ThreadRagError

    engine = make_engine(CHUNK_TOKENS=80, CHUNK_OVERLAP=8, CHUNK_MIN_TOKENS=16)
    engine.index_file(write(tmp_path / "v1" / "guide.md", V1))
    engine.index_file(write(tmp_path / "v2" / "guide.md", V2))
    rec = engine.document("DOC2")
    engine.store.delete_generation(rec.serial, rec.generation)
    with pytest.raises(ThreadRagError, match=r"^DOC2: chunks missing from the store .*doctor --repair"):
        tools.compare_documents(engine, "DOC1", "DOC2")


def test_a_tool_door_can_limit_the_rows_of_a_comparison(pair_engine):
    """MCP's compare_documents of two 500-chunk guides was one 1.2 MB reply, and `limit` was refused: the doors that
    call tools (MCP, scripts) take `limit` as the CLI takes --limit."""
    from thread_rag.agent.tools import call_tool, make_tools

    t = make_tools(pair_engine)
    full = call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "DOC2"}).result
    one = call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "DOC2", "limit": 1})
    assert one.ok, one.error
    listed = [r for r in full["rows"] if r["label"] != "same"]
    assert len(listed) == 2 and one.result["rows"] == listed[:1]
    assert one.result["rows_not_listed"] == len(full["rows"]) - 1 and one.result["counts"] == full["counts"]
    assert "rows_not_listed" not in full
    assert "bad arguments" in call_tool(t, "compare_documents", {"doc_a": "DOC1", "doc_b": "DOC2", "limit": 0}).error


def test_two_topic_regions_a_few_rows_apart_are_one():
    """A topic's hits in A and in B gave two regions with one row between them, shown as "⋯ 1 rows outside the
    topic's region" in the middle of the section the topic is about."""
    from thread_rag.compare.run import focus_rows
    from thread_rag.compare.view import _outside

    chunks = [type("C", (), dict(heading_path=[f"S{k}"]))() for k in range(30)]  # one section per chunk: radius only
    rows = [type("R", (), dict(a=k, b=k))() for k in range(30)]
    assert focus_rows(rows, chunks, chunks, 10, 16) == list(range(8, 19))  # 8..12 and 14..18: the row 13 between
    assert focus_rows(rows, chunks, chunks, 10, 22) == list(range(8, 13)) + list(range(20, 25))  # 7 apart: two
    assert _outside(1).plain == "⋯ 1 row outside the topic's region"
