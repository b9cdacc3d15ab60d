"""Compare two versions of a document step by step (issue 17).

- :mod:`.align`: monotone alignment of two chunk threads (Hirschberg, linear memory) on vectors and headings;
- :mod:`.labels`: same / changed / only-in-A / only-in-B from the texts (coverage in a window), word diffs;
- :mod:`.run`: one comparison from two :class:`~.run.Side` objects (chunks + vectors) to JSON-able rows;
- :mod:`.explain`: optional one-sentence LLM explanation per changed pair, cached;
- :mod:`.view`: the side-by-side terminal view.

Nothing here imports the Engine: ``thread_rag.tools.compare_documents`` reads the store and passes data in.
"""
