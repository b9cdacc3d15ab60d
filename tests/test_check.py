"""The span check: commands, flags, paths, numbers with units, versions, labels and keys of a hand-made answer found
and looked up in the sources; marks; the strict setting dropping the right sentence; citation precision."""
from thread_rag.agent.check import CheckedStream, check, citations_hold, marked, not_found_words, spans

SOURCE = """The image file can be written to a USB stick as follows, after having made sure that the stick is unmounted:
# cp debian.iso /dev/sdX
# sync
You must have at least 780MB of memory and 1 gigabyte for a desktop. Press F12 for the boot menu.
Select "Guided - use entire disk". Set priority=low on the boot line. See https://www. debian.org/CD/faq/ for more.
Use the --no-act option to test."""

ANSWER = """1. Run `lsblk` to find the stick.
2. Format it with `sudo mkfs.ext4 /dev/sdX` [1].
3. Copy the image:
```
# cp debian.iso /dev/sdX
sudo dd if=debian.iso of=/dev/sdX bs=4M
sync
```
You need 1 GB of RAM and 780 MB at least, and a 2.5 GHz CPU. Press F12 or hold the Ctrl key.
Choose "Guided - use entire disk" or "Manual". Add priority=low and --no-act, or --force.
Read https://www.debian.org/CD/faq/ and /etc/fstab, version 2.6.32 of debian.iso."""


def test_the_checker_finds_every_span_of_a_hand_made_answer():
    got = [(s.kind, s.text) for s in spans(ANSWER)]
    want = [("command", "lsblk"), ("command", "sudo mkfs.ext4 /dev/sdX"), ("command", "# cp debian.iso /dev/sdX"),
            ("command", "sudo dd if=debian.iso of=/dev/sdX bs=4M"), ("command", "sync"), ("number", "1 GB"),
            ("number", "780 MB"), ("number", "2.5 GHz"), ("key", "F12"), ("key", "the Ctrl key"),
            ("label", "Guided - use entire disk"), ("label", "Manual"), ("setting", "priority=low"),
            ("flag", "--no-act"), ("flag", "--force"), ("url", "https://www.debian.org/CD/faq/"),
            ("path", "/etc/fstab"), ("version", "version 2.6.32"), ("file", "debian.iso")]
    assert got == want


def test_each_span_is_looked_up_in_the_sources():
    checked = check(ANSWER, [SOURCE])
    found = {s.text: s.found for s in checked}
    assert found["# cp debian.iso /dev/sdX"] and found["sync"] and found["priority=low"] and found["--no-act"]
    assert found["1 GB"] and found["780 MB"]  # "1 gigabyte", "780MB": the same value and unit
    assert found["F12"] and found["Guided - use entire disk"] and found["debian.iso"]
    assert found["https://www.debian.org/CD/faq/"]  # the PDF broke it with a space: still found
    for text in ("lsblk", "sudo mkfs.ext4 /dev/sdX", "sudo dd if=debian.iso of=/dev/sdX bs=4M", "2.5 GHz",
                 "the Ctrl key", "Manual", "--force", "/etc/fstab", "version 2.6.32"):
        assert not found[text], text
    words = not_found_words(checked)
    assert words[:3] == ["lsblk", "mkfs.ext4", "dd"]  # a command's words the sources do not hold, not the whole line
    assert "bs=4M" in words and "/dev/sdX" not in words and "sudo" not in words


def test_a_word_inside_another_is_not_found():
    assert not check("`dd` it", ["adding the disk"])[0].found
    assert not check("use /dev/sda", ["use /dev/sdab"])[0].found
    assert check("use /dev/sdb", ["e.g. /dev/sdb and not /dev/sdb1"])[0].found


def test_marks_go_after_the_code_that_holds_the_span():
    checked = check("Run `lsblk` now, then `cp debian.iso /dev/sdX`.", [SOURCE])
    assert marked("Run `lsblk` now, then `cp debian.iso /dev/sdX`.", checked) == \
        "Run `lsblk` [?] now, then `cp debian.iso /dev/sdX`."


def test_the_stream_is_checked_segment_by_segment_and_strict_drops_the_right_sentence():
    for strict in (False, True):
        shown = []
        stream = CheckedStream([SOURCE], shown.append, strict=strict)
        for i in range(0, len(ANSWER), 5):  # pieces cut anywhere, as a model streams them
            stream.feed(ANSWER[i:i + 5])
        stream.close()
        if not strict:
            assert stream.text == ANSWER and stream.dropped == []
            assert "".join(shown) == marked(ANSWER, check(ANSWER, [SOURCE]))
            assert [s.text for s in stream.checked] == [s.text for s in spans(ANSWER)]
            assert all(stream.text[s.start:s.end] == s.text for s in stream.checked)
            continue
        assert "mkfs" not in stream.text and "dd if=" not in stream.text and "lsblk" not in stream.text
        assert "# cp debian.iso /dev/sdX\n" in stream.text and "\nsync\n" in stream.text
        assert "2.5 GHz" in stream.text  # a value is marked, never dropped
        assert [d["missing"] for d in stream.dropped][:3] == [["lsblk"], ["mkfs.ext4"],
                                                              ["dd", "if=debian.iso", "of=/dev/sdX", "bs=4M"]]


