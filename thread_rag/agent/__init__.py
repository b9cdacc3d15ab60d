"""The agent: six StructuredTools, a constrained routing loop, a deterministic jump-and-walk
fallback, grounded answers with citations, and scripted sessions."""
