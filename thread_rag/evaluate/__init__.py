"""``thread-rag eval``: a test set made from the user's own library, scored."""
