"""One-off probe (2026-12-03, LOADER_VERSION 4): does the Debian installation guide's plain-text edition find the
passage its PDF edition finds, before and after plain text's numbered section lines became headings?

The guide ships as PDF and TXT with the same content (../shared/data/docs-debian-procedural/SOURCE.txt); it has no
question ground truth, so the PDF (outline headings, unchanged by this loader change) is the reference: for each
question, written down before any run, the PDF's top hit at k=3; a TXT search "finds it" when one of its top 3 hits
shares at least half of that chunk's words (the two editions are chunked apart, so chunk ids differ).

    thread-rag --data-dir P index .../install.en.pdf          # any loader version (PDFs are unchanged)
    thread-rag --data-dir B index .../install.en.txt          # with the code before the change (LOADER_VERSION 3)
    thread-rag --data-dir A index .../install.en.txt          # with this code
    python bench_results/probes/txt_sections_probe.py P B A > bench_results/probes/txt_sections_probe.txt

Searches run through the CLI of this checkout (`thread-rag --json search`); a store indexed by the earlier loader
is searched as it is (the loader is not used at search time).
"""
import json
import re
import subprocess
import sys

QUESTIONS = [
    "How much RAM and disk space does a desktop installation need at minimum?",
    "How do I create a bootable USB stick from the installation image on Linux?",
    "How can I install Debian over the network using PXE?",
    "How do I set up encrypted LVM during partitioning?",
    "How do I use a preseed file to automate the installation?",
    "How do I set up software RAID during the installation?",
    "How do I load missing firmware during the installation?",
    "How do I configure the network manually if DHCP fails?",
    "How do I send an installation report?",
    "How do I install the GRUB boot loader on a different disk?",
    "How much disk space does the standard system task need?",
    "How do I verify the checksums of downloaded installation images?",
]


def hits(home: str, q: str) -> list[dict]:
    out = subprocess.run(["thread-rag", "--data-dir", home, "--json", "search", q, "--k", "3"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["hits"]


def words(t: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", t.lower()))


def main(pdf: str, before: str, after: str) -> None:
    found = {"before": 0, "after": 0}
    for q in QUESTIONS:
        ref = hits(pdf, q)[0]
        gold = words(ref["text"])
        line = [f"{q}\n  PDF top: {ref['chunk_id']} p.{ref['page_start']} {' > '.join(ref['heading_path'])}"]
        for name, home in (("before", before), ("after", after)):
            hs = hits(home, q)
            share = [len(gold & words(h["text"])) / len(gold) for h in hs]
            ok = max(share) >= 0.5
            found[name] += ok
            line.append(f"  TXT {name}: {'found' if ok else 'MISSED'} (best share {max(share):.2f}); top "
                        f"{hs[0]['chunk_id']} {' > '.join(hs[0]['heading_path']) or '(no heading)'}")
        print("\n".join(line), flush=True)
    print(f"\nTXT top 3 holds the PDF's top passage: before {found['before']} of {len(QUESTIONS)}, "
          f"after {found['after']} of {len(QUESTIONS)}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