def test_citation_precision_counts_sentences_whose_cited_source_holds_their_spans():
    text = "Copy it with `cp debian.iso /dev/sdX` [1]. Then run `sync` [2]. Nothing to check here [1]."
    assert citations_hold(text, {1: SOURCE, 2: "another source"}) == {"sentences": 2, "held": 1}


def test_review_findings_commands_in_parts_mid_line_sudo_inline_code_and_comments():
    """A maintainer's review: `sudo a && sudo b` flagged b (only the line's first sudo was taken off); a sentence in
    the middle of a line that starts with "sudo" was read as a command line to its end; the stream was cut inside
    inline code; a comment's words were looked up as a command's; "kill" and "reboot" are words, not commands."""
    src = ["# apt-get install grub-efi-amd64\n# apt-get update"]
    assert check("sudo apt-get update && sudo apt-get install grub-efi-amd64", src)[0].found
    answer = ("First do this. sudo apt-get update is what refreshes them. Then run `find . -name x` now.\n"
              "```\n# refresh the package lists\napt-get update  # refreshes the lists\n```\n")
    for strict in (False, True):
        shown = []
        stream = CheckedStream(src, shown.append, strict=strict)
        for i in range(0, len(answer), 4):
            stream.feed(answer[i:i + 4])
        stream.close()
        assert not any("refreshes" in w or "package" in w for s in stream.checked for w in s.missing)
        assert not any(d["text"].startswith("First") or "sudo apt-get update is" in d["text"] for d in stream.dropped)
        assert all(x.count("`") % 2 == 0 for x in shown if not x.startswith("```"))  # never cut inside inline code
    assert [s.text for s in stream.checked if not s.found] == []  # strict: the `find` sentence left out
    assert stream.dropped[0]["missing"] == ["find", "-name", "x"]
    assert spans("You can kill the process and reboot the machine.") == []


def test_a_bold_title_of_a_step_is_no_label():
    """The model writes its own step titles in bold ("**Identify the USB device**: ..."): they were flagged as UI labels
    the sources lack (the Debian grounding run)."""
    answer = '1. **Identify the USB device**: run it. 2. Press **Continue** or choose "Guided".'
    assert [s.text for s in spans(answer)] == ["Continue", "Guided"]


def test_binary_units_written_out_are_numbers_with_their_unit():
    """The hand-checked sample (bench_results/checker-labels) found '1000 gibibytes' unflagged: the word was no unit,
    so the number was never checked. It is the same value and unit as '1000 GiB'."""
    from thread_rag.agent.check import SourceText, check, spans

    assert [(s.text, s.kind) for s in spans("Up to 1000 gibibytes of storage.")] == [("1000 gibibytes", "number")]
    got = check("Up to 1000 gibibytes [1].", SourceText(["The maximum is 1000 GiB."]))
    assert [s.found for s in got] == [True]
    got = check("Up to 1000 gibibytes [1].", SourceText(["Storage is given in gibibytes."]))
    assert [s.found for s in got] == [False]


def test_markdown_escapes_in_the_sources_are_the_characters_they_escape():
    """The fresh hand-checked sample (bench_results/checker-labels/score-2.json): 5 of 6 flags were false, every one
    an identifier or a number the sources hold behind Markdown escapes (AWS's docs write ``ml\\.eia2\\.medium`` and
    ``\\(3\\.6 TB\\)``). A source's ``\\.`` is a ``.``; a span written with the escape is still found too."""
    src = ["| ml\\.eia2\\.medium | 1 | 8 | 2 |", "| c5d\\.24xlarge | 4 x 900 GB \\(3\\.6 TB\\) | NVMe SSD |"]
    found = {s.text: s.found for s in check("Use `ml.eia2.medium`; c5d.24xlarge has 3.6 TB of NVMe SSD.", src)}
    assert found == {"ml.eia2.medium": True, "c5d.24xlarge": True, "3.6 TB": True}, found
    assert all(s.found for s in check("Use `ml\\.eia2\\.medium`.", src))
    assert not any(s.found for s in check("Use `ml.eia2.large` with 7.2 TB.", src))  # and what is not there is not
