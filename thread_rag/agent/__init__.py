"""The agent: requests read from what a message means (``intent``, ``actions``), one answer path for questions
(``loop``: search, walk, quote, outcome, the checked explanation), the tool layer (``tools``), scripted sessions."""
