"""What one message gets back: the answer, its citations, and everything a door shows or a benchmark scores."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Citation:
    chunk_id: str
    doc_id: str
    doc_name: str
    pages: str
    inferred: bool = False          # matched to a chunk by similarity after the answer (not the model's)
    how: str = "written"            # written (in the answer) | sources_call (constrained follow-up) | matched
    source: int | None = None       # the source number the model cited

    def __post_init__(self) -> None:
        if self.inferred:
            self.how = "matched"


@dataclass
class Answer:
    question: str
    standalone_question: str
    answer: str
    refused: bool
    citations: list
    invalid_citations: list
    tool_trace: list
    backend: str
    timings: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    interrupted: bool = False
    cut: bool = False  # the answer stopped at a token limit (MAX_ANSWER_TOKENS, or the context)
    relevance: float | None = None  # best cosine between the question and a chunk that was read
    match: float | None = None  # fast path: the entry chunks' best cross-encoder probability (None without stage 3)
    unmentioned: list = field(default_factory=list)  # fast path: the question's rare words no indexed chunk holds
    sources: list = field(default_factory=list)  # the numbered sources the model read (fast path)
    quote: list = field(default_factory=list)    # the quote: the lines of the sources that answer (QuoteLine dicts)
    quote_best: float | None = None              # the best line's cross-encoder logit (the evidence floor's score)
    quote_cut: str = ""                          # what of a quoted procedure the word budget left out
    read_lines: list = field(default_factory=list)  # what the explanation reads (EXPLAIN_FROM = quote): the quote, then
                                                 # the next-best lines up to EXPLAIN_WORDS
    related: bool = False                        # refused because no line answers: the quote shows related lines
    checked: int = 0                             # spans of the explanation looked up in the sources
    unsupported: list = field(default_factory=list)  # ... of those, the ones the sources do not hold
    computed: list = field(default_factory=list)  # percentages two figures of one source line give ("30.8% = ...")
    dropped: list = field(default_factory=list)  # sentences left out for them (UNSUPPORTED = "drop")
    citations_held: dict = field(default_factory=dict)  # sentences citing [n] with spans, and those [n] holds
    note: str = ""                               # why part of the answer is missing (no quote, no explanation)
    outcome: dict = field(default_factory=dict)  # answered | partly | not_answered, its evidence and its line
                                                 # (``agent/outcome.py``)
    llm_calls: int = 0
    mode: str = "fast"
