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


def test_a_number_without_a_unit_is_checked_where_it_sets_a_port_or_a_setting():
    """Issue item 4: "port 9443" was no span (a bare number), so a wrong port went unmarked. A number given to a port,
    a listener or a setting is looked up with its name beside it; a count in prose ("3 steps") is still no span."""
    text = "Open port 9443 and listen on 8080. MaxConnections 500 is the cap; retries = 42. It takes 3 steps, 2 disks."
    assert [(s.kind, s.text) for s in spans(text)] == [("value", "port 9443"), ("value", "listen on 8080"),
                                                       ("value", "MaxConnections 500"), ("setting", "retries = 42")]
    src = ["The console listens on port 8443. Set MaxConnections 500 in the file; retries = 42 by default."]
    found = {s.text: s.found for s in check(text, src)}
    assert found == {"port 9443": False, "listen on 8080": False, "MaxConnections 500": True,
                     "retries = 42": True}
    assert all(s.found for s in check("Open port 8443, it listens on 8443.", src))
    assert check("A timeout of 30 seconds.", ["The timeout is 30 s."])[0].kind == "number"  # by value, as before
    assert [(s.kind, s.text) for s in spans("Set the cache to 512 MB; size = 10 GB.")] == [("number", "512 MB"),
                                                                                        ("number", "10 GB")]
    # a label is one span (not its port); a name in CamelCase with a dotted number is a version (the aws-docs-qa runs)
    assert [(s.kind, s.text) for s in spans('+ **HTTPS communication over port 443**. It uses port 8443.')] == [
        ("label", "HTTPS communication over port 443"), ("value", "port 8443")]
    assert [(s.kind, s.text) for s in spans("Install TensorFlow 1.11 or later.")] == [
        ("version", "TensorFlow 1.11")]


def test_two_part_versions_are_version_spans():
    """Issue item 4: "Debian 13" and "Python 3.3" were unchecked (a version needed three parts or "version").
    A product's name with a number, or a name with a dotted two-part number; no year, no numbered step or section."""
    text = "Debian 13 ships Python 3.3 (version 3.3) on kernel 6.1 with TLS 1.2."
    assert [(s.kind, s.text) for s in spans(text)] == [
        ("version", "Debian 13"), ("version", "Python 3.3"), ("version", "version 3.3"), ("version", "kernel 6.1"),
        ("version", "TLS 1.2")]
    assert spans("In 2024 we did Step 3.1 and Section 2.4 of Table 1.2, About 2.5 times, Windows 2000.") == []
    assert [s.text for s in spans("It uses TLS 1\\.2 on Python 3\\.6.")] == []  # Markdown's escape: not "TLS 1"
    src = ["Debian GNU/Linux 13 comes with Python 3.3.1 (version 3.3 of the language) and Linux kernel 6.1. Only "
           "TLS 1.2 is accepted."]
    assert all(s.found for s in check(text, src))
    assert [s.found for s in check("Debian 12 has Python 3.4 and kernel 6.10.", src)] == [False, False, False]


def test_the_first_word_of_a_code_line_is_checked_whatever_the_word():
    """Issue item 4: a code block's command is looked up word by word, whatever its name (COMMAND_WORDS, a fixed
    list, only finds command names in prose): an installer the sources never name is flagged. Its first word is a
    command's name: it is not found as a piece of a longer name."""
    src = ["Run the NVIDIA installer with --silent to skip the questions."]
    for answer in ("```\nnvidia-installer --silent\n```\n", "```sh\n$ sudo nvidia-installer --silent\n```\n",
                   "1. Run:\n   ```\n   # nvidia-installer --silent  # as root\n   ```\n"):
        stream = CheckedStream(src)
        stream.feed(answer)
        got = [(s.kind, s.found, s.missing) for s in stream.close().checked]
        assert got == [("command", False, ["nvidia-installer"])], (answer, got)
    # the first word is looked up as a command's name: not found inside a longer name (``apt`` in ``apt-get``)
    src = ["# apt-get install grub-efi\n# nvidia-installer-legacy --silent"]
    assert [s.missing for s in check("```\napt install grub-efi\nnvidia-installer\n```\n", src)] == [["apt"],
                                                                                               ["nvidia-installer"]]
    assert all(s.found for s in check("```\napt-get install grub-efi\nnvidia-installer-legacy\n```\n", src))


