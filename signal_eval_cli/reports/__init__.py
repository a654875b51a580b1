"""Reports of results: console tables, JSON, Markdown, JUnit."""
