"""Example messages for each thing the chat can do, in the form the recogniser compares a message with.

A message's own arguments are replaced before it is compared: a path by ``FILE`` and a document id by ``DOC``
(``intent.masked``), so "remove DOC2" and "drop DOC11" read alike and a file's name says nothing about the
request. The requests in ``tests/data/requests.json`` were written apart from these (by another hand, without
seeing this file) and are what the recogniser is judged on; ``tests/test_intent.py`` checks that none of them is
one of these examples.
"""

EXAMPLES = {
    "list_available_documents": [
        "list documents", "list the docs", "show my files", "what is indexed",
        "which manuals are loaded", "what's in the library", "documents?",
        "what can I ask about, which documents are there", "display the indexed files",
        "do I have any documents indexed", "give me the list of documents", "enumerate the indexed documents",
        "what do you have in your index", "which files have been added", "tell me what documents you know",
        "catalog", "show the catalogue of documents", "which sources can you answer from", "what have you got loaded", "show which documents I can query",
    ],
    "index_new_document": [
        "index FILE", "please index FILE", "ingest FILE", "load FILE",
        "import FILE into the index", "can you index FILE for me", "read FILE in", "add this file: FILE",
        "index the folder FILE", "add everything in FILE", "put FILE in the index", "learn FILE",
        "index these notes FILE", "make FILE searchable", "include FILE in my documents", "take in FILE",
        "index the manual at FILE", "add the pdf FILE please", "could you add FILE",
        "add a new document", "index a file for me",
    ],
    "remove_document": [
        "remove DOC", "delete DOC", "drop DOC from the library", "forget DOC", "get rid of DOC",
        "please delete the document DOC", "take DOC out of the index", "unindex DOC", "erase DOC",
        "remove the user guide from my documents", "delete the old manual", "I no longer need DOC, remove it",
        "throw away the release notes document", "purge DOC", "remove that document from the index",
        "can you delete the handbook from the library", "discard DOC", "uninstall the document DOC",
        "remove a document",
    ],
    "pre_heat_summaries": [
        "pre-heat", "preheat the summaries", "pre-heat DOC", "warm up DOC",
        "precompute summaries", "summarise every chunk ahead of time", "prepare the summaries now",
        "build the summary cache", "generate summaries for DOC in advance", "cache summaries for all documents", "make the summaries ready before I ask", "run the summarizer on DOC",
        "fill the summary cache", "create chunk summaries for the whole library",
    ],
    "nested_retrieve": [
        "give me 3 separate passages about backups", "find 5 non-overlapping sections on networking",
        "show several distinct passages about partitioning", "get me different excerpts about the firewall",
        "retrieve 4 separate parts that mention ssh keys", "nested passages about raid",
        "list a few separate places where the manual talks about updates",
        "several independent excerpts on encryption from DOC", "pull out non-overlapping passages on logging",
        "3 distinct sections about memory requirements", "show me separate passages, not one, about proxies",
        "give me a handful of excerpts about timeouts", "find every separate passage about the boot loader",
        "show 2 passages on user accounts that don't overlap",
    ],
    "compare_documents": [
        "compare DOC and DOC", "what changed between DOC and DOC", "diff DOC DOC",
        "how does DOC differ from DOC", "differences between DOC and DOC about networking",
        "compare the two versions of the guide", "compare the old and the new manual on partitioning",
        "what is new in DOC compared with DOC", "show the changes from DOC to DOC",
        "compare the 2019 guide with the 2023 guide", "how do the two manuals differ on the boot loader",
        "put DOC and DOC side by side", "what did they change in the new version of the handbook",
        "what's different in DOC versus DOC regarding security",
    ],
    "show_settings": [
        "settings", "show the settings", "show me the configuration",
        "what embedder is configured", "print the config", "what are my current settings",
        "which llm is running", "what options are set", "show config", "which reranker do you use",
        "what is the chunk size setting", "where is my data directory", "what backend are you on", "what's the current configuration", "tell me which language model runs", "show the assistant's options",
    ],
    "show_stats": [
        "stats", "show statistics", "library stats", "how many chunks are indexed",
        "how big is the index", "how many documents and chunks do I have", "show the store size",
        "give me numbers about the library", "how large is the vector store", "index statistics please",
        "count the chunks", "how much is stored", "storage usage of the index", "how many pages have been indexed", "size of the library on disk",
    ],
    "help": [
        "help", "show me the commands",
        "help me get started", "what are you", "how does this assistant work", "what can I ask you to do",
        "list your commands", "I'm lost, what can I type here", "what features do you have", "usage", "?", "how should I talk to you", "what kinds of requests do you understand", "give me a quick tour",
    ],
    # questions about the documents' content, many with the words of an action in them
    "question": [
        "how do I install the system", "what are the requirements", "how do I remove a package", "how can I add a user", "what does the index command of the tool do",
        "how do I list the files in a directory", "how do I compare two files with diff",
        "what settings does the server read", "show me how to configure the network",
        "how do I change the default port", "what is the warranty period", "where are the logs written",
        "how do I reset the password", "what happens when I delete my account", "how do I load a kernel module",
        "how do I import a certificate", "how do I add a disk to the volume group", "which files do I need to edit",
        "how many users can the license cover", "how large must the boot partition be",
        "what is the default configuration of the firewall", "how do I update the firmware",
        "can I remove the battery", "what does the manual say about backups", "how do I drop a database table",
        "how do I forget a wifi network", "how do I show hidden files", "how do I get help during installation",
        "what commands does the rescue mode offer", "how do I uninstall the application",
        "what changed in this release", "what are the differences between the installation methods",
        "how do I index a table in the database", "what is the summary of the agreement",
        "which documents must the tenant provide", "how do I preheat the oven", "how do I warm up the engine",
        "how do I clear the cache", "what statistics does the report show", "how do I display the settings menu",
        "what does the help key do", "when does the contract end", "who is responsible for repairs",
        "why does the installer fail", "what is the maximum file size", "is the service supported on arm64",
        "how do I merge two partitions", "explain the boot process", "describe the backup procedure",
        "what does DOC say about encryption", "in DOC, how do I set up raid", "how do I mount FILE",
        "what does the file FILE contain", "how do I set the hostname", "steps to configure ssh", "summarise the chapter on maintenance", "give me a summary of the cancellation terms",
        "give me the command to check the disk", "show the default values for the timeouts",
        "list the steps to replace the filter", "list the error codes and their meaning",
        "compare the two pricing plans in the contract", "compare raid 1 and raid 5 as the guide explains them",
        "show the table of supported printers", "list the supported operating systems",
        "give me the torque values for the wheel nuts", "show the keyboard shortcuts",
        "summarize the warranty exclusions", "list all parameters of the config file",
        "show the settings page of the router app", "show the section about firewall rules",
        "find the paragraph about overtime pay", "print the steps for a factory reset",
        "display the maintenance intervals", "give the default password of the admin account",
        "add a printer in the control panel",
    ],
}