def test_set_x_to_y_is_found_only_where_the_sources_give_x_that_value():
    """Issue item 4: "set Port to 9443" checked nothing (9443 is a bare number); now the name and the value are looked
    up together: the value in the same line or sentence of the sources as the name."""
    text = "Set Port to 9443. Then change the listen address to 0.0.0.0 and set the timeout to 30."
    assert [(s.kind, s.text) for s in spans(text)] == [
        ("assignment", "Set Port to 9443"), ("assignment", "change the listen address to 0.0.0.0"),
        ("assignment", "set the timeout to 30")]
    good = ["The default Port is 22; many set it to 9443 for the console.\nListenAddress 0.0.0.0\ntimeout 30s"]
    assert all(s.found for s in check(text, good))
    bad = ["Port 22 is the default.\nThe console answers on 9443.\nThe listen address is set below.\n0.0.0.0 means "
           "all. The timeout\n\nis 30 minutes."]
    assert [s.found for s in check(text, bad)] == [False, False, False]
    assert spans("Set it to 9443, set up the disk to 2, and go to 8.") == []


def test_a_value_given_to_another_key_in_the_sources_is_flagged():
    """Issue item 4: swapped values. The sources hold 8443, but as backup_port's: "port = 8443" is not in them. A
    setting is found only where its name and value stand together; ``=``, ``:`` and a space between them are one."""
    src = ["port = 9443\nbackup_port = 8443\n| timeout | 60 |"]
    for text in ("port = 8443", "port: 8443", "Use port 8443.", "Set `port` = 8443."):
        assert [s.found for s in check(text, src)] == [False], text
    for text in ("port = 9443", "port: 9443", "Use port 9443.", "backup_port = 8443", "timeout: 60", "timeout = 60"):
        assert [s.found for s in check(text, src)] == [True], text


def test_a_long_hostile_answer_is_checked_in_linear_time():
    """The name-and-value patterns hold bounded repeats only: 200 KB built to make them backtrack checks in < 1 s."""
    import time

    pieces = ("set " * 4000, "port " * 4000, "Debian " * 3000, "a_b = " * 3000, "MaxConn" * 3000 + " 5",
              "a_b.c_d." * 3000 + " 5", "aB" * 10000 + " 5", "change the a b c d e f g to " * 700,
              ("set " + "`x` " * 5 + "to ") * 1000, "x" * 20000 + " = 1", "9" * 20000,
              " ".join(f"port = {i}" for i in range(1500)))
    text = " ".join(pieces)[:200_000]
    assert len(text) == 200_000
    src = ["port = 9443 " * 2000 + "Debian GNU/Linux " * 2000 + " ".join(str(i) for i in range(2000))]
    started = time.perf_counter()
    check(text, src)
    assert time.perf_counter() - started < 1.0


def test_a_percentage_two_figures_of_one_source_line_give_is_computed_not_invented():
    """Issue 61: an explanation that works out a growth rate from a quoted table row says so, with the figures it
    came from; a percentage no pair of one line gives stays unsupported (over a page of tables almost any
    percentage is the ratio of some two figures, so only figures of one line are paired)."""
    from types import SimpleNamespace

    from thread_rag.render import answer_notes

    src = ["| Total net sales | 2017: $ 177,866 | 2016: $ 135,987 |\n| Operating income | 2017: 4,106 | 2016: 4,186 |"]
    got = {s.text: s for s in check("Net sales grew 30.8%, operating income fell 1.9% and the margin was 2.3%.", src)}
    assert got["30.8%"].found and got["30.8%"].computed == "30.8% = (177,866 - 135,987) / 135,987"
    assert got["1.9%"].found and got["1.9%"].computed == "1.9% = (4,186 - 4,106) / 4,186"
    assert not got["2.3%"].found and not got["2.3%"].computed  # 4,106 / 177,866: two lines, not paired
    assert not check("Sales grew 30.7%.", src)[0].found  # to the decimals it is written with
    assert not check("Sales grew 31%.", src)[0].found  # a whole percentage is too easily some pair's
    row = ["| Revenue | Q1: 1,204 | Q2: 1,118 | Q3: 1,310 | Q4: 1,402 | Q5: 1,290 | Q6: 1,377 | Q7: 1,455 | Q8: 1,501 |"]
    invented = [f"{n}.{d}%" for n in range(1, 100) for d in (0, 5) if not check(f"It rose {n}.{d}%.", row)[0].found]
    assert len(invented) >= 190  # of 198 made-up percentages, at most 8 pass for worked out from one 8-figure row
    assert check("Unit sales rose 2017%.", src)[0].found is False  # years are no figures
    notes = answer_notes(SimpleNamespace(refused=False, computed=[got["30.8%"].computed]),
                         SimpleNamespace(MAX_ANSWER_TOKENS=1, weak_match=lambda m: False))
    assert notes == ["(worked out from the sources' figures, not printed in them: "
                     "30.8% = (177,866 - 135,987) / 135,987)"]
